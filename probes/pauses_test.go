package probes

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

const pausePage = `# HELP go_gc_pauses_seconds Stop-the-world GC pauses.
# TYPE go_gc_pauses_seconds histogram
go_gc_pauses_seconds_bucket{le="0"} 0
go_gc_pauses_seconds_bucket{le="0.0001"} %d
go_gc_pauses_seconds_bucket{le="0.001"} %d
go_gc_pauses_seconds_bucket{le="0.01"} %d
go_gc_pauses_seconds_bucket{le="+Inf"} %d
go_gc_pauses_seconds_sum 0.5
go_gc_pauses_seconds_count %d
go_gc_heap_live_bytes 1234
`

func TestParseHistogram(t *testing.T) {
	body := []byte(`go_gc_pauses_seconds_bucket{le="0.001"} 3
go_gc_pauses_seconds_bucket{a="x",le="0.001"} 2
go_gc_pauses_seconds_bucket{le="+Inf"} 7
go_gc_pauses_seconds_bucket{le="bad"} 7
go_gc_pauses_seconds_count 7
other_bucket{le="1"} 99
`)
	b, ok := ParseHistogram(body, GCPauseMetric)
	if !ok || len(b) != 2 {
		t.Fatalf("ParseHistogram = %v, %v; want 2 buckets", b, ok)
	}
	if b[0].LE != 0.001 || b[0].Count != 5 || !math.IsInf(b[1].LE, 1) || b[1].Count != 7 {
		t.Errorf("buckets %v, want [{0.001 5} {+Inf 7}] (label sets summed, sorted)", b)
	}
	if _, ok := ParseHistogram([]byte("go_gc_heap_live_bytes 1\n"), GCPauseMetric); ok {
		t.Error("a page without the histogram: ok = true")
	}
}

func TestPausesDelta(t *testing.T) {
	bk := func(c ...float64) []Bucket {
		les := []float64{0, 0.0001, 0.001, 0.01, math.Inf(1)}
		out := make([]Bucket, len(c))
		for i := range c {
			out[i] = Bucket{les[i], c[i]}
		}
		return out
	}
	prev := bk(0, 10, 20, 20, 20)
	// 100 new pauses: 98 in (0, 0.1 ms], 1 in (0.1, 1 ms], 1 in (1, 10 ms].
	cur := bk(0, 108, 119, 120, 120)
	p := PausesDelta(prev, cur)
	if p == nil || p.Count != 100 {
		t.Fatalf("PausesDelta = %+v, want 100 pauses", p)
	}
	if p.P50Ms <= 0 || p.P50Ms > 0.1 {
		t.Errorf("p50 %v ms, want within the first bucket (0, 0.1]", p.P50Ms)
	}
	if p.P99Ms <= 0.1 || p.P99Ms > 1 {
		t.Errorf("p99 %v ms, want within (0.1, 1]", p.P99Ms)
	}
	if p.MaxMs != 10 {
		t.Errorf("max %v ms, want 10 (the upper bound of the highest bucket that gained)", p.MaxMs)
	}
	if p := PausesDelta(cur, cur); p == nil || p.Count != 0 || p.P99Ms != 0 {
		t.Errorf("no new pauses: %+v, want a zero summary", p)
	}
	if p := PausesDelta(cur, prev); p != nil {
		t.Errorf("counts went down (a restart): %+v, want nil", p)
	}
	if p := PausesDelta(prev, cur[:3]); p != nil {
		t.Errorf("different buckets: %+v, want nil", p)
	}
	// A pause past the last finite bound: max is that bound.
	if p := PausesDelta(bk(0, 0, 0, 0, 0), bk(0, 0, 0, 0, 1)); p == nil || p.MaxMs != 10 || p.P99Ms != 10 {
		t.Errorf("a pause in +Inf: %+v, want max and p99 at the last finite bound 10 ms", p)
	}
}

// TestSampleGCPauses: the heap metric's scrape also reads the page's GC
// pause histogram, and each window gets the pauses since the previous one.
func TestSampleGCPauses(t *testing.T) {
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := int(scrapes.Add(1)) // scrape k: 10k pauses, 8k under 0.1 ms, 9k under 1 ms, all under 10 ms
		fmt.Fprintf(w, pausePage, 8*k, 9*k, 10*k, 10*k, 10*k)
	}))
	defer srv.Close()
	s := startSampler(t, Config{TargetURL: srv.URL, Spec: scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}}, Window: time.Second})
	for i := range 3 {
		w := &window.Window{Index: i, End: time.Now(), Requests: 10}
		s.Sample(context.Background(), w)
		p := w.Probes.GCPause
		if p == nil || p.Count != 10 || p.P50Ms <= 0 || p.P50Ms > 0.1 || p.MaxMs != 10 {
			t.Fatalf("window %d: GC pauses %+v, want 10 pauses, p50 under 0.1 ms, max 10 ms (problems %v)", i, p, s.Problems())
		}
	}
}
