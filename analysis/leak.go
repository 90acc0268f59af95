package analysis

import (
	"fmt"
	"math"
	"strings"
)

// leak looks for a post-GC heap that keeps growing.
//
// Readings: forced-GC checkpoints alone when there are enough of them (they are
// exact), otherwise every reading (a passive "live heap after the last GC"
// metric reports the same quantity, possibly a GC late). The heap is examined
// against the requests served, not the clock: a leak retains memory per
// request, so when a noisy neighbour halves the throughput for a while the
// heap grows half as fast in time but just as fast per request. (Without
// request counts, time is used.) Gates, all required:
//
//  1. Mann–Kendall, corrected for serial correlation (Hamed–Rao): the heap
//     rises, one-sided p ≤ Alpha. Neighbouring readings are not independent
//     (the heap wanders with the connections and requests in flight), and
//     the plain test finds trends in that wander.
//  2. Size: the Theil–Sen slope × the span ≥ MinGrowthBytes and
//     ≥ MinGrowthFraction of the starting level (the median of the first
//     quarter of the readings).
//  3. It still rises at the end. A cache that warms up grows and then levels
//     off; over the whole run that looks like a trend, so the last
//     TailFraction of the readings is tested on its own: its Theil–Sen slope
//     must be at least MinTailSlopeRatio of the whole run's, projected over
//     the whole span it must still meet the floors of gate 2, and (when it
//     has MinReadings readings) its own Mann–Kendall p ≤ TailAlpha.
//
// A heap that passes gate 1 and grows by NoteGrowthFraction but fails the
// others gets an info note (levelled off; or too little growth to call in a
// run this short), not a verdict.
func (a *analyzer) leak(inc *incarnation) (Finding, bool) {
	o := a.opts.Leak
	var all, forced heapReadings
	var cum float64
	for i, w := range inc.ws {
		cum += float64(w.Requests)
		if h := w.Probes.HeapBytes; h != nil {
			all.add(inc.t[i], cum, float64(*h), i)
			if w.Probes.HeapForcedGC {
				forced.add(inc.t[i], cum, float64(*h), i)
			}
		}
	}
	if len(all.y) == 0 {
		return Finding{}, false // reported by missingFinding
	}
	h, source := all, "forced-GC and passive readings"
	switch {
	case len(forced.y) >= o.PreferForcedReadings:
		h, source = forced, "forced-GC checkpoints"
	case len(forced.y) == 0:
		source = "passive heap metric"
	}
	raw := len(h.y)
	first, last := inc.span(h.pos[0], h.pos[raw-1])
	ev := Evidence{FirstWindow: first, LastWindow: last, Unit: "bytes",
		Notes: map[string]float64{"readings": float64(raw), "forced_gc_readings": float64(len(forced.y))}}
	if raw < o.MinReadings {
		return Finding{
			Kind: KindInsufficientData, Severity: Info, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("only %d post-GC heap readings after warm-up (need %d): no leak verdict — run longer or take heap readings more often",
				raw, o.MinReadings),
		}, true
	}

	f, ok := a.growth(inc, h, "post-GC heap", source, len(forced.y))
	if off, offOK := a.offHeapLeak(inc, h); offOK {
		// Memory that grows outside the heap while the heap does not is
		// the leak to report, whatever the heap's own (small) trend said.
		return off, true
	}
	if ok {
		a.besideHeap(inc, &f)
	}
	return f, ok
}

