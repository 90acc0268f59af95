// Package history is the view across the runs of one schedule: one row per
// run (when, which commit, how it ended, its latency, throughput, CPU per
// request, heap) and the change points between them (package analysis).
//
// Recipe:
//
//  1. Build(ctx, st, "nightly", Options{}) reads the schedule's runs from
//     the store, oldest first, and reduces each to its values.
//  2. The History holds the rows and the change points per metric; runs
//     that failed or were cancelled are listed but left out of the series.
//  3. WriteText or WriteJSON print it (`longhaul history NAME`).
package history

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// Store is what a history reads (store.Store satisfies it).
type Store interface {
	ListRuns(ctx context.Context, opts store.ListOptions) ([]store.Run, error)
	Counts(ctx context.Context, runIDs []string) (map[string]store.RunCounts, error)
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
}

// Options tune Build. The zero value is usable.
type Options struct {
	// Metrics to search for change points (analysis.HistoryMetrics when
	// empty); each must be one of Metrics.
	Metrics []string
	// Last keeps only the newest Last runs (0: all).
	Last int
	// ChangePoints tunes the detection (zero fields: Otava's defaults).
	ChangePoints analysis.ChangePointOptions
}

// Metrics are the metrics a history has for each run.
var Metrics = []string{
	analysis.MetricP50Ms, analysis.MetricP95Ms, analysis.MetricP99Ms, analysis.MetricRPS,
	analysis.MetricCPUMicrosPerReq, analysis.MetricHeapEndBytes, analysis.MetricHeapBytes,
	analysis.MetricRSSBytes, analysis.MetricRowsReadPerRequest,
}

// ErrUnknownMetric is returned for a metric not in Metrics.
var ErrUnknownMetric = fmt.Errorf("unknown metric (use one of %v)", Metrics)

// Run is one row of a history. Values hold the run's metrics (absent: not
// measured); Excluded is set for a run left out of the series (it did not
// complete).
type Run struct {
	RunID    string                    `json:"run_id"`
	Start    time.Time                 `json:"start"`
	Commit   string                    `json:"commit"`
	Status   store.Status              `json:"status"`
	Reason   string                    `json:"reason,omitempty"`
	Windows  int                       `json:"windows"`
	Values   map[string]float64        `json:"-"`
	Findings map[analysis.Severity]int `json:"findings"`
	Excluded bool                      `json:"excluded,omitempty"`
	// HeapSlopeBytesPerHour is the post-GC heap's slope over the run.
	HeapSlopeBytesPerHour *float64 `json:"heap_slope_bytes_per_hour,omitempty"`
}

// History is a schedule's runs, oldest first, and their change points.
type History struct {
	Schedule     string                    `json:"schedule"`
	Runs         []Run                     `json:"runs"`
	Metrics      []string                  `json:"metrics"`
	ChangePoints []analysis.RunChangePoint `json:"change_points"`
}

// Series is the runs in the series (those not excluded), oldest first, as
// analysis reads them.
func (h History) Series() []analysis.SeriesRun {
	var out []analysis.SeriesRun
	for _, r := range h.Runs {
		if !r.Excluded {
			out = append(out, analysis.SeriesRun{ID: r.RunID, Commit: r.Commit, Values: r.Values})
		}
	}
	return out
}

// Included reports whether a run of status s belongs in the series.
func Included(s store.Status) bool { return s == store.Completed }

// Build reads the runs of schedule from st and finds the change points.
func Build(ctx context.Context, st Store, schedule string, o Options) (History, error) {
	h := History{Schedule: schedule, Metrics: o.Metrics}
	if len(h.Metrics) == 0 {
		h.Metrics = analysis.HistoryMetrics
	}
	for _, m := range h.Metrics {
		if !slices.Contains(Metrics, m) {
			return h, fmt.Errorf("metric %q: %w", m, ErrUnknownMetric)
		}
	}
	var runs []store.Run
	const page = 500
	for off := 0; ; off += page {
		rs, err := st.ListRuns(ctx, store.ListOptions{Schedule: schedule, Limit: page, Offset: off})
		if err != nil {
			return h, fmt.Errorf("history of %s: %w", schedule, err)
		}
		runs = append(runs, rs...)
		if len(rs) < page || (o.Last > 0 && len(runs) >= o.Last) {
			break
		}
	}
	if o.Last > 0 && len(runs) > o.Last {
		runs = runs[:o.Last]
	}
	slices.Reverse(runs) // oldest first
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	counts, err := st.Counts(ctx, ids)
	if err != nil {
		return h, fmt.Errorf("history of %s: %w", schedule, err)
	}
	for _, r := range runs {
		row, err := runRow(ctx, st, r, counts[r.ID])
		if err != nil {
			return h, err
		}
		h.Runs = append(h.Runs, row)
	}
	h.ChangePoints = analysis.HistoryChangePoints(h.Series(), h.Metrics, o.ChangePoints)
	// Index the points by the rows (excluded runs included), not the series.
	for i, p := range h.ChangePoints {
		h.ChangePoints[i].Index = slices.IndexFunc(h.Runs, func(r Run) bool { return r.RunID == p.RunID })
	}
	return h, nil
}

// runRow reduces one run to its row.
func runRow(ctx context.Context, st Store, r store.Run, c store.RunCounts) (Run, error) {
	start := r.StartedAt
	if start.IsZero() {
		start = r.CreatedAt
	}
	row := Run{
		RunID: r.ID, Start: start, Commit: r.Commit, Status: r.Status, Reason: r.Reason,
		Windows: c.Windows - c.Gaps, Values: map[string]float64{}, Findings: c.Findings,
		Excluded: !Included(r.Status),
	}
	if row.Findings == nil {
		row.Findings = map[analysis.Severity]int{}
	}
	ws, err := st.Windows(ctx, r.ID, store.AllWindows)
	if err != nil {
		return row, fmt.Errorf("history: windows of run %s: %w", r.ID, err)
	}
	warmup := time.Duration(0)
	if s, err := scenarios.Parse([]byte(r.Scenario), r.Name+".yaml"); err == nil {
		warmup = s.Load.Warmup.D()
	}
	vs, err := analysis.RoundValuesOf(ws, warmup)
	if err != nil {
		return row, fmt.Errorf("history: run %s: %w", r.ID, err)
	}
	for k, v := range vs {
		row.Values[k] = v
	}
	if end, slope, ok := analysis.HeapAtEnd(ws, warmup); ok {
		row.Values[analysis.MetricHeapEndBytes] = end
		row.HeapSlopeBytesPerHour = &slope
	}
	return row, nil
}
