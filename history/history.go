// Package history is the view across the runs of one schedule: one row per
// run (when, which commit, how it ended, its latency, throughput, CPU per
// request, heap) and the change points between them (package analysis).
// A compare schedule's history has one row per comparison instead (the
// commits of A and B, and per metric the B/A ratio with its verdict), and
// its change points are those of each metric's nightly B/A ratio.
//
// Recipe:
//
//  1. Build(ctx, st, "nightly", Options{}) reads the schedule's runs (or
//     comparisons) from the store, oldest first, and reduces each to its
//     values.
//  2. The History holds the rows and the change points per metric; runs
//     that failed, were cancelled or skipped are listed but left out of
//     the series.
//  3. WriteText or WriteJSON print it (`longhaul history NAME`).
package history

import (
	"context"
	"fmt"
	"math"
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
	ListComparisons(ctx context.Context, opts store.ListOptions) ([]store.Comparison, error)
	Counts(ctx context.Context, runIDs []string) (map[string]store.RunCounts, error)
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
}

// Options tune Build. The zero value is usable.
type Options struct {
	// Metrics to search for change points (analysis.HistoryMetrics when
	// empty, CompareDefaultMetrics for a compare schedule); each must be
	// one of Metrics (CompareMetrics).
	Metrics []string
	// Last keeps only the newest Last rows (0: all).
	Last int
	// ChangePoints tunes the detection (zero fields: Otava's defaults).
	ChangePoints analysis.ChangePointOptions
}

// Metrics are the metrics a history has for each run.
var Metrics = []string{
	analysis.MetricP50Ms, analysis.MetricP95Ms, analysis.MetricP99Ms, analysis.MetricRPS,
	analysis.MetricCPUMicrosPerReq, analysis.MetricHeapEndBytes, analysis.MetricHeapBytes,
	analysis.MetricRSSBytes, analysis.MetricRowsReadPerRequest,
	analysis.MetricAllocBytesPerReq, analysis.MetricGCPer1kRequests,
}

// CompareMetrics are the metrics a compare schedule's history has for each
// comparison (those a comparison has verdicts for), as B/A ratios.
var CompareMetrics = []string{
	analysis.MetricP50Ms, analysis.MetricP95Ms, analysis.MetricP99Ms, analysis.MetricRPS,
	analysis.MetricCPUMicrosPerReq, analysis.MetricHeapBytes, analysis.MetricRSSBytes, analysis.MetricRowsReadPerRequest,
	analysis.MetricAllocBytesPerReq, analysis.MetricGCPer1kRequests,
}

// CompareDefaultMetrics are the ratios a compare schedule's history
// searches for change points by default.
var CompareDefaultMetrics = []string{
	analysis.MetricP50Ms, analysis.MetricP95Ms, analysis.MetricP99Ms, analysis.MetricRPS, analysis.MetricCPUMicrosPerReq,
}

// ErrUnknownMetric is returned for a metric not in Metrics (CompareMetrics
// for a compare schedule).
var ErrUnknownMetric = fmt.Errorf("unknown metric (use one of %v; of a compare schedule, one of %v)", Metrics, CompareMetrics)

// Kinds of history: what a schedule's action makes.
const (
	KindSoak    = "soak"
	KindCompare = "compare"
)

// Run is one row of a history: a run of a soak schedule, or a comparison of
// a compare schedule (Comparison set; RunID is then the comparison's id).
// Values hold the run's metrics, a comparison's B/A ratios (absent: not
// measured); Excluded is set for a row left out of the series (it did not
// complete: failed, cancelled, or a firing skipped because the previous run
// was still going, whose Reason names that run).
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

	// Comparison marks a comparison's row. CommitA and CommitB are the
	// commits each side was built from (Commit is CommitB: the candidate
	// is what moves from night to night); Pairs the pairs asked for;
	// Verdicts the comparison's verdicts by metric (Values holds their
	// Ratio).
	Comparison bool                        `json:"comparison,omitempty"`
	CommitA    string                      `json:"commit_a,omitempty"`
	CommitB    string                      `json:"commit_b,omitempty"`
	Pairs      int                         `json:"pairs,omitempty"`
	Verdicts   map[string]analysis.Verdict `json:"-"`
}

