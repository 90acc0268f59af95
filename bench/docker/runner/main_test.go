package main

import (
	"math"
	"testing"
	"time"
)

// TestMeasure: the windows of the warm-up and the last partial window are
// left out; rates come from the counters interpolated at the measured
// span's bounds.
func TestMeasure(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	cpu := 0.05 // target CPU seconds per window
	win := func(i int, start, end float64, reqs int64) windowLine {
		return windowLine{Index: &i, Start: sec(start), End: sec(end), Requests: reqs,
			Probes: &struct {
				CPUSeconds *float64 `json:"cpu_seconds"`
			}{&cpu}}
	}
	ws := []windowLine{
		win(0, 0, 5, 100),    // warm-up
		win(1, 5, 10, 900),   // measured
		win(2, 10, 15, 1100), // measured
		win(3, 15, 17, 400),  // partial: left out
	}
	// Counters grow linearly: the driver at 0.5 cores, docker-proxy at 0.1,
	// the machine busy at 1.5 of 2 cores; samples every 2 s, so 5 and 15
	// are interpolated.
	var samples []counters
	for s := 0.0; s <= 18; s += 2 {
		samples = append(samples, counters{at: sec(s), driver: 0.5 * s, proxyOurs: 0.1 * s, machineBusy: 1.5 * s, machineTotal: 2 * s})
	}
	var r result
	measure(&r, config{warmup: 5 * time.Second, window: 5 * time.Second}, ws, samples)
	if r.Err != "" {
		t.Fatal(r.Err)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	if r.Windows != 2 || r.Requests != 2000 {
		t.Fatalf("measured %d windows, %d requests; want 2, 2000", r.Windows, r.Requests)
	}
	near("span", r.Span, 10)
	near("req/s", r.RPS, 200)
	near("target µs/req", r.TargetUs, 0.1*1e6/2000)
	near("driver cores", r.Driver, 0.5)
	near("driver µs/req", r.DriverUs, 0.5*1e6/200)
	near("docker-proxy cores", r.ProxyOurs, 0.1)
	near("machine cores", r.MachineCores, 2)
	near("other", r.Other, 1.5-0.01-0.5-0.1)
}

// TestAtOutsideSamples: a time the samples do not cover is refused.
func TestAtOutsideSamples(t *testing.T) {
	t0 := time.Now()
	s := []counters{{at: t0}, {at: t0.Add(time.Second)}}
	if _, ok := at(s, t0.Add(-time.Millisecond)); ok {
		t.Error("a time before the first sample was interpolated")
	}
	if _, ok := at(s, t0.Add(2*time.Second)); ok {
		t.Error("a time after the last sample was interpolated")
	}
}
