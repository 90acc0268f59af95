package driver

import (
	"math"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// ramp is a piecewise-linear target over time: VUs (closed model) or
// iterations per second (open model). It starts at start and moves linearly
// to each stage's target over the stage's duration; after the last stage the
// target stays where it ended.
type ramp struct {
	segs []segment // the last one is open-ended
}

// segment is one linear piece: the target goes from r0 to r1 over [t0, t0+dur);
// n0 is the integral of the target up to t0 (iterations, for a rate).
type segment struct {
	t0, dur float64 // seconds; dur is +Inf for the last segment
	r0, r1  float64
	n0      float64
}

func newRamp(start float64, stages []scenarios.Stage) ramp {
	var r ramp
	t, prev, n := 0.0, start, 0.0
	for _, st := range stages {
		d := st.Duration.D().Seconds()
		if d <= 0 { // a zero-length stage is a step
			prev = st.Target
			continue
		}
		r.segs = append(r.segs, segment{t0: t, dur: d, r0: prev, r1: st.Target, n0: n})
		n += (prev + st.Target) / 2 * d
		t += d
		prev = st.Target
	}
	r.segs = append(r.segs, segment{t0: t, dur: math.Inf(1), r0: prev, r1: prev, n0: n})
	return r
}

// at returns the target at offset t from the schedule's start.
func (r ramp) at(t time.Duration) float64 {
	s := t.Seconds()
	for _, sg := range r.segs {
		if s < sg.t0+sg.dur {
			if s <= sg.t0 || math.IsInf(sg.dur, 1) {
				return sg.r0
			}
			return sg.r0 + (sg.r1-sg.r0)*(s-sg.t0)/sg.dur
		}
	}
	return r.segs[len(r.segs)-1].r1
}

// max returns the largest target the ramp reaches.
func (r ramp) max() float64 {
	m := 0.0
	for _, sg := range r.segs {
		m = math.Max(m, math.Max(sg.r0, sg.r1))
	}
	return m
}

// staticAfter returns the offset after which the target no longer changes.
func (r ramp) staticAfter() time.Duration {
	return seconds(r.segs[len(r.segs)-1].t0)
}

// count returns the number of iterations an arrival rate following the ramp
// starts in [0, t): the integral of the rate, rounded up.
func (r ramp) count(t time.Duration) int64 {
	s := t.Seconds()
	for _, sg := range r.segs {
		if s < sg.t0+sg.dur {
			x := s - sg.t0
			if x < 0 {
				x = 0
			}
			n := sg.n0 + sg.r0*x
			if !math.IsInf(sg.dur, 1) {
				n += (sg.r1 - sg.r0) * x * x / (2 * sg.dur)
			}
			return int64(math.Ceil(n - 1e-9))
		}
	}
	return 0 // not reached: the last segment is open-ended
}

// arrivals yields the intended start offsets of an open-model arrival rate:
// iteration k starts when the integral of the rate reaches k, so a constant
// rate R starts iterations at 0, 1/R, 2/R, ... and a ramp speeds up or slows
// down smoothly. Not safe for concurrent use.
type arrivals struct {
	r   ramp
	seg int
	k   int64
}

// newArrivals starts at iteration first (see ramp.count to resume mid-run).
func newArrivals(r ramp, first int64) *arrivals { return &arrivals{r: r, k: first} }

// next returns the offset of the next iteration, or false when the rate
// stays at zero from here on.
func (a *arrivals) next() (time.Duration, bool) {
	x := float64(a.k)
	for a.seg < len(a.r.segs) {
		sg := a.r.segs[a.seg]
		inf := math.IsInf(sg.dur, 1)
		var n1 float64
		if inf {
			n1 = math.Inf(1)
			if sg.r0 <= 0 {
				return 0, false
			}
		} else {
			n1 = sg.n0 + (sg.r0+sg.r1)/2*sg.dur
		}
		if x < n1 || (inf && x >= sg.n0) {
			dx := x - sg.n0
			var t float64
			if inf || sg.r1 == sg.r0 {
				t = dx / sg.r0
			} else {
				// Solve r0*t + (r1-r0)/(2*dur)*t² = dx for t in [0, dur], in
				// the form that stays exact as the slope tends to zero.
				a2 := (sg.r1 - sg.r0) / sg.dur
				disc := sg.r0*sg.r0 + 2*a2*dx
				if disc < 0 {
					disc = 0
				}
				den := sg.r0 + math.Sqrt(disc)
				if den <= 0 {
					t = 0
				} else {
					t = 2 * dx / den
				}
			}
			a.k++
			return seconds(sg.t0 + t), true
		}
		a.seg++
	}
	return 0, false
}

func seconds(s float64) time.Duration {
	if s > float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}
