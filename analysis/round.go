package analysis

import (
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// Metrics lists the metrics a comparison decides, in report order.
var Metrics = []string{
	MetricP50Ms, MetricP95Ms, MetricP99Ms, MetricRPS, MetricCPUMicrosPerReq,
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
	v := RoundValues{}
	if len(kept) == 0 {
		return v, nil
	}
	sum, err := window.Merge(kept)
	if err != nil {
		return v, fmt.Errorf("merge round windows: %w", err)
	}
	if sum.Requests > 0 {
		v[MetricP50Ms] = sum.LatencyMs.P50
		v[MetricP95Ms] = sum.LatencyMs.P95
		v[MetricP99Ms] = sum.LatencyMs.P99
		v[MetricRPS] = sum.RPS
	}
	var (
		cpuSecs, cpuReqs   float64
		rowsRead, rowsReqs float64
		rss, heap, forced  []float64
	)
	for _, w := range kept {
		p := w.Probes
		reqs := float64(w.Requests)
		switch {
		case p.CPUSeconds != nil && reqs > 0:
			cpuSecs += *p.CPUSeconds
			cpuReqs += reqs
		case p.CPUMicrosPerRequest != nil && reqs > 0:
			cpuSecs += *p.CPUMicrosPerRequest * reqs / 1e6
			cpuReqs += reqs
		}
		if p.Database != nil && reqs > 0 {
			rowsRead += p.Database.RowsReadPerRequest * reqs
			rowsReqs += reqs
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
	if cpuReqs > 0 && cpuSecs > 0 {
		v[MetricCPUMicrosPerReq] = cpuSecs * 1e6 / cpuReqs
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

// ComparePairs decides every metric in Metrics from the pairs (PairedVerdict).
func ComparePairs(pairs []Pair, opts PairedOptions) []Verdict {
	out := make([]Verdict, 0, len(Metrics))
	for _, m := range Metrics {
		pv := make([]PairValues, len(pairs))
		for i, p := range pairs {
			pv[i] = PairValues{A: p.A[m], B: p.B[m], Disturbed: p.Disturbed}
		}
		out = append(out, PairedVerdict(m, pv, opts))
	}
	return out
}
