package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// throughputLimit reads a ramp: windows whose load level (the ramp target, else
// the VU count; requests in flight only when neither is recorded) varies at
// least MinLevelRatio× over MinLevels distinct values.
//
// It fits throughput against level with a "hockey stick", y = a + b·min(x, k),
// trying every distinct level k as the knee (least squares), keeping only
// knees with MinPointsBeyondKnee windows at or beyond them and a ramp reaching
// MinOverKnee·k. Beyond the knee the elasticity of throughput to concurrency
// (Theil–Sen slope of log throughput against log level) must be at most
// MaxElasticity: completions stay flat while concurrency rises. The latency slope beyond the knee is the
// other half of the evidence (flat throughput + linearly rising latency = a
// saturated resource, by Little's law).
func (a *analyzer) throughputLimit(inc *incarnation) (Finding, bool, bool) {
	o := a.opts.ThroughputLimit
	level, unit := rampLevel(inc)
	if level == nil {
		return Finding{}, false, false
	}
	var pts series
	for i, w := range inc.ws {
		if inc.full[i] && w.Requests > 0 && level[i] > 0 {
			pts.add(level[i], inc.rps[i], i)
		}
	}
	distinct := slices.Clone(pts.x)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	if len(distinct) < 2 || distinct[len(distinct)-1] < o.MinLevelRatio*distinct[0] {
		return Finding{}, false, false // not a ramp
	}
	if pts.len() < o.MinWindows || len(distinct) < o.MinLevels {
		return Finding{}, false, true
	}
	xmax := distinct[len(distinct)-1]

	bestK, bestSSE := math.NaN(), math.Inf(1)
	for _, k := range distinct {
		beyond := 0
		for _, x := range pts.x {
			if x >= k {
				beyond++
			}
		}
		if beyond < o.MinPointsBeyondKnee || xmax < o.MinOverKnee*k {
			continue
		}
		if sse := hockeyStick(pts.x, pts.y, k); sse < bestSSE {
			bestK, bestSSE = k, sse
		}
	}
	if math.IsNaN(bestK) {
		return Finding{}, false, false
	}
	k := bestK
	var beyond, lat series
	var dropped float64
	var beyondPos []int
	for j, x := range pts.x {
		if x < k {
			continue
		}
		beyondPos = append(beyondPos, pts.pos[j])
		w := inc.ws[pts.pos[j]]
		beyond.add(x, pts.y[j], pts.pos[j])
		if l := w.LatencyMs.P50; l > 0 {
			lat.add(x, l, pts.pos[j])
		}
		dropped += float64(w.Dropped)
	}
	beyond = beyond.binned(a.opts.MaxPoints)
	lat = lat.binned(a.opts.MaxPoints)
	// Flatness is the elasticity of throughput to concurrency beyond the
	// knee: the Theil–Sen slope of log throughput against log level (1 for
	// linear scaling, 0 for flat). Being a ratio of logs it needs no fitted
	// level at the knee, which jitter easily inflates.
	var logs series
	for j := range beyond.x {
		if beyond.y[j] > 0 {
			logs.add(math.Log(beyond.x[j]), math.Log(beyond.y[j]), beyond.pos[j])
		}
	}
	el, ok := a.theilSen(logs.x, logs.y)
	if !ok || el.Slope > o.MaxElasticity {
		return Finding{}, false, false
	}
	// Throughput at the knee and at the top, on that line.
	yk, ytop := math.Exp(el.At(math.Log(k))), math.Exp(el.At(math.Log(xmax)))
	gain := ytop/yk - 1

	// The fitted knee is where a straight line stops fitting; on a soft
	// saturation curve it lies late. Report instead the lowest level where a
	// running median of throughput (5 windows, by level) reaches 90 % of the
	// plateau — where a person would say it stopped growing.
	plateau := a.medianOf(beyond.y)
	knee := kneeAt(pts, 0.9*plateau, k)

	first, last := inc.span(pts.pos[0], pts.pos[pts.len()-1])
	ev := Evidence{FirstWindow: first, LastWindow: last, Before: yk, After: ytop, Unit: "req/s",
		Notes: map[string]float64{"knee": knee, "knee_fit": k, "level_min": distinct[0], "level_max": xmax,
			"gain_beyond_knee": gain, "elasticity_beyond_knee": el.Slope}}
	if dropped > 0 {
		ev.Notes["dropped_beyond_knee"] = dropped
	}
	latText := ""
	if ll, ok := a.theilSen(lat.x, lat.y); ok && lat.len() >= o.MinPointsBeyondKnee {
		l0, l1 := ll.At(k), ll.At(xmax)
		ev.Slope, ev.SlopeUnit = ll.Slope, "ms per "+unitSingular(unit)
		ev.Notes["p50_ms_at_knee"], ev.Notes["p50_ms_at_max"] = l0, l1
		if l1 > l0 {
			latText = fmt.Sprintf(" while p50 latency rose %s → %s (+%s per %s)", fmtMs(math.Max(l0, 0)), fmtMs(l1), fmtMs(ll.Slope), unitSingular(unit))
		}
	}
	var summary string
	if k == distinct[0] {
		summary = fmt.Sprintf("throughput stayed at ≈%s req/s as %s rose %s → %s (%+.0f %%)%s: the target was already saturated at %s %s",
			fmtCount(plateau), unit, fmtCount(k), fmtCount(xmax), gain*100, latText, fmtCount(k), unit)
	} else {
		summary = fmt.Sprintf("throughput levelled off at ≈%s req/s from ≈%s %s: going on to %s %s changed it by %+.0f %%%s",
			fmtCount(plateau), fmtCount(knee), unit, fmtCount(xmax), unit, gain*100, latText)
	}
	wall, driver := a.wall(inc, beyondPos, wallScope{on: fmt.Sprintf("from %s %s on", fmtCount(knee), unit), ramp: true, latencyRose: latText != ""}, &ev)
	switch {
	case wall != "":
		summary += " — " + wall
	case latText != "":
		summary += " — flat throughput with rising latency means a saturated resource"
	}
	sev := o.Severity
	if driver != "" {
		// Loudly: first in the line, and at least a warning, since the
		// run's latencies are not the target's alone.
		summary = driver + ". " + summary
		if sev.Rank() < Warning.Rank() {
			sev = Warning
		}
	}
	return Finding{Kind: KindThroughputLimit, Severity: sev, Incarnation: inc.num, Evidence: ev, Summary: summary}, true, false
}

