package probes

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestParseGoCounters reads the runtime counters from real pages: one
// written by prometheus/client_golang v1.21's default registry (no GC CPU,
// no forced-GC count) and one by VictoriaMetrics/metrics v1.45 (the demo
// target's, after 400 requests with DEMO_ALLOC_BYTES=65536).
func TestParseGoCounters(t *testing.T) {
	tests := []struct {
		file string
		want GoCounters
	}{
		{"metrics-client_golang.txt", GoCounters{AllocBytes: 8.6924e+06, GCCycles: 3, HasAllocBytes: true, HasGCCycles: true}},
		{"metrics-vmmetrics.txt", GoCounters{AllocBytes: 28296928, GCCycles: 8, GCCPUSeconds: 0.039519591,
			HasAllocBytes: true, HasGCCycles: true, HasGCCPU: true, HasForced: true}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			body, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := ParseGoCounters(body); got != tt.want {
				t.Errorf("ParseGoCounters = %+v, want %+v", got, tt.want)
			}
		})
	}

	pages := []struct {
		name, page string
		want       GoCounters
	}{
		{"runtime/metrics names only", "go_gc_cycles_total_gc_cycles_total 7\ngo_gc_heap_allocs_bytes_total 123\n",
			GoCounters{GCCycles: 7, HasGCCycles: true}},
		{"forced cycles left out", "go_gc_duration_seconds_count 9\ngo_gc_forced_count 4\n",
			GoCounters{GCCycles: 5, HasGCCycles: true, HasForced: true}},
		{"not a Go page", "process_cpu_seconds_total 3\nnode_heap_bytes 5\n", GoCounters{}},
		{"NaN and negative", "go_memstats_alloc_bytes_total NaN\ngo_gc_cpu_seconds_total -1\n", GoCounters{}},
	}
	for _, tt := range pages {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseGoCounters([]byte(tt.page)); got != tt.want {
				t.Errorf("ParseGoCounters(%q) = %+v, want %+v", tt.page, got, tt.want)
			}
		})
	}
}

func TestGoCountersDelta(t *testing.T) {
	prev := GoCounters{AllocBytes: 1000, GCCycles: 10, GCCPUSeconds: 0.5, HasAllocBytes: true, HasGCCycles: true, HasGCCPU: true}
	cur := GoCounters{AllocBytes: 201000, GCCycles: 14, GCCPUSeconds: 0.75, HasAllocBytes: true, HasGCCycles: true, HasGCCPU: true}

	var p window.Probes
	if !GoCountersDelta(&p, prev, cur, 400) {
		t.Fatal("consecutive readings refused")
	}
	if *p.AllocBytes != 200000 || *p.AllocBytesPerRequest != 500 || *p.GCCycles != 4 || *p.GCPer1kRequests != 10 || *p.GCCPUSeconds != 0.25 {
		t.Errorf("delta %+v", p)
	}

	var idle window.Probes
	GoCountersDelta(&idle, prev, cur, 0)
	if idle.AllocBytes == nil || idle.AllocBytesPerRequest != nil || idle.GCPer1kRequests != nil {
		t.Errorf("a window without requests: %+v, want the counts without per-request figures", idle)
	}

	restarted := cur
	restarted.AllocBytes = 500 // a new process
	var r window.Probes
	if GoCountersDelta(&r, cur, restarted, 400) || r.AllocBytes != nil || r.GCCycles != nil || r.GCCPUSeconds != nil {
		t.Errorf("across a restart: %+v, want no delta", r)
	}

	cg := GoCounters{AllocBytes: 3000, GCCycles: 11, HasAllocBytes: true, HasGCCycles: true} // client_golang: no GC CPU
	var c window.Probes
	GoCountersDelta(&c, prev, cg, 10)
	if c.GCCPUSeconds != nil || *c.AllocBytes != 2000 {
		t.Errorf("a page without GC CPU: %+v, want bytes and cycles only", c)
	}
	GCCPUShare(&c)
	if c.GCCPUShare != nil {
		t.Errorf("GC CPU share %v without GC CPU", *c.GCCPUShare)
	}

	f := func(v float64) *float64 { return &v }
	share := window.Probes{GCCPUSeconds: f(0.25), CPUSeconds: f(2)}
	GCCPUShare(&share)
	if share.GCCPUShare == nil || *share.GCCPUShare != 0.125 {
		t.Errorf("share = %v, want 0.125", share.GCCPUShare)
	}
	noCPU := window.Probes{GCCPUSeconds: f(0.25), CPUSeconds: f(0)}
	if GCCPUShare(&noCPU); noCPU.GCCPUShare != nil {
		t.Error("a share of no CPU")
	}
}

