package driver

import (
	"math"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
)

func stage(d time.Duration, target float64) scenarios.Stage {
	return scenarios.Stage{Duration: scenarios.Duration(d), Target: target}
}

func TestRampAt(t *testing.T) {
	r := newRamp(2, []scenarios.Stage{stage(10*time.Second, 12), stage(0, 20), stage(5*time.Second, 0)})
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{0, 2},
		{5 * time.Second, 7},
		{10 * time.Second, 20}, // the zero-length stage is a step
		{12500 * time.Millisecond, 10},
		{15 * time.Second, 0},
		{time.Hour, 0},
	}
	for _, tt := range tests {
		if got := r.at(tt.at); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("at(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
	if got := r.max(); got != 20 {
		t.Errorf("max = %v, want 20", got)
	}
	if got := r.staticAfter(); got != 15*time.Second {
		t.Errorf("staticAfter = %v, want 15s", got)
	}
}

func TestArrivalsConstant(t *testing.T) {
	a := newArrivals(newRamp(4, nil), 0)
	for k := range 10 {
		got, ok := a.next()
		if want := time.Duration(k) * 250 * time.Millisecond; !ok || got != want {
			t.Fatalf("start %d at %v (%v), want %v", k, got, ok, want)
		}
	}
}

func TestArrivalsRamp(t *testing.T) {
	// 0 → 10/s over 2 s, then 10/s: 10 starts in the ramp (the integral),
	// then one every 100 ms.
	r := newRamp(0, []scenarios.Stage{stage(2*time.Second, 10)})
	a := newArrivals(r, 0)
	var offsets []time.Duration
	for {
		off, ok := a.next()
		if !ok || off >= 3*time.Second {
			break
		}
		offsets = append(offsets, off)
	}
	if got, want := len(offsets), 20; got != want {
		t.Fatalf("%d starts in 3 s, want %d: %v", got, want, offsets)
	}
	// Start k of the ramp is at sqrt(2k/5) s (k = 5/2 t²).
	for k := 0; k < 10; k++ {
		want := time.Duration(math.Sqrt(float64(2*k)/5) * float64(time.Second))
		if d := offsets[k] - want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("start %d at %v, want %v", k, offsets[k], want)
		}
	}
	for k := 10; k < 20; k++ {
		want := 2*time.Second + time.Duration(k-10)*100*time.Millisecond
		if d := offsets[k] - want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("start %d at %v, want %v", k, offsets[k], want)
		}
	}
	// Resuming at 2 s continues with start 10, which count finds.
	if got := r.count(2 * time.Second); got != 10 {
		t.Errorf("count(2s) = %d, want 10", got)
	}
	b := newArrivals(r, r.count(2*time.Second))
	if off, _ := b.next(); off != offsets[10] {
		t.Errorf("resumed start at %v, want %v", off, offsets[10])
	}
}

func TestArrivalsStopAtZero(t *testing.T) {
	a := newArrivals(newRamp(10, []scenarios.Stage{stage(time.Second, 0)}), 0)
	n := 0
	for {
		if _, ok := a.next(); !ok {
			break
		}
		n++
		if n > 100 {
			t.Fatal("never stops")
		}
	}
	if n != 5 { // the integral of 10 → 0 over 1 s
		t.Errorf("%d starts, want 5", n)
	}
}
