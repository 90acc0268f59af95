package driver

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

func TestRecorderCollect(t *testing.T) {
	r := newRecorder([]string{"get", "create", "login"}, 3)
	// get: 100 ok at 1..100 ms spread over the shards, 2 5xx at 200 ms;
	// create: 1 refused (no latency) and 3 skipped; login: nothing.
	for i := 1; i <= 100; i++ {
		r.record(i%3, 0, window.OK, time.Duration(i)*time.Millisecond, true)
	}
	r.record(0, 0, window.Status5xx, 200*time.Millisecond, true)
	r.record(1, 0, window.Status5xx, 200*time.Millisecond, true)
	r.record(2, 1, window.Refused, time.Millisecond, false)
	for range 3 {
		r.skip(1, 1)
	}
	var w window.Window
	if err := r.collect(&w); err != nil {
		t.Fatal(err)
	}
	if w.Requests != 103 || w.OK != 100 || w.Errors.Status5xx != 2 || w.Errors.Refused != 1 || w.Skipped != 3 {
		t.Errorf("window counts %+v", w)
	}
	get := w.Ops["get"]
	if get.Requests != 102 || get.OK != 100 || get.Errors.Status5xx != 2 {
		t.Errorf("get %+v", get)
	}
	tests := []struct {
		name      string
		got, want float64
	}{
		{"get p50", get.LatencyMs.P50, 51},
		{"get p90", get.LatencyMs.P90, 92},
		{"get max", get.LatencyMs.Max, 200},
		{"window p50", w.LatencyMs.P50, 51},
	}
	for _, tt := range tests {
		if d := tt.got - tt.want; d < -0.2 || d > 0.2 {
			t.Errorf("%s = %.3f ms, want %.1f", tt.name, tt.got, tt.want)
		}
	}
	create := w.Ops["create"]
	if create.Requests != 1 || create.Errors.Refused != 1 || create.Skipped != 3 || create.LatencyMs.Max != 0 {
		t.Errorf("create %+v", create)
	}
	if _, ok := w.Ops["login"]; ok {
		t.Error("an op with no requests and no skips is in the window")
	}
	h, err := window.DecodeHistogram(w.Histogram)
	if err != nil || h.TotalCount() != 102 {
		t.Errorf("window histogram: %v, %d latencies, want 102", err, h.TotalCount())
	}

	// The next window starts empty.
	var w2 window.Window
	if err := r.collect(&w2); err != nil {
		t.Fatal(err)
	}
	if w2.Requests != 0 || len(w2.Ops) != 0 || w2.LatencyMs.Max != 0 {
		t.Errorf("second window not empty: %+v", w2)
	}
}

func TestRecorderSharedName(t *testing.T) {
	// A setup step and an op with the same name are reported as one op.
	r := newRecorder([]string{"login", "login"}, 1)
	r.record(0, 0, window.OK, time.Millisecond, true)
	r.record(0, 1, window.Status4xx, 3*time.Millisecond, true)
	var w window.Window
	if err := r.collect(&w); err != nil {
		t.Fatal(err)
	}
	got := w.Ops["login"]
	if got.Requests != 2 || got.OK != 1 || got.Errors.Status4xx != 1 || got.LatencyMs.Max < 2.9 {
		t.Errorf("login %+v", got)
	}
}

func TestRecorderClamps(t *testing.T) {
	r := newRecorder([]string{"op"}, 1)
	r.record(0, 0, window.Timeout, 2*time.Minute, true)
	r.record(0, 0, window.OK, 0, true)
	var w window.Window
	if err := r.collect(&w); err != nil {
		t.Fatal(err)
	}
	if got := w.LatencyMs.Max; got < 59_900 || got > 60_100 {
		t.Errorf("max %.0f ms, want the 60 s ceiling", got)
	}
}

// BenchmarkRecord records one latency, as a VU does per request.
func BenchmarkRecord(b *testing.B) {
	r := newRecorder([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 1024)
	for i := range lat {
		lat[i] = time.Duration(200+rng.ExpFloat64()*800) * time.Microsecond
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.record(i&3, i%10, window.OK, lat[i&1023], true)
		i++
	}
}

// BenchmarkCloseWindow closes a window of 16 shards × 10 ops, each holding
// 1,000 latencies (160,000 requests), the recorder's work at each boundary:
// swap, merge, percentiles, encode.
func BenchmarkCloseWindow(b *testing.B) {
	const shards, ops, perOp = 16, 10, 1000
	names := make([]string, ops)
	for i := range names {
		names[i] = fmt.Sprintf("op%d", i)
	}
	r := newRecorder(names, shards)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, shards*ops*perOp)
	for i := range lat {
		lat[i] = time.Duration(200+rng.ExpFloat64()*2000) * time.Microsecond
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		k := 0
		for s := range shards {
			for o := range ops {
				for range perOp {
					r.record(s, o, window.OK, lat[k], true)
					k++
				}
			}
		}
		b.StartTimer()
		var w window.Window
		if err := r.collect(&w); err != nil {
			b.Fatal(err)
		}
		if w.Requests != shards*ops*perOp {
			b.Fatalf("requests %d", w.Requests)
		}
	}
}
