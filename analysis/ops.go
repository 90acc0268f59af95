package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// OpTrend is one op's latency at the start and at the end of the analysed
// steady-load windows: the medians of its per-window p50 and p99 over the
// first and the last quarter of the windows that have it, leaving out those
// where every other op stalled (see CollapseOptions.MaxCommonSlowdown).
type OpTrend struct {
	Op          string  `json:"op"`
	P50BeforeMs float64 `json:"p50_ms_before"`
	P50AfterMs  float64 `json:"p50_ms_after"`
	P99BeforeMs float64 `json:"p99_ms_before"`
	P99AfterMs  float64 `json:"p99_ms_after"`
	// Ratio is P50AfterMs / P50BeforeMs.
	Ratio float64 `json:"ratio"`
	// Lead is the same ratio for the op's p50 relative to the other ops' in
	// each window (divided by the median of their p50s, each scaled by its
	// own median): how much more this op slowed than the rest. A machine
	// that slows every op alike leaves it near 1. With no other op it is
	// Ratio.
	Lead float64 `json:"lead"`
	// PValue is the one-sided Mann–Kendall p-value of that relative p50
	// rising.
	PValue float64 `json:"p_value"`
	// Grew: Lead ≥ 1 + CollapseOptions.MinOpRise with PValue ≤ Alpha, and
	// Ratio ≥ 1 + FlatOpRise/2 (the op did slow, not only the others speed
	// up).
	Grew bool `json:"grew,omitempty"`
	// Flat: its p50 moved by less than CollapseOptions.FlatOpRise, and it
	// did not grow.
	Flat bool `json:"flat,omitempty"`

	// rel is the op's p50 relative to the other ops', by window position in
	// the incarnation.
	rel map[int]float64
}

// opTrends returns the trend of every op with enough windows among pos
// (each with at least MinOpRequests requests), the ops that grew first
// (largest ratio first), then the rest by name.
func (a *analyzer) opTrends(inc *incarnation, pos []int) []OpTrend {
	o := a.opts.Collapse
	type opSeries struct {
		at       []int // positions in pos
		p50, p99 []float64
		byAt     map[int]float64
		median   float64
	}
	byOp := map[string]*opSeries{}
	for k, i := range pos {
		for name, st := range inc.ws[i].Ops {
			if st.Requests < int64(o.MinOpRequests) || st.LatencyMs.P50 <= 0 {
				continue
			}
			s := byOp[name]
			if s == nil {
				s = &opSeries{byAt: map[int]float64{}}
				byOp[name] = s
			}
			s.at = append(s.at, k)
			s.p50 = append(s.p50, st.LatencyMs.P50)
			s.p99 = append(s.p99, st.LatencyMs.P99)
			s.byAt[k] = st.LatencyMs.P50
		}
	}
	names := make([]string, 0, len(byOp))
	for name, s := range byOp {
		if len(s.p50) < o.MinWindows {
			delete(byOp, name)
			continue
		}
		s.median = a.medianOf(s.p50)
		names = append(names, name)
	}
	slices.Sort(names)
	var out []OpTrend
	var scaled []float64
	for _, name := range names {
		s := byOp[name]
		// The others' p50s in the same window, each scaled by its own
		// median: the machine's common level there.
		commons := make([]float64, len(s.at))
		calm := 0
		for j, k := range s.at {
			scaled = scaled[:0]
			for _, other := range names {
				if other == name {
					continue
				}
				if v, ok := byOp[other].byAt[k]; ok && byOp[other].median > 0 {
					scaled = append(scaled, v/byOp[other].median)
				}
			}
			commons[j] = 1
			if len(scaled) > 0 {
				commons[j] = medianInPlace(scaled)
			}
		}
		// Windows where every other op stalled are left out, unless too
		// few are left (a saturated target: then none tells the ops apart).
		// The usual level is the lower quartile of the common levels, not
		// their median: stalls can take half of the windows or more.
		usual := Quantile(commons, 0.25)
		stalled := func(j int) bool { return commons[j] >= o.MaxCommonSlowdown*usual }
		for j := range commons {
			if commons[j] > 0 && !stalled(j) {
				calm++
			}
		}
		keep := func(j int) bool { return commons[j] > 0 }
		if calm >= o.MinWindows {
			keep = func(j int) bool { return commons[j] > 0 && !stalled(j) }
		}
		var p50, p99, rel []float64
		t := OpTrend{Op: name, rel: make(map[int]float64, len(s.at))}
		for j, k := range s.at {
			if !keep(j) {
				continue
			}
			p50 = append(p50, s.p50[j])
			p99 = append(p99, s.p99[j])
			// The op's p50 relative to the others' in the same window.
			rel = append(rel, s.p50[j]/commons[j])
			t.rel[pos[k]] = s.p50[j] / commons[j]
		}
		n := len(p50)
		q := quarter(n)
		t.P50BeforeMs, t.P50AfterMs = a.medianOf(p50[:q]), a.medianOf(p50[n-q:])
		t.P99BeforeMs, t.P99AfterMs = a.medianOf(p99[:q]), a.medianOf(p99[n-q:])
		t.Ratio = ratio(t.P50AfterMs, t.P50BeforeMs)
		t.Flat = math.Abs(t.Ratio-1) < o.FlatOpRise
		if m := len(rel); m >= o.MinWindows {
			rq := quarter(m)
			t.Lead = ratio(a.medianOf(rel[m-rq:]), a.medianOf(rel[:rq]))
			t.PValue = a.mannKendall(series{y: rel}.binned(a.opts.MaxPoints).y).PUp
		} else {
			t.Lead, t.PValue = t.Ratio, 1
		}
		t.Grew = t.Lead >= 1+o.MinOpRise && t.PValue <= o.Alpha && t.Ratio >= 1+o.FlatOpRise/2
		t.Flat = t.Flat && !t.Grew
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(x, y OpTrend) int {
		if x.Grew != y.Grew {
			if x.Grew {
				return -1
			}
			return 1
		}
		if x.Grew {
			return cmp.Compare(y.Lead, x.Lead)
		}
		return 0
	})
	return out
}

