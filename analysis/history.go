package analysis

import (
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// This file applies the change points (changepoint.go) to a schedule's
// history: one value per run and metric, the runs in time order.

// HistoryMetrics are the metrics a history searches for change points by
// default, in report order.
var HistoryMetrics = []string{
	MetricP50Ms, MetricP95Ms, MetricP99Ms, MetricRPS, MetricCPUMicrosPerReq, MetricHeapEndBytes,
}

// MetricHeapEndBytes is the post-GC heap at the end of a run (HeapAtEnd).
const MetricHeapEndBytes = "heap_end_bytes"

// Directions of a change point.
const (
	Regression  = "regression"
	Improvement = "improvement"
)

// SeriesRun is one run in a history: its id, commit, and its values by
// metric (a metric the run did not measure is absent).
type SeriesRun struct {
	ID     string
	Commit string
	Values map[string]float64
}

// RunChangePoint is a change point of one metric in a history. Index is the
// position of the first run after the change in the runs given (RunID,
// Commit: that run); Before and After the means of the segments either
// side, Change After/Before − 1, PValue the t-test's; Direction is
// Regression or Improvement by the metric's sense.
type RunChangePoint struct {
	Metric    string  `json:"metric"`
	Index     int     `json:"index"`
	RunID     string  `json:"run_id"`
	Commit    string  `json:"commit"`
	Before    float64 `json:"before"`
	After     float64 `json:"after"`
	Change    float64 `json:"change"`
	PValue    float64 `json:"p_value"`
	Direction string  `json:"direction"`
}

// HistoryChangePoints finds the change points of each metric over runs (in
// time order), metric by metric in the order given, each metric's in run
// order. A run without the metric is left out of that metric's series.
func HistoryChangePoints(runs []SeriesRun, metrics []string, o ChangePointOptions) []RunChangePoint {
	var out []RunChangePoint
	for _, m := range metrics {
		xs, at := metricSeries(runs, m)
		out = append(out, pointsOf(runs, m, at, FindChangePoints(xs, o))...)
	}
	return out
}

// NewChangePoints are the change points that appear when the last of runs
// is added to the others: what a notification reports. The series of each
// metric is extended incrementally (ChangePointSeries).
func NewChangePoints(runs []SeriesRun, metrics []string, o ChangePointOptions) []RunChangePoint {
	if len(runs) == 0 {
		return nil
	}
	var out []RunChangePoint
	for _, m := range metrics {
		xs, at := metricSeries(runs, m)
		if len(at) == 0 || at[len(at)-1] != len(runs)-1 {
			continue // the new run did not measure m: nothing changed
		}
		s := NewChangePointSeries(o)
		s.Add(xs[:len(xs)-1]...)
		old := map[string]bool{}
		for _, p := range pointsOf(runs, m, at, s.ChangePoints()) {
			old[p.RunID] = true
		}
		s.Add(xs[len(xs)-1])
		for _, p := range pointsOf(runs, m, at, s.ChangePoints()) {
			if !old[p.RunID] {
				out = append(out, p)
			}
		}
	}
	return out
}

// metricSeries is metric m's values over runs, and the index in runs of each.
func metricSeries(runs []SeriesRun, m string) (xs []float64, at []int) {
	for i, r := range runs {
		if v, ok := r.Values[m]; ok {
			xs = append(xs, v)
			at = append(at, i)
		}
	}
	return xs, at
}

func pointsOf(runs []SeriesRun, m string, at []int, cps []ChangePoint) []RunChangePoint {
	var out []RunChangePoint
	for _, cp := range cps {
		i := at[cp.Index]
		dir := Improvement
		if (cp.Change > 0) != HigherIsBetter(m) {
			dir = Regression
		}
		out = append(out, RunChangePoint{
			Metric: m, Index: i, RunID: runs[i].ID, Commit: runs[i].Commit,
			Before: cp.Before, After: cp.After, Change: cp.Change, PValue: cp.PValue, Direction: dir,
		})
	}
	return out
}

// HeapAtEnd returns the last post-GC heap reading of a run after warm-up
// (forced-GC readings only, when there are any) and the Theil–Sen slope of
// the readings in bytes per hour; ok is false without two readings.
func HeapAtEnd(ws []window.Window, warmup time.Duration) (endBytes, slopePerHour float64, ok bool) {
	a := &analyzer{opts: Options{Warmup: warmup}}
	var xs, ys, fx, fy []float64
	var t0 time.Time
	for _, inc := range a.split(ws) {
		for _, w := range inc.ws {
			h := w.Probes.HeapBytes
			if h == nil {
				continue
			}
			if t0.IsZero() {
				t0 = w.End
			}
			x, y := w.End.Sub(t0).Hours(), float64(*h)
			xs, ys = append(xs, x), append(ys, y)
			if w.Probes.HeapForcedGC {
				fx, fy = append(fx, x), append(fy, y)
			}
		}
	}
	if len(fy) >= 2 {
		xs, ys = fx, fy
	}
	if len(ys) < 2 {
		return 0, 0, false
	}
	line, fit := TheilSen(xs, ys)
	if !fit {
		return ys[len(ys)-1], 0, true
	}
	return ys[len(ys)-1], line.Slope, true
}