// TestSampleGoCounters: each window gets the counters' deltas since the
// previous window's scrape; a restart (counters down) and a failed scrape
// each cost one window, never a delta across them.
func TestSampleGoCounters(t *testing.T) {
	type page struct {
		alloc, gcs int64
		gcCPU      float64
		broken     bool
	}
	pages := []page{
		{alloc: 1000, gcs: 10, gcCPU: 0.1}, // Start
		{alloc: 101000, gcs: 12, gcCPU: 0.3},
		{alloc: 5000, gcs: 1, gcCPU: 0.01}, // restarted
		{alloc: 55000, gcs: 2, gcCPU: 0.05},
		{broken: true},
		{alloc: 65000, gcs: 3, gcCPU: 0.06},
		{alloc: 75000, gcs: 3, gcCPU: 0.07},
	}
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := pages[min(int(scrapes.Add(1))-1, len(pages)-1)]
		if p.broken {
			http.Error(w, "broken", 500)
			return
		}
		fmt.Fprintf(w, "go_gc_heap_live_bytes 1\ngo_memstats_alloc_bytes_total %d\ngo_gc_duration_seconds_count %d\ngo_gc_cpu_seconds_total %g\n", p.alloc, p.gcs, p.gcCPU)
	}))
	defer srv.Close()
	s := startSampler(t, Config{TargetURL: srv.URL, Spec: scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}},
		Window: time.Second, Logger: slog.New(slog.DiscardHandler)})

	type want struct {
		requests   int64
		alloc      any // nil: unset
		perRequest any
		gcs        any
	}
	wants := []want{
		{100, int64(100000), 1000.0, int64(2)},
		{100, nil, nil, nil},             // restarted
		{0, int64(50000), nil, int64(1)}, // no requests: no per-request figure
		{100, nil, nil, nil},             // the scrape failed
		{100, nil, nil, nil},             // the previous window was not read
		{50, int64(10000), 200.0, int64(0)},
	}
	for i, wt := range wants {
		w := win(i, wt.requests)
		s.Sample(context.Background(), w)
		p := w.Probes
		if got := deref(p.AllocBytes); got != wt.alloc {
			t.Errorf("window %d: alloc bytes %v, want %v", i, got, wt.alloc)
		}
		if got := deref(p.AllocBytesPerRequest); got != wt.perRequest {
			t.Errorf("window %d: alloc bytes per request %v, want %v", i, got, wt.perRequest)
		}
		if got := deref(p.GCCycles); got != wt.gcs {
			t.Errorf("window %d: GC cycles %v, want %v", i, got, wt.gcs)
		}
		if (p.GCCPUSeconds == nil) != (wt.alloc == nil) {
			t.Errorf("window %d: GC CPU %v, want it set with the others", i, deref(p.GCCPUSeconds))
		}
		if p.GCCPUShare != nil {
			t.Errorf("window %d: a GC CPU share without the process probe", i)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// BenchmarkParseGoCounters reads the counters from the demo target's real
// page, once per window in a soak.
func BenchmarkParseGoCounters(b *testing.B) {
	body, err := os.ReadFile("testdata/metrics-vmmetrics.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if c := ParseGoCounters(body); !c.HasAllocBytes {
			b.Fatal("no counters")
		}
	}
}