// grown returns the ops that grew.
func grown(ts []OpTrend) []OpTrend {
	var out []OpTrend
	for _, t := range ts {
		if t.Grew {
			out = append(out, t)
		}
	}
	return out
}

// opsText says which ops slowed and which stayed flat: "list: p50 1.4 →
// 9.0 ms, p99 3.1 → 20 ms (6.4×); create, get and update stayed flat". It
// is "" when there are no per-op figures.
func opsText(ts []OpTrend) string {
	if len(ts) == 0 {
		return ""
	}
	var grew, flat []string
	lo, hi := math.Inf(1), math.Inf(-1) // ratios of the ops that did not grow
	for _, t := range ts {
		switch {
		case t.Grew:
			if len(grew) < 3 {
				grew = append(grew, fmt.Sprintf("%s: p50 %s → %s, p99 %s → %s (%s)", t.Op,
					fmtMsBare(t.P50BeforeMs), fmtMs(t.P50AfterMs), fmtMsBare(t.P99BeforeMs), fmtMs(t.P99AfterMs), fmtFactor(t.Ratio)))
			}
			continue
		case t.Flat:
			flat = append(flat, t.Op)
		}
		lo, hi = math.Min(lo, t.Ratio), math.Max(hi, t.Ratio)
	}
	rest := len(ts) - len(grown(ts))
	if len(grew) == 0 {
		if len(ts) == 1 {
			return fmt.Sprintf("its only op, %s, went p50 %s → %s", ts[0].Op, fmtMsBare(ts[0].P50BeforeMs), fmtMs(ts[0].P50AfterMs))
		}
		return fmt.Sprintf("no op slowed by itself (p50 of every op ×%s–%s)", fmtRatio(lo), fmtRatio(hi))
	}
	s := strings.Join(grew, "; ")
	switch {
	case rest == 0:
	case len(flat) == rest:
		s += "; " + listNames(flat, 6) + " stayed flat"
	case rest == 1:
		s += fmt.Sprintf("; the other op ×%s", fmtRatio(lo))
	default:
		s += fmt.Sprintf("; the other ops ×%s–%s", fmtRatio(lo), fmtRatio(hi))
	}
	return s
}

// listNames is "a", "a and b", "a, b and c", "a, b, c and 2 more".
func listNames(names []string, max int) string {
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(" and %d more", len(names)-max)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// fmtMsBare is fmtMs without the unit, for the first figure of a range.
func fmtMsBare(ms float64) string { return strings.TrimSuffix(fmtMs(ms), " ms") }

// fmtRatio formats a ratio near 1: "0.93", "1.4".
func fmtRatio(r float64) string {
	if r < 10 {
		return fmt.Sprintf("%.2g", r)
	}
	return fmt.Sprintf("%.0f", r)
}