// History is a schedule's runs (or comparisons), oldest first, and their
// change points. Kind is KindSoak or KindCompare.
type History struct {
	Schedule     string                    `json:"schedule"`
	Kind         string                    `json:"kind"`
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

// page is how many rows Build reads per query.
const page = 500

// Build reads the runs of schedule from st and finds the change points. A
// schedule with comparisons is a compare schedule: its history is of the
// comparisons (its skipped firings are comparisons with status skipped).
func Build(ctx context.Context, st Store, schedule string, o Options) (History, error) {
	h := History{Schedule: schedule, Kind: KindSoak, Metrics: o.Metrics}
	cs, err := st.ListComparisons(ctx, store.ListOptions{Schedule: schedule, Limit: 1})
	if err != nil {
		return h, fmt.Errorf("history of %s: %w", schedule, err)
	}
	known, defaults := Metrics, analysis.HistoryMetrics
	if len(cs) > 0 {
		h.Kind, known, defaults = KindCompare, CompareMetrics, CompareDefaultMetrics
	}
	if len(h.Metrics) == 0 {
		h.Metrics = defaults
	}
	for _, m := range h.Metrics {
		if !slices.Contains(known, m) {
			return h, fmt.Errorf("metric %q of a %s schedule: %w", m, h.Kind, ErrUnknownMetric)
		}
	}
	if h.Kind == KindCompare {
		if err := h.readComparisons(ctx, st, o.Last); err != nil {
			return h, err
		}
	} else if err := h.readRuns(ctx, st, o.Last); err != nil {
		return h, err
	}
	h.ChangePoints = analysis.HistoryChangePoints(h.Series(), h.Metrics, o.ChangePoints)
	// Index the points by the rows (excluded runs included), not the series.
	for i, p := range h.ChangePoints {
		h.ChangePoints[i].Index = slices.IndexFunc(h.Runs, func(r Run) bool { return r.RunID == p.RunID })
	}
	return h, nil
}

// readRuns reads a soak schedule's runs, the newest last of them.
func (h *History) readRuns(ctx context.Context, st Store, last int) error {
	schedule := h.Schedule
	var runs []store.Run
	for off := 0; ; off += page {
		rs, err := st.ListRuns(ctx, store.ListOptions{Schedule: schedule, Limit: page, Offset: off})
		if err != nil {
			return fmt.Errorf("history of %s: %w", schedule, err)
		}
		runs = append(runs, rs...)
		if len(rs) < page || (last > 0 && len(runs) >= last) {
			break
		}
	}
	if last > 0 && len(runs) > last {
		runs = runs[:last]
	}
	slices.Reverse(runs) // oldest first
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	counts, err := st.Counts(ctx, ids)
	if err != nil {
		return fmt.Errorf("history of %s: %w", schedule, err)
	}
	for _, r := range runs {
		row, err := runRow(ctx, st, r, counts[r.ID])
		if err != nil {
			return err
		}
		h.Runs = append(h.Runs, row)
	}
	return nil
}

// readComparisons reads a compare schedule's comparisons, the newest last
// of them.
func (h *History) readComparisons(ctx context.Context, st Store, last int) error {
	var cs []store.Comparison
	for off := 0; ; off += page {
		got, err := st.ListComparisons(ctx, store.ListOptions{Schedule: h.Schedule, Limit: page, Offset: off})
		if err != nil {
			return fmt.Errorf("history of %s: %w", h.Schedule, err)
		}
		cs = append(cs, got...)
		if len(got) < page || (last > 0 && len(cs) >= last) {
			break
		}
	}
	if last > 0 && len(cs) > last {
		cs = cs[:last]
	}
	slices.Reverse(cs) // oldest first
	for _, c := range cs {
		h.Runs = append(h.Runs, comparisonRow(c))
	}
	return nil
}

// comparisonRow reduces a comparison to its row: per metric its verdict and
// the verdict's B/A ratio (the geometric mean of the pairs' ratios).
func comparisonRow(c store.Comparison) Run {
	start := c.StartedAt
	if start.IsZero() {
		start = c.CreatedAt
	}
	row := Run{
		RunID: c.ID, Start: start, Commit: c.B.Commit, Status: c.Status, Reason: c.Reason,
		Values: map[string]float64{}, Findings: map[analysis.Severity]int{}, Excluded: !Included(c.Status),
		Comparison: true, CommitA: c.A.Commit, CommitB: c.B.Commit, Pairs: c.Pairs,
		Verdicts: map[string]analysis.Verdict{},
	}
	for _, v := range c.Verdicts {
		row.Verdicts[v.Metric] = v
		if v.Pairs > 0 && v.Ratio > 0 && !math.IsInf(v.Ratio, 0) {
			row.Values[v.Metric] = v.Ratio
		}
	}
	return row
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
