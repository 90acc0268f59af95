package analysis

import (
	"fmt"
	"math"

	"github.com/longhaul-dev/longhaul/window"
)

// errorSurge compares the error rate of the last quarter with the first
// quarter's (pooled: errors over requests, so a quiet window weighs less than
// a busy one). A sustained surge must reach max(Factor × start,
// start + MinRise) with at least MinErrors errors: critical when the
// per-window rates also trend up (Mann–Kendall p ≤ Alpha), else a warning. A
// burst that recovered before the end — the worst block of max(3, n/10)
// consecutive windows after the first quarter, widened over the neighbouring
// windows that are as bad — is a warning when it reaches
// max(Factor × start, start + BurstMinRise).
//
// Requests in flight when the run stopped ("interrupted") are neither errors
// nor requests here: every run ends with some.
func (a *analyzer) errorSurge(inc *incarnation) (Finding, bool, bool) {
	o := a.opts.ErrorSurge
	var pos []int
	var errs, reqs []float64
	var rates series
	for i, w := range inc.ws {
		in := float64(w.Errors.Interrupted)
		r := float64(w.Requests) - in
		if !inc.full[i] || r <= 0 {
			continue
		}
		e := float64(w.Errors.Total()) - in
		pos = append(pos, i)
		errs = append(errs, e)
		reqs = append(reqs, r)
		rates.add(inc.t[i], e/r, i)
	}
	n := len(pos)
	if n < o.MinWindows {
		return Finding{}, false, true
	}
	q := quarter(n)
	pooled := func(lo, hi int) (rate, count float64) {
		var e, r float64
		for k := lo; k < hi; k++ {
			e += errs[k]
			r += reqs[k]
		}
		return e / r, e
	}
	start, _ := pooled(0, q)
	end, endErrs := pooled(n-q, n)

	lo, hi := n-q, n
	sev := Warning
	var what string
	mk := a.mannKendall(rates.binned(a.opts.MaxPoints).y)
	if end >= math.Max(o.Factor*start, start+o.MinRise) && endErrs >= float64(o.MinErrors) {
		if mk.PUp <= o.Alpha {
			sev = Critical
		}
		what = fmt.Sprintf("error rate rose from %s at the start to %s in the last quarter of the run", fmtPct(start), fmtPct(end))
	} else {
		// Worst block after the first quarter.
		b := max(3, int(math.Ceil(float64(n)/10)))
		bestRate, bestErrs, bestLo := -1.0, 0.0, -1
		for k := q; k+b <= n; k++ {
			if r, e := pooled(k, k+b); r > bestRate {
				bestRate, bestErrs, bestLo = r, e, k
			}
		}
		threshold := math.Max(o.Factor*start, start+o.BurstMinRise)
		if bestLo < 0 || bestRate < threshold || bestErrs < float64(o.MinErrors) {
			return Finding{}, false, false
		}
		// Widen the block over the neighbouring windows that are as bad.
		lo, hi = bestLo, bestLo+b
		for hi < n && errs[hi] >= threshold*reqs[hi] {
			hi++
		}
		for lo > q && errs[lo-1] >= threshold*reqs[lo-1] {
			lo--
		}
		bestRate, bestErrs = pooled(lo, hi)
		end, endErrs = bestRate, bestErrs
		after := math.NaN()
		if hi < n {
			after, _ = pooled(hi, n)
		}
		what = fmt.Sprintf("error rate reached %s vs %s at the start", fmtPct(end), fmtPct(start))
		if !math.IsNaN(after) {
			what += fmt.Sprintf(", then fell back to %s", fmtPct(after))
		}
	}

	var by window.Errors
	for k := lo; k < hi; k++ {
		by.AddAll(inc.ws[pos[k]].Errors)
	}
	by.Interrupted = 0
	dom, domN := window.Class(0), int64(-1)
	for c := window.Class(1); c < window.NumClasses; c++ {
		if v := by.Get(c); v > domN {
			dom, domN = c, v
		}
	}
	share := ratio(float64(domN), float64(by.Total()))

	first, last := inc.span(pos[lo], pos[hi-1])
	ev := Evidence{FirstWindow: first, LastWindow: last, Before: start, After: end, Unit: "error fraction",
		PValue: mk.PUp, Notes: map[string]float64{"errors": endErrs, "dominant_class_share": share}}
	// The dominant class travels in Notes as a count keyed by name, so the
	// evidence stays a flat set of figures.
	ev.Notes["errors_"+dom.String()] = float64(domN)
	summary := fmt.Sprintf("%s (windows %d–%d: %s errors, mostly %s, %s of them)",
		what, first, last, fmtCount(endErrs), dom, fmtPct(share))
	// A sustained surge is judged on the last quarter, a burst on its own
	// windows; the database may have stopped anywhere after the first
	// quarter's baseline for the one, and just before the burst for the other.
	from := first - 1
	if lo == n-q {
		from = inc.ws[pos[min(q, n-1)]].Index - 1
	}
	if w, ok := inc.databaseStoppedIn(from, last); ok {
		// The errors' cause, where longhaul saw it: the database's process or
		// container stopped.
		summary += fmt.Sprintf("; the database stopped in window %d", w)
		ev.Notes["database_stopped_window"] = float64(w)
	}
	return Finding{Kind: KindErrorSurge, Severity: sev, Incarnation: inc.num, Evidence: ev, Summary: summary}, true, false
}

// databaseStoppedIn returns the index of the first window in [from, to]
// (window indexes) in which the drive found the database stopped (a gap
// too: a resumed drive found it stopped).
func (inc *incarnation) databaseStoppedIn(from, to int) (int, bool) {
	for _, w := range inc.withStoppedGaps() {
		if w.Index < from || w.Index > to {
			continue
		}
		for _, ev := range w.Events {
			if ev.Kind == window.EventDatabaseExit {
				return w.Index, true
			}
		}
	}
	return 0, false
}
