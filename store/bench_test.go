package store_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// realisticWindow has 10 ops, each with a histogram of 2,000 log-normal
// latencies around 2 ms, and an overall histogram of all of them: the shape of
// a 30 s window at a few hundred requests per second.
func realisticWindow(b testing.TB, runID string, idx int) window.Window {
	rng := rand.New(rand.NewPCG(1, uint64(idx)))
	all := window.NewHistogram()
	w := window.Window{
		RunID: runID, Index: idx,
		Start: t0.Add(time.Duration(idx) * 30 * time.Second), End: t0.Add(time.Duration(idx+1) * 30 * time.Second),
		Ops: map[string]window.OpStats{},
	}
	for op := 0; op < 10; op++ {
		h := window.NewHistogram()
		for i := 0; i < 2000; i++ {
			us := int64(2000 * math.Exp(rng.NormFloat64()*0.8))
			window.Record(h, us)
			window.Record(all, us)
		}
		enc, err := window.EncodeHistogram(h)
		if err != nil {
			b.Fatal(err)
		}
		w.Ops[fmt.Sprintf("op%02d", op)] = window.OpStats{Requests: 2000, OK: 2000, RPS: 2000.0 / 30, LatencyMs: window.LatencyOf(h), Histogram: enc}
	}
	enc, err := window.EncodeHistogram(all)
	if err != nil {
		b.Fatal(err)
	}
	w.Requests, w.OK, w.RPS, w.LatencyMs, w.Histogram = 20000, 20000, 20000.0/30, window.LatencyOf(all), enc
	return w
}

func benchStore(b *testing.B) store.Store {
	s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.PutRun(context.Background(), newRun("r1", t0)); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPutWindow measures one closed window's commit on SQLite (WAL,
// synchronous=FULL): one upsert of a 10-op window with real histograms.
func BenchmarkPutWindow(b *testing.B) {
	s := benchStore(b)
	w := realisticWindow(b, "r1", 0)
	size := len(w.Histogram)
	for _, o := range w.Ops {
		size += len(o.Histogram)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		w.Index = i % 1440
		if err := s.PutWindow(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(size), "histogram-bytes/window")
}

// cpuTime is the process's user+system CPU time. On a shared machine it is
// a steadier figure than wall time, which includes waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWindows1440 reads back a day of 1-minute windows (or 12 hours of
// 30 s ones) with their histograms, as a run report or chart does.
func BenchmarkWindows1440(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	w := realisticWindow(b, "r1", 0)
	for i := 0; i < 1440; i++ {
		w.Index = i
		if err := s.PutWindow(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op") }()
	for i := 0; i < b.N; i++ {
		ws, err := s.Windows(ctx, "r1", store.AllWindows)
		if err != nil {
			b.Fatal(err)
		}
		if len(ws) != 1440 {
			b.Fatalf("%d windows, want 1440", len(ws))
		}
	}
}
