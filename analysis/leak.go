package analysis

import (
	"fmt"
	"math"
)

// leak looks for a post-GC heap that keeps growing.
//
// Readings: forced-GC checkpoints alone when there are enough of them (they are
// exact), otherwise every reading (a passive "live heap after the last GC"
// metric reports the same quantity, possibly a GC late). Gates, all required:
//
//  1. Mann–Kendall: the heap rises, one-sided p ≤ Alpha.
//  2. Size: Theil–Sen slope × analysed span ≥ MinGrowthBytes and
//     ≥ MinGrowthFraction of the starting level.
//  3. It still rises at the end. A cache that warms up grows and then levels
//     off; over the whole run that looks like a trend, so the last
//     TailFraction of the readings is tested on its own: its Theil–Sen slope
//     must be at least MinTailSlopeRatio of the whole run's, and (when it has
//     MinReadings readings) its own Mann–Kendall p ≤ TailAlpha. A heap that
//     passes 1 and 2 but not 3 gets an info note, not a verdict.
func (a *analyzer) leak(inc *incarnation) (Finding, bool) {
	o := a.opts.Leak
	var all, forced series
	var cum float64
	cumReq := make([]float64, len(inc.ws))
	for i, w := range inc.ws {
		cum += float64(w.Requests)
		cumReq[i] = cum
		if h := w.Probes.HeapBytes; h != nil {
			all.add(inc.t[i], float64(*h), i)
			if w.Probes.HeapForcedGC {
				forced.add(inc.t[i], float64(*h), i)
			}
		}
	}
	if all.len() == 0 {
		return Finding{}, false // reported by missingFinding
	}
	s, source := all, "forced-GC and passive readings"
	switch {
	case forced.len() >= o.PreferForcedReadings:
		s, source = forced, "forced-GC checkpoints"
	case forced.len() == 0:
		source = "passive heap metric"
	}
	raw := s.len()
	first, last := inc.span(s.pos[0], s.pos[raw-1])
	ev := Evidence{FirstWindow: first, LastWindow: last, Unit: "bytes",
		Notes: map[string]float64{"readings": float64(raw), "forced_gc_readings": float64(forced.len())}}
	if raw < o.MinReadings {
		return Finding{
			Kind: KindInsufficientData, Severity: Info, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("only %d post-GC heap readings after warm-up (need %d): no leak verdict — run longer or take heap readings more often",
				raw, o.MinReadings),
		}, true
	}

	// Requests served at each reading, for growth per request.
	req := make([]float64, raw)
	for k, p := range s.pos {
		req[k] = cumReq[p]
	}
	perReq := series{x: req, y: s.y, pos: s.pos}.binned(a.opts.MaxPoints)
	s = s.binned(a.opts.MaxPoints)
	n := s.len()

	mk := a.mannKendall(s.y)
	line, ok := a.theilSen(s.x, s.y)
	if !ok {
		return Finding{}, false
	}
	spanSec := s.x[n-1] - s.x[0]
	growth := line.Slope * spanSec
	q := quarter(n)
	before, after := a.medianOf(s.y[:q]), a.medianOf(s.y[n-q:])
	base := before
	if base <= 0 {
		base = math.Max(line.At(s.x[0]), 1)
	}

	tailStart := n - int(math.Ceil(float64(n)*o.TailFraction))
	tail := series{x: s.x[tailStart:], y: s.y[tailStart:]}
	tailLine, tailOK := a.theilSen(tail.x, tail.y)
	tailRatio := 0.0
	if tailOK && line.Slope > 0 {
		tailRatio = tailLine.Slope / line.Slope
	}
	tailTested := tail.len() >= o.MinReadings
	tailP := math.NaN()
	if tailTested {
		tailP = a.mannKendall(tail.y).PUp
	}

	significant := mk.PUp <= o.Alpha
	big := growth >= o.MinGrowthBytes && growth >= o.MinGrowthFraction*base
	holds := tailRatio >= o.MinTailSlopeRatio && (!tailTested || tailP <= o.TailAlpha)
	if !significant || !big {
		return Finding{}, false
	}

	ev.Slope, ev.SlopeUnit = line.Slope*3600, "bytes/hour"
	if l, ok := a.theilSen(perReq.x, perReq.y); ok {
		ev.PerKRequests = l.Slope * 1000
	}
	ev.PValue = mk.PUp
	ev.Before, ev.After = before, after
	ev.Notes["growth_bytes"] = growth
	ev.Notes["tail_slope_ratio"] = tailRatio
	if tailTested {
		ev.Notes["tail_p_value"] = tailP
	}
	grew := fmt.Sprintf("post-GC heap grew %s → %s over %s", fmtBytes(before), fmtBytes(after), fmtSeconds(spanSec))

	if !holds {
		return Finding{
			Kind: KindLeak, Severity: Info, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s but levelled off (last-%s slope %s of the whole run's): a cache or pool warming up, not a leak",
				grew, tailName(o.TailFraction), fmtPct(tailRatio)),
		}, true
	}
	sev := Critical
	if raw < o.ConfidentReadings || !tailTested {
		sev = Warning
	}
	per := ""
	if ev.PerKRequests > 0 {
		per = fmt.Sprintf(", %s per 1,000 requests", fmtBytes(ev.PerKRequests))
	}
	thin := ""
	if sev == Warning {
		thin = fmt.Sprintf("; only %d readings, take more to confirm", raw)
	}
	return Finding{
		Kind: KindLeak, Severity: sev, Incarnation: inc.num, Evidence: ev,
		Summary: fmt.Sprintf("%s (+%s/hour%s; Mann–Kendall %s, still rising in the last %s; %s%s): likely a memory leak",
			grew, fmtBytes(ev.Slope), per, fmtP(mk.PUp), tailName(o.TailFraction), source, thin),
	}, true
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
