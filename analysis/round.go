package analysis

import (
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// Metrics lists the metrics a comparison decides, in report order.
var Metrics = []string{
	MetricP50Ms, MetricP95Ms, MetricP99Ms, MetricRPS, MetricCPUMicrosPerReq,
	MetricAllocBytesPerReq, MetricGCPer1kRequests,
	MetricHeapBytes, MetricRSSBytes, MetricRowsReadPerRequest,
}

// RoundValues are one round's values of the compared metrics, by metric
// name (Metrics); a metric the round did not measure is absent.
type RoundValues map[string]float64

// RoundValuesOf reduces a round's windows to one value per metric, warm-up
// excluded as Analyze excludes it (the windows that start within warmup of
// each incarnation's first, and at least the first window):
//   - p50, p95, p99 from the merged histogram of the remaining windows
//     (never an average of percentiles);
//   - rps: their requests over their summed durations;
//   - cpu_us_per_request: their target CPU seconds over their requests;
//   - alloc_bytes_per_request: the bytes a Go target allocated over the
//     requests of the windows that had the reading; gc_per_1k_requests its
//     GC cycles likewise, per 1,000 requests;
//   - rows_read_per_request: rows read over requests, likewise;
//   - heap_bytes and rss_bytes: the median of their readings (forced-GC
//     heap readings only, when there are any).
func RoundValuesOf(ws []window.Window, warmup time.Duration) (RoundValues, error) {
	a := &analyzer{opts: Options{Warmup: warmup}}
	var kept []window.Window
	for _, inc := range a.split(ws) {
		for _, w := range inc.ws {
			kept = append(kept, *w)
		}
	}
	return valuesOf(kept, nil)
}

// PairValuesOf reduces the two rounds of a pair, a and b, to one value per
// metric each, over the same stretch of their request sequences: from the
// later of the two ends of warm-up to the earlier of the two ends, counted
// in requests since each round began.
//
// Subtleness ahead: both rounds of a pair send the same seeded sequence,
// but a round is bounded by time, not by requests. A target whose cost per
// request grows with its data (every create adds a row, and the demo's CPU
// per request doubles over a 15 s round) then costs more per request in the
// round that got further: a round slowed by foreign load does fewer
// requests, ends on a smaller table and looks cheaper. Cutting both rounds
// at the same request count compares the same requests against the same
// data, so the ratio B/A is the builds' difference and not how far each
// round got. A window that straddles a cut counts in proportion to its
// requests inside the range (CPU, rows read, requests, duration); the
// latency percentiles merge the windows at least half inside it.
//
// When either round restarted (more than one incarnation) or the common
// stretch is under half of the shorter round's, the rounds are reduced
// separately, as RoundValuesOf does.
func PairValuesOf(a, b []window.Window, warmup time.Duration) (RoundValues, RoundValues, error) {
	ra, okA := requestRange(a, warmup)
	rb, okB := requestRange(b, warmup)
	lo, hi := max(ra.warm, rb.warm), min(ra.total, rb.total)
	if !okA || !okB || float64(hi-lo) < 0.5*float64(min(ra.total-ra.warm, rb.total-rb.warm)) {
		va, err := RoundValuesOf(a, warmup)
		if err != nil {
			return nil, nil, err
		}
		vb, err := RoundValuesOf(b, warmup)
		return va, vb, err
	}
	va, err := valuesOf(ra.ws, ra.fractions(lo, hi))
	if err != nil {
		return nil, nil, err
	}
	vb, err := valuesOf(rb.ws, rb.fractions(lo, hi))
	return va, vb, err
}

// roundRange is a round's windows in order (warm-up included) with the
// requests counted before its first kept window (warm) and in all (total).
type roundRange struct {
	ws          []window.Window
	warm, total int64
}

// requestRange lays out a round of one incarnation; ok is false otherwise.
func requestRange(ws []window.Window, warmup time.Duration) (roundRange, bool) {
	warm := (&analyzer{opts: Options{Warmup: warmup}}).split(ws)
	all := (&analyzer{}).split(ws) // the same windows, none left out
	if len(warm) != 1 || len(all) != 1 || len(warm[0].ws) == 0 {
		return roundRange{}, false
	}
	r := roundRange{}
	for i, w := range all[0].ws {
		if i == warm[0].warmup {
			r.warm = r.total
		}
		r.ws = append(r.ws, *w)
		r.total += w.Requests
	}
	return r, r.total > r.warm
}

// fractions is, per window, the share of its requests that fall in (lo, hi]
// of the round's request count.
func (r roundRange) fractions(lo, hi int64) []float64 {
	f := make([]float64, len(r.ws))
	var at int64
	for i, w := range r.ws {
		from, to := at, at+w.Requests
		at = to
		if w.Requests <= 0 {
			continue
		}
		in := min(to, hi) - max(from, lo)
		if in > 0 {
			f[i] = float64(in) / float64(w.Requests)
		}
	}
	return f
}

// valuesOf reduces windows to one value per metric, each window weighted by
// its fraction (nil: every window whole). See RoundValuesOf.
func valuesOf(ws []window.Window, frac []float64) (RoundValues, error) {
	v := RoundValues{}
	weight := func(i int) float64 {
		if frac == nil {
			return 1
		}
		return frac[i]
	}
	var hist []window.Window
	for i, w := range ws {
		if weight(i) >= 0.5 {
			hist = append(hist, w)
		}
	}
	if len(hist) == 0 {
		return v, nil
	}
	sum, err := window.Merge(hist)
	if err != nil {
		return v, fmt.Errorf("merge round windows: %w", err)
	}
	var (
		reqs, secs         float64
		cpuSecs, cpuReqs   float64
		rowsRead, rowsReqs float64
		alloc, allocReqs   float64
		gcs, gcReqs        float64
		rss, heap, forced  []float64
	)
	for i, w := range ws {
		f := weight(i)
		if f <= 0 {
			continue
		}
		p := w.Probes
		n := f * float64(w.Requests)
		if !w.Gap {
			reqs += n
			secs += f * w.Duration().Seconds()
		}
		switch {
		case p.CPUSeconds != nil && n > 0:
			cpuSecs += f * *p.CPUSeconds
			cpuReqs += n
		case p.CPUMicrosPerRequest != nil && n > 0:
			cpuSecs += *p.CPUMicrosPerRequest * n / 1e6
			cpuReqs += n
		}
		switch {
		case p.AllocBytes != nil && n > 0:
			alloc += f * float64(*p.AllocBytes)
			allocReqs += n
		case p.AllocBytesPerRequest != nil && n > 0:
			alloc += *p.AllocBytesPerRequest * n
			allocReqs += n
		}
		switch {
		case p.GCCycles != nil && n > 0:
			gcs += f * float64(*p.GCCycles)
			gcReqs += n
		case p.GCPer1kRequests != nil && n > 0:
			gcs += *p.GCPer1kRequests * n / 1000
			gcReqs += n
		}
		if p.Database != nil && n > 0 {
			rowsRead += p.Database.RowsReadPerRequest * n
			rowsReqs += n
		}
		if p.RSSBytes != nil {
			rss = append(rss, float64(*p.RSSBytes))
		}
		if p.HeapBytes != nil {
			heap = append(heap, float64(*p.HeapBytes))
			if p.HeapForcedGC {
				forced = append(forced, float64(*p.HeapBytes))
			}
		}
	}
	if sum.Requests > 0 {
		v[MetricP50Ms] = sum.LatencyMs.P50
		v[MetricP95Ms] = sum.LatencyMs.P95
		v[MetricP99Ms] = sum.LatencyMs.P99
		v[MetricRPS] = sum.RPS
		if frac != nil && secs > 0 {
			v[MetricRPS] = reqs / secs
		}
	}
	if cpuReqs > 0 && cpuSecs > 0 {
		v[MetricCPUMicrosPerReq] = cpuSecs * 1e6 / cpuReqs
	}
	if allocReqs > 0 && alloc > 0 {
		v[MetricAllocBytesPerReq] = alloc / allocReqs
	}
	if gcReqs > 0 && gcs > 0 {
		v[MetricGCPer1kRequests] = gcs * 1000 / gcReqs
	}
	if rowsReqs > 0 && rowsRead > 0 {
		v[MetricRowsReadPerRequest] = rowsRead / rowsReqs
	}
	if len(rss) > 0 {
		v[MetricRSSBytes] = Median(rss)
	}
	if len(forced) > 0 {
		heap = forced
	}
	if len(heap) > 0 {
		v[MetricHeapBytes] = Median(heap)
	}
	return v, nil
}

// Pair is one pair of rounds of a comparison: A's and B's values.
type Pair struct {
	A, B RoundValues
	// Disturbed: either round had foreign load on the host.
	Disturbed bool
}

// ComparePairs decides every metric in Metrics from the pairs
// (PairedVerdict) in two families: the primary metrics
// (PairedOptions.Primary, DefaultPrimary), whose intervals hold jointly
// (PairedOptions.Family is the number of them it can decide: those with
// enough undisturbed pairs measured on both sides), and the others, whose
// intervals hold jointly among themselves. Each family then carries a
// false better or worse in at most 5 % of A-vs-A comparisons, and a metric
// added to the second family costs the first nothing.
func ComparePairs(pairs []Pair, opts PairedOptions) []Verdict {
	byMetric, families := splitPairs(pairs, opts)
	out := make([]Verdict, 0, len(Metrics))
	for _, m := range Metrics {
		o := opts
		primary := opts.primary(m)
		if o.Family == 0 {
			o.Family = families[primary]
		}
		v := PairedVerdict(m, byMetric[m], o)
		v.Primary = primary
		out = append(out, v)
	}
	return out
}

// splitPairs is each metric's pair values, and per family (true: primary)
// the number of its metrics with enough usable pairs to be decided.
func splitPairs(pairs []Pair, opts PairedOptions) (map[string][]PairValues, map[bool]int) {
	byMetric := make(map[string][]PairValues, len(Metrics))
	families := map[bool]int{}
	for _, m := range Metrics {
		pv := make([]PairValues, len(pairs))
		usable := 0
		for i, p := range pairs {
			pv[i] = PairValues{A: p.A[m], B: p.B[m], Disturbed: p.Disturbed}
			if pv[i].usable() {
				usable++
			}
		}
		byMetric[m] = pv
		if usable >= opts.minPairs() {
			families[opts.primary(m)]++
		}
	}
	return byMetric, families
}