// kneeAt returns the lowest level at which the running median of throughput
// over 5 windows (ordered by level) reaches target, at most fit.
func kneeAt(pts series, target, fit float64) float64 {
	idx := make([]int, pts.len())
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(pts.x[a], pts.x[b]) })
	var win [5]float64
	for c := range idx {
		lo, hi := max(c-2, 0), min(c+3, len(idx))
		w := win[:0]
		for _, j := range idx[lo:hi] {
			w = append(w, pts.y[j])
		}
		x := pts.x[idx[c]]
		if x >= fit {
			break
		}
		if medianInPlace(w) >= target {
			return x
		}
	}
	return fit
}

// rampLevel returns each window's load level and its unit, or nil when the
// windows record none that varies. A ramp target that tracks the VU count is
// a closed-model ramp ("VUs"); one that does not is an arrival rate.
func rampLevel(inc *incarnation) ([]float64, string) {
	n := len(inc.ws)
	targets, vus, inflight := make([]float64, n), make([]float64, n), make([]float64, n)
	var anyTarget, anyVUs bool
	closed := 0
	for i, w := range inc.ws {
		targets[i], vus[i], inflight[i] = w.Target, float64(w.VUs), float64(w.InFlight)
		anyTarget = anyTarget || w.Target > 0
		anyVUs = anyVUs || w.VUs > 0
		if math.Abs(w.Target-float64(w.VUs)) <= math.Max(1, 0.1*w.Target) {
			closed++
		}
	}
	switch {
	case anyTarget && varies(targets):
		if closed*2 >= n {
			return targets, "VUs"
		}
		return targets, "req/s offered"
	case !anyTarget && anyVUs && varies(vus):
		return vus, "VUs"
	case !anyTarget && !anyVUs && varies(inflight):
		return inflight, "requests in flight"
	}
	return nil, ""
}

func varies(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return true
		}
	}
	return false
}

func unitSingular(u string) string {
	switch u {
	case "VUs":
		return "VU"
	case "req/s offered":
		return "req/s offered"
	}
	return "request in flight"
}

// hockeyStick fits y = a + b·min(x, k) by least squares and returns the sum
// of squared residuals. b is not allowed below 0 (a knee is where growth
// stops, not where it starts).
func hockeyStick(x, y []float64, k float64) (sse float64) {
	n := float64(len(x))
	var mz, my float64
	for i := range x {
		mz += math.Min(x[i], k)
		my += y[i]
	}
	mz /= n
	my /= n
	var szz, szy float64
	for i := range x {
		dz := math.Min(x[i], k) - mz
		szz += dz * dz
		szy += dz * (y[i] - my)
	}
	var b float64
	if szz > 0 && szy > 0 {
		b = szy / szz
	}
	a := my - b*mz
	for i := range x {
		r := y[i] - a - b*math.Min(x[i], k)
		sse += r * r
	}
	return sse
}
