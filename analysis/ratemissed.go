package analysis

import (
	"fmt"
	"math"
)

// KindRateMissed: an open-model run did not start its iterations at the
// rate it was asked for — starts were dropped because every VU was busy. In
// the open model the rate is the experiment; not keeping it is the result.
const KindRateMissed = "rate_missed"

// Causes of a rate_missed finding (Evidence.Cause).
const (
	// CauseTargetLatency: every VU was waiting on the target, whose latency
	// rose in the windows that dropped starts.
	CauseTargetLatency = "target_latency"
	// CauseMaxVUs: every VU was waiting on the target at its usual latency:
	// max_vus is too low for this rate (Little's law: rate × latency).
	CauseMaxVUs = "max_vus"
	// CauseDriverCPU: starts were dropped while VUs were idle: longhaul
	// itself could not hand them out on time (short of CPU).
	CauseDriverCPU = "driver_cpu"
)

// RateMissedOptions tune the rate_missed detector: the share of an open-model
// run's intended starts that were dropped.
type RateMissedOptions struct {
	// Warning and Critical are the dropped shares of intended starts (over
	// the analysed windows) for a warning and a critical finding. Defaults
	// 0.01 and 0.10: k6 and Gatling users read a few dropped iterations in
	// a thousand as the scheduler's noise, one in a hundred as a run that
	// no longer measures the rate asked for, and one in ten as a target
	// that cannot take it.
	Warning  float64
	Critical float64
	// MinIntended is the fewest intended starts for a verdict. Default 100:
	// below it 1 % is a single start.
	MinIntended int64
}

// rateMissed sums the open model's dropped starts over the analysed windows.
// Intended starts are the dropped ones plus those sent (requests and
// skipped picks). The cause is read from the windows that dropped starts:
// with the peak in-flight count at max_vus, every VU was waiting on the
// target — its latency rose (target_latency) or held steady, so max_vus is
// too low for the rate (max_vus); with VUs to spare, longhaul itself was
// late (driver_cpu).
func (a *analyzer) rateMissed(inc *incarnation) (Finding, bool) {
	o := a.opts.RateMissed
	var dropped, intended float64
	first, last := -1, -1
	var dropP50, cleanP50 []float64
	var dropRate []float64
	maxVUs, peak := 0, 0
	var foreign []float64
	for i, w := range inc.ws {
		if w.MaxVUs == 0 && w.Dropped == 0 {
			continue // closed model
		}
		sent := float64(w.Requests + w.Skipped)
		dropped += float64(w.Dropped)
		intended += sent + float64(w.Dropped)
		maxVUs = max(maxVUs, w.MaxVUs)
		if w.Dropped == 0 {
			if w.Requests > 0 {
				cleanP50 = append(cleanP50, w.LatencyMs.P50)
			}
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		peak = max(peak, w.InFlight)
		if w.Requests > 0 {
			dropP50 = append(dropP50, w.LatencyMs.P50)
		}
		if d := w.Duration().Seconds(); d > 0 {
			dropRate = append(dropRate, (sent+float64(w.Dropped))/d)
		}
		if f := w.Probes.HostForeignCPU; f != nil {
			foreign = append(foreign, *f)
		}
	}
	if dropped == 0 || intended < float64(o.MinIntended) {
		return Finding{}, false
	}
	share := dropped / intended
	if share < o.Warning {
		return Finding{}, false
	}
	sev := Warning
	if share >= o.Critical {
		sev = Critical
	}
	f := Finding{
		Kind: KindRateMissed, Severity: sev, Incarnation: inc.num,
		Evidence: Evidence{
			Unit: "share of intended starts",
			Notes: map[string]float64{
				"dropped": dropped, "intended": intended, "dropped_share": share,
				"peak_in_flight": float64(peak),
			},
		},
	}
	f.Evidence.FirstWindow, f.Evidence.LastWindow = inc.span(first, last)
	f.Evidence.After = share
	if maxVUs > 0 {
		f.Evidence.Notes["max_vus"] = float64(maxVUs)
	}
	rate := 0.0
	if len(dropRate) > 0 {
		rate = a.medianOf(dropRate)
		f.Evidence.Notes["intended_rate"] = rate
	}
	p50 := math.NaN()
	if len(dropP50) > 0 {
		p50 = a.medianOf(dropP50)
		f.Evidence.Notes["p50_ms"] = p50
	}
	windows := fmt.Sprintf("window %d", f.Evidence.FirstWindow)
	if f.Evidence.LastWindow != f.Evidence.FirstWindow {
		windows = fmt.Sprintf("windows %d–%d", f.Evidence.FirstWindow, f.Evidence.LastWindow)
	}
	var why string
	switch {
	case maxVUs > 0 && peak < maxVUs && (math.IsNaN(p50) || rate*p50/1000 < 0.5*float64(maxVUs)):
		f.Evidence.Cause = CauseDriverCPU
		why = fmt.Sprintf("at most %d of max_vus %d were waiting on the target: longhaul itself was short of CPU to start them on time", peak, maxVUs)
		if len(foreign) > 0 {
			fc := a.medianOf(foreign)
			f.Evidence.Notes["host_foreign_cpu"] = fc
			why += fmt.Sprintf(" (other processes took %s of the host's CPU)", fmtPct(fc))
		}
	case len(cleanP50) > 0 && !math.IsNaN(p50) && p50 > 2*a.medianOf(cleanP50):
		f.Evidence.Cause = CauseTargetLatency
		base := a.medianOf(cleanP50)
		f.Evidence.Before = base
		why = fmt.Sprintf("the target's p50 rose from %s to %s, so all %d VUs were waiting on it: it cannot serve this rate", fmtMs(base), fmtMs(p50), max(peak, maxVUs))
	default:
		f.Evidence.Cause = CauseMaxVUs
		if math.IsNaN(p50) || rate == 0 {
			why = "every VU was busy (max_vus reached)"
		} else {
			need := rate * p50 / 1000
			why = fmt.Sprintf("max_vus reached: at %s/s with a p50 of %s the rate needs about %s VUs in flight", fmtCount(rate), fmtMs(p50), fmtCount(math.Ceil(need)))
			if maxVUs > 0 {
				why += fmt.Sprintf(" (max_vus %d): raise max_vus, or lower the rate to what the target serves", maxVUs)
			}
		}
	}
	f.Summary = fmt.Sprintf("the open model missed its rate: %s of %s intended starts dropped (%s) in %s — %s",
		fmtCount(dropped), fmtCount(intended), fmtPct(share), windows, why)
	return f, true
}
