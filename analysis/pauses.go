package analysis

import (
	"fmt"
	"math"
)

// pauses looks at the per-window p99 of a Node.js target's event-loop delay
// and of a Go target's GC pauses (window.Probes.EventLoopDelay, GCPause).
// A finding needs MinWindows windows with readings and either
//
//   - a rise: Mann–Kendall one-sided p ≤ Alpha and the median p99 of the
//     last quarter at least MinRiseMs above, and MinRiseFactor times, that of
//     the first quarter; or
//   - a high level: the median p99 over the run at least EventLoopHighMs
//     (GCPauseHighMs).
//
// It is a warning when the latency tail followed (Spearman correlation of
// the pause p99 and the request p99 over the windows ≥ MinLatencyCorrelation)
// and the pauses reached the high level (the last quarter's median, or the
// whole run's); critical when, besides, they rose and the request p99 at
// least doubled. Otherwise it is an info note: pauses the requests did not
// feel, or that stayed short (the GC of a target starved of CPU rises with
// its latency without being the cause). Of the two sources the more severe
// is kept.
func (a *analyzer) pauses(inc *incarnation) (Finding, bool) {
	o := a.opts.Pauses
	var best Finding
	found := false
	for _, src := range []struct {
		name   string
		high   float64
		get    func(i int) (float64, bool)
		single string
	}{
		{"event-loop delay", o.EventLoopHighMs, func(i int) (float64, bool) {
			p := inc.ws[i].Probes.EventLoopDelay
			if p == nil || p.Count <= 0 {
				return 0, false
			}
			return p.P99Ms, true
		}, "event_loop_delay"},
		{"GC pause", o.GCPauseHighMs, func(i int) (float64, bool) {
			p := inc.ws[i].Probes.GCPause
			if p == nil || p.Count <= 0 {
				return 0, false
			}
			return p.P99Ms, true
		}, "gc_pause"},
	} {
		var pos []int
		var p99, lat99, lat999 []float64
		for i, w := range inc.ws {
			v, ok := src.get(i)
			if !ok || !inc.full[i] || w.Requests == 0 {
				continue
			}
			pos = append(pos, i)
			p99 = append(p99, v)
			lat99 = append(lat99, w.LatencyMs.P99)
			lat999 = append(lat999, w.LatencyMs.P999)
		}
		n := len(p99)
		if n < o.MinWindows {
			continue
		}
		q := quarter(n)
		before, after := a.medianOf(p99[:q]), a.medianOf(p99[n-q:])
		level := a.medianOf(p99)
		mk := a.mannKendall(p99)
		rising := mk.PUp <= o.Alpha && after-before >= o.MinRiseMs && after >= o.MinRiseFactor*math.Max(before, 1)
		high := level >= src.high
		if !rising && !high {
			continue
		}
		rho := Spearman(p99, lat99)
		follows := !math.IsNaN(rho) && rho >= o.MinLatencyCorrelation
		l99b, l99a := a.medianOf(lat99[:q]), a.medianOf(lat99[n-q:])
		l999b, l999a := a.medianOf(lat999[:q]), a.medianOf(lat999[n-q:])

		first, last := inc.span(pos[0], pos[n-1])
		ev := Evidence{FirstWindow: first, LastWindow: last, Before: before, After: after, Unit: "ms", PValue: mk.PUp,
			Notes: map[string]float64{"windows": float64(n), "median_p99_ms": level,
				"latency_p99_before_ms": l99b, "latency_p99_after_ms": l99a,
				"latency_p999_before_ms": l999b, "latency_p999_after_ms": l999a}}
		if !math.IsNaN(rho) {
			ev.Correlation = rho
		}
		ev.Notes[src.single] = 1

		what := fmt.Sprintf("%s p99 sat at %s (median over %d windows, at or above %s)", src.name, fmtMs(level), n, fmtMs(src.high))
		if rising {
			what = fmt.Sprintf("%s p99 rose %s → %s (Mann–Kendall %s)", src.name, fmtMs(before), fmtMs(after), fmtP(mk.PUp))
		}
		sev := Info
		tail := fmt.Sprintf("the latency tail did not follow (p99 %s → %s, Spearman %.2f)", fmtMs(l99b), fmtMs(l99a), rho)
		material := high || after >= src.high
		// Pauses that rose with other load on the machine, or while the
		// target did no more work per request, are the machine's: a loop
		// blocked by the target's own work, or a GC with more to do, costs
		// CPU per request too.
		starved, why := a.pausesStarved(inc, pos, p99)
		if rising && starved {
			material = false
		}
		if follows {
			tail = fmt.Sprintf("p99.9 latency followed (%s → %s; p99 %s → %s, Spearman %.2f)", fmtMs(l999b), fmtMs(l999a), fmtMs(l99b), fmtMs(l99a), rho)
		}
		switch {
		case follows && material && rising && l99a >= 2*l99b:
			sev = Critical
		case follows && material:
			sev = Warning
		case follows && rising && starved:
			tail += ", but " + why
		case follows:
			// A rise that ends below the bar: pauses of a target starved of
			// CPU (saturated, or a noisy neighbour) rise with its latency
			// without being what slows it.
			tail += fmt.Sprintf(", but the pauses stay under %s", fmtMs(src.high))
		}
		cause := "the event loop is blocked: synchronous work, long GC pauses of the JavaScript heap, or a starved CPU"
		if src.single == "gc_pause" {
			cause = "the Go runtime stops the world for that long: a heap with many pointers, or a GC starved of CPU"
		}
		f := Finding{Kind: KindPauses, Severity: sev, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s; %s: %s", what, tail, cause)}
		if !found || f.Severity.Rank() > best.Severity.Rank() {
			best, found = f, true
		}
	}
	return best, found
}

// pausesStarved reports whether the pauses p99 (at positions pos) rose
// because the target was starved of CPU rather than by its own doing: with
// host readings, the CPU share of other processes on the machine rose with
// them (Spearman ≥ MinLatencyCorrelation) or stayed above half the machine;
// without, the target's CPU per request did not rise by a quarter.
func (a *analyzer) pausesStarved(inc *incarnation, pos []int, p99 []float64) (bool, string) {
	o := a.opts.Pauses
	var foreign, fp []float64
	for k, i := range pos {
		if f := inc.ws[i].Probes.HostForeignCPU; f != nil {
			foreign = append(foreign, *f)
			fp = append(fp, p99[k])
		}
	}
	if len(foreign) >= o.MinWindows {
		rho := Spearman(fp, foreign)
		med := a.medianOf(foreign)
		if !math.IsNaN(rho) && rho >= o.MinLatencyCorrelation || med >= 0.5 {
			return true, fmt.Sprintf("other processes took %s of the machine (Spearman %.2f with the pauses): likely a starved CPU, not the target", fmtPct(med), rho)
		}
		return false, ""
	}
	c, ok := a.cpuPerRequest(inc, pos)
	if ok && c.after < 1.25*c.before {
		return true, fmt.Sprintf("the target's CPU per request stayed at %s µs (%s before): likely a starved CPU, not the target's own work", fmtCount(c.after), fmtCount(c.before))
	}
	return false, ""
}