// growth applies the leak gates (see leak) to readings h of a memory series
// called what ("post-GC heap", "RSS", ...), taken by source. ok is false when
// h does not rise at all; levelled or too small growth gives an info note.
func (a *analyzer) growth(inc *incarnation, h heapReadings, what, source string, forcedReadings int) (Finding, bool) {
	o := a.opts.Leak
	raw := len(h.y)
	first, last := inc.span(h.pos[0], h.pos[raw-1])
	ev := Evidence{FirstWindow: first, LastWindow: last, Unit: "bytes",
		Notes: map[string]float64{"readings": float64(raw), "forced_gc_readings": float64(forcedReadings)}}
	h = h.binned(a.opts.MaxPoints)
	n := len(h.y)
	x := h.req
	if x[n-1] <= x[0] {
		x = h.t // no request counts: fall back to the clock
	}
	mk := a.mannKendallHR(h.y)
	line, ok := a.theilSen(x, h.y)
	if !ok {
		return Finding{}, false
	}
	growth := line.Slope * (x[n-1] - x[0])
	q := quarter(n)
	before, after := a.medianOf(h.y[:q]), a.medianOf(h.y[n-q:])
	base := before
	if base <= 0 {
		base = math.Max(line.At(x[0]), 1)
	}

	ts := n - int(math.Ceil(float64(n)*o.TailFraction))
	tail := series{x: x[ts:], y: h.y[ts:]}
	tailLine, tailOK := a.theilSen(tail.x, tail.y)
	tailRatio := 0.0
	if tailOK && line.Slope > 0 {
		tailRatio = tailLine.Slope / line.Slope
	}
	tailTested := tail.len() >= o.MinReadings
	tailP := math.NaN()
	if tailTested {
		tailP = a.mannKendallHR(tail.y).PUp
	}
	// The growth that counts is the one still under way at the end: a
	// warm-up bump followed by a random wander must not add up to a leak ...
	tailGrowth := math.Min(line.Slope, tailLine.Slope) * (x[n-1] - x[0])
	bigEnough := func(g, fraction float64) bool { return g >= o.MinGrowthBytes && g >= fraction*base }
	lasting := func(fraction float64) bool {
		return tailOK && bigEnough(tailGrowth, fraction)
	}
	if mk.PUp > o.Alpha || !bigEnough(growth, o.NoteGrowthFraction) {
		return Finding{}, false
	}

	spanSec := h.t[n-1] - h.t[0]
	if l, ok := a.theilSen(h.t, h.y); ok {
		ev.Slope, ev.SlopeUnit = l.Slope*3600, "bytes/hour"
	}
	if l, ok := a.theilSen(h.req, h.y); ok {
		ev.PerKRequests = l.Slope * 1000
	}
	ev.PValue = mk.PUp
	ev.Before, ev.After = before, after
	ev.Notes["growth_bytes"] = growth
	ev.Notes["tail_slope_ratio"] = tailRatio
	ev.Notes["tail_growth_bytes"] = tailGrowth
	ev.Notes["requests"] = h.req[n-1] - h.req[0]
	if tailTested {
		ev.Notes["tail_p_value"] = tailP
	}
	grew := fmt.Sprintf("%s grew %s → %s over %s", what, fmtBytes(before), fmtBytes(after), fmtSeconds(spanSec))
	if r := h.req[n-1] - h.req[0]; r > 0 {
		grew += fmt.Sprintf(" and %s requests", fmtCount(r))
	}

	if !lasting(o.NoteGrowthFraction) || tailRatio < o.MinTailSlopeRatio || tailTested && tailP > o.TailAlpha {
		return Finding{
			Kind: KindLeak, Severity: Info, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s but levelled off (last-%s slope %s of the whole run's): a cache or pool warming up, not a leak",
				grew, tailName(o.TailFraction), fmtPct(tailRatio)),
		}, true
	}
	if !bigEnough(growth, o.MinGrowthFraction) || !lasting(o.MinGrowthFraction) {
		return Finding{
			Kind: KindLeak, Severity: Info, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s (+%s, Mann–Kendall %s) and is still rising, but by less than the %s that makes a leak verdict: run longer to tell a slow leak from the heap settling",
				grew, fmtPct(growth/base), fmtP(mk.PUp), fmtPct(o.MinGrowthFraction)),
		}, true
	}
	sev := Critical
	if raw < o.ConfidentReadings || !tailTested {
		sev = Warning
	}
	rate := ""
	if ev.SlopeUnit != "" {
		rate = fmt.Sprintf("+%s/hour", fmtBytes(ev.Slope))
	}
	if ev.PerKRequests > 0 {
		rate += fmt.Sprintf(", %s per 1,000 requests", fmtBytes(ev.PerKRequests))
	}
	thin := ""
	if sev == Warning {
		thin = fmt.Sprintf("; only %d readings, take more to confirm", raw)
	}
	return Finding{
		Kind: KindLeak, Severity: sev, Incarnation: inc.num, Evidence: ev,
		Summary: fmt.Sprintf("%s (%s; Mann–Kendall %s, still rising in the last %s; %s%s): likely a memory leak",
			grew, strings.TrimPrefix(rate, ", "), fmtP(mk.PUp), tailName(o.TailFraction), source, thin),
	}, true
}

// heapReadings are heap readings with the time (s) and the requests served
// (cumulative, from the first analysed window) when each was taken.
type heapReadings struct {
	t, req, y []float64
	pos       []int // positions in incarnation.ws
}

func (h *heapReadings) add(t, req, y float64, pos int) {
	h.t = append(h.t, t)
	h.req = append(h.req, req)
	h.y = append(h.y, y)
	h.pos = append(h.pos, pos)
}

// binned cuts h into at most maxPoints consecutive bins, each replaced by the
// median of its times, requests and readings.
func (h heapReadings) binned(maxPoints int) heapReadings {
	n := len(h.y)
	if n <= maxPoints {
		return h
	}
	var out heapReadings
	buf := make([]float64, 0, n/maxPoints+2)
	med := func(v []float64) float64 { buf = append(buf[:0], v...); return medianInPlace(buf) }
	for b := 0; b < maxPoints; b++ {
		lo, hi := b*n/maxPoints, (b+1)*n/maxPoints
		out.add(med(h.t[lo:hi]), med(h.req[lo:hi]), med(h.y[lo:hi]), h.pos[lo])
	}
	return out
}

func tailName(f float64) string {
	switch {
	case math.Abs(f-0.5) < 1e-9:
		return "half"
	case math.Abs(f-1.0/3) < 0.01:
		return "third"
	case math.Abs(f-0.25) < 1e-9:
		return "quarter"
	}
	return fmtPct(f)
}
