package probes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/pgtest"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// BenchmarkSample measures one window's Sample with the local probes on: the
// process tree (this process), the heap metric and a GC hook every window (an
// in-process fake target), the database (a private PostgreSQL with two
// tables) and, in "all", the inspector of a real node process (a forced GC
// per window).
func BenchmarkSample(b *testing.B) {
	f := newFakeTarget(b)
	dsn := pgtest.Start(b)
	newPGLoad(b, dsn, 1000, 50).requests(10)
	heap := &scenarios.Heap{Metric: &scenarios.HeapMetric{}, GCHook: &scenarios.GCHook{Every: 1}}
	cases := []struct {
		name string
		cfg  func() Config
	}{
		{"process", func() Config { return Config{PID: os.Getpid()} }},
		{"process+heap", func() Config {
			return Config{PID: os.Getpid(), TargetURL: f.URL, Spec: scenarios.Probes{Heap: heap}}
		}},
		{"process+heap+database", func() Config {
			return Config{PID: os.Getpid(), TargetURL: f.URL, DatabaseURL: dsn, Spec: scenarios.Probes{Heap: heap}}
		}},
		{"all", func() Config {
			nt := startNodeTarget(b, 0)
			h := *heap
			h.Inspector = &scenarios.Inspector{Port: nt.InspectorPort}
			return Config{PID: os.Getpid(), TargetURL: f.URL, DatabaseURL: dsn, Spec: scenarios.Probes{Heap: &h}}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cfg := c.cfg()
			cfg.Logger = slog.New(slog.DiscardHandler)
			cfg.DatabaseDelay = -1
			cfg.MaxSampleTime = 5 * time.Second
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			s.Start(ctx)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				w := window.Window{Index: i, End: time.Now(), Requests: 1000}
				s.Sample(ctx, &w)
				i++
			}
			if ps := s.Problems(); len(ps) > 0 {
				b.Fatalf("problems: %v", ps)
			}
			b.ReportMetric(float64(i), "windows")
		})
	}
}

func ExampleParseMetric() {
	page := []byte(`# TYPE nodejs_heap_space_size_used_bytes gauge
nodejs_heap_space_size_used_bytes{space="old"} 3.1e+07
nodejs_heap_space_size_used_bytes{space="new"} 1.5e+06
`)
	sum, series, err := ParseMetric(page, "nodejs_heap_space_size_used_bytes")
	fmt.Println(sum, series, err)
	// Output: 3.25e+07 2 <nil>
}
