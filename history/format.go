package history

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
)

// JSON is the object `longhaul history --format json` prints. Kind is
// KindSoak (Runs has the rows) or KindCompare (Comparisons has them, Runs
// is empty); Excluded lists the ids of the rows left out of the series, and
// a change point's run_id is then a comparison's id.
type JSON struct {
	Type         string                    `json:"type"` // "history"
	Schedule     string                    `json:"schedule"`
	Kind         string                    `json:"kind"`
	Metrics      []string                  `json:"metrics"`
	Runs         []RunJSON                 `json:"runs"`
	Comparisons  []ComparisonJSON          `json:"comparisons,omitempty"`
	Excluded     []string                  `json:"excluded"`
	ChangePoints []analysis.RunChangePoint `json:"change_points"`
}

// ComparisonJSON is one comparison of a compare schedule's history.
// Metrics has, per metric of the history, the B/A ratio and its verdict
// (null when the comparison has no verdict for it: it did not complete).
type ComparisonJSON struct {
	ComparisonID string                `json:"comparison_id"`
	Start        time.Time             `json:"start"`
	CommitA      string                `json:"commit_a"`
	CommitB      string                `json:"commit_b"`
	Status       store.Status          `json:"status"`
	Reason       string                `json:"reason,omitempty"`
	Excluded     bool                  `json:"excluded"`
	Pairs        int                   `json:"pairs"`
	Metrics      map[string]*RatioJSON `json:"metrics"`
}

// RatioJSON is one metric of a comparison: the geometric mean of the
// pairs' B/A ratios, its 95 % interval, and the verdict's outcome.
type RatioJSON struct {
	Ratio   float64          `json:"ratio"`
	CI      [2]float64       `json:"ci"`
	Outcome analysis.Outcome `json:"outcome"`
	Pairs   int              `json:"pairs"`
}

// RunJSON is one run of a history in JSON; a metric the run did not
// measure is null.
type RunJSON struct {
	RunID                 string                    `json:"run_id"`
	Start                 time.Time                 `json:"start"`
	Commit                string                    `json:"commit"`
	Status                store.Status              `json:"status"`
	Reason                string                    `json:"reason,omitempty"`
	Excluded              bool                      `json:"excluded"`
	Windows               int                       `json:"windows"`
	P50Ms                 *float64                  `json:"p50_ms"`
	P95Ms                 *float64                  `json:"p95_ms"`
	P99Ms                 *float64                  `json:"p99_ms"`
	RPS                   *float64                  `json:"rps"`
	CPUMicrosPerRequest   *float64                  `json:"cpu_us_per_request"`
	HeapEndBytes          *float64                  `json:"heap_end_bytes"`
	HeapSlopeBytesPerHour *float64                  `json:"heap_slope_bytes_per_hour"`
	RSSBytes              *float64                  `json:"rss_bytes,omitempty"`
	RowsReadPerRequest    *float64                  `json:"rows_read_per_request,omitempty"`
	AllocBytesPerRequest  *float64                  `json:"alloc_bytes_per_request,omitempty"`
	GCPer1kRequests       *float64                  `json:"gc_per_1k_requests,omitempty"`
	Findings              map[analysis.Severity]int `json:"findings"`
}

// ToJSON is h as JSON (never null lists).
func (h History) ToJSON() JSON {
	out := JSON{Type: "history", Schedule: h.Schedule, Kind: h.Kind, Metrics: h.Metrics, Runs: []RunJSON{}, Excluded: []string{}, ChangePoints: h.ChangePoints}
	if out.Kind == "" {
		out.Kind = KindSoak
	}
	if out.ChangePoints == nil {
		out.ChangePoints = []analysis.RunChangePoint{}
	}
	if out.Kind == KindCompare {
		out.Comparisons = []ComparisonJSON{}
	}
	for _, r := range h.Runs {
		if r.Excluded {
			out.Excluded = append(out.Excluded, r.RunID)
		}
		if r.Comparison {
			c := ComparisonJSON{ComparisonID: r.RunID, Start: r.Start, CommitA: r.CommitA, CommitB: r.CommitB, Status: r.Status,
				Reason: r.Reason, Excluded: r.Excluded, Pairs: r.Pairs, Metrics: map[string]*RatioJSON{}}
			for _, m := range h.Metrics {
				c.Metrics[m] = nil
				if v, ok := r.Verdicts[m]; ok {
					c.Metrics[m] = &RatioJSON{Ratio: v.Ratio, CI: v.CI, Outcome: v.Outcome, Pairs: v.Pairs}
				}
			}
			out.Comparisons = append(out.Comparisons, c)
			continue
		}
		v := func(m string) *float64 {
			if x, ok := r.Values[m]; ok {
				return &x
			}
			return nil
		}
		findings := map[analysis.Severity]int{analysis.Critical: 0, analysis.Warning: 0, analysis.Info: 0}
		for k, n := range r.Findings {
			findings[k] = n
		}
		out.Runs = append(out.Runs, RunJSON{
			RunID: r.RunID, Start: r.Start, Commit: r.Commit, Status: r.Status, Reason: r.Reason, Excluded: r.Excluded,
			Windows: r.Windows, P50Ms: v(analysis.MetricP50Ms), P95Ms: v(analysis.MetricP95Ms), P99Ms: v(analysis.MetricP99Ms),
			RPS: v(analysis.MetricRPS), CPUMicrosPerRequest: v(analysis.MetricCPUMicrosPerReq),
			HeapEndBytes: v(analysis.MetricHeapEndBytes), HeapSlopeBytesPerHour: r.HeapSlopeBytesPerHour,
			RSSBytes: v(analysis.MetricRSSBytes), RowsReadPerRequest: v(analysis.MetricRowsReadPerRequest),
			AllocBytesPerRequest: v(analysis.MetricAllocBytesPerReq), GCPer1kRequests: v(analysis.MetricGCPer1kRequests),
			Findings: findings,
		})
	}
	return out
}

// WriteJSON writes h as one JSON object on a line.
func WriteJSON(w io.Writer, h History) error {
	b, err := json.Marshal(h.ToJSON())
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// WriteText writes h as a table of runs (or comparisons), then the rows
// left out of the series with their reasons, then the change points.
func WriteText(w io.Writer, h History) error {
	excluded := 0
	for _, r := range h.Runs {
		if r.Excluded {
			excluded++
		}
	}
	what := "runs"
	if h.Kind == KindCompare {
		what = "comparisons"
	}
	fmt.Fprintf(w, "history of %s: %d %s", h.Schedule, len(h.Runs), what)
	if excluded > 0 {
		fmt.Fprintf(w, " (%d left out of the series: failed, cancelled or skipped)", excluded)
	}
	fmt.Fprintln(w)
	if len(h.Runs) == 0 {
		_, err := fmt.Fprintf(w, "no runs yet (longhaul schedule describe %s shows when it fires)\n", h.Schedule)
		return err
	}
	fmt.Fprintln(w)
	var err error
	if h.Kind == KindCompare {
		err = writeComparisonTable(w, h)
	} else {
		err = writeRunTable(w, h)
	}
	if err != nil {
		return err
	}
	if excluded > 0 {
		fmt.Fprintln(w, "* not in the series:")
		for i, r := range h.Runs {
			if r.Excluded {
				reason := ""
				if r.Reason != "" {
					reason = ": " + r.Reason
				}
				fmt.Fprintf(w, "  %d %s %s%s\n", i+1, r.RunID, r.Status, reason)
			}
		}
	}
	fmt.Fprintln(w)
	if len(h.ChangePoints) == 0 {
		_, err := fmt.Fprintf(w, "no change points in %s\n", strings.Join(h.Metrics, ", "))
		return err
	}
	fmt.Fprintln(w, "change points:")
	row := "run"
	if h.Kind == KindCompare {
		row = "comparison"
	}
	for _, p := range h.ChangePoints {
		at := h.Runs[p.Index]
		commit := ""
		if p.Commit != "" {
			commit = ", commit " + short(p.Commit)
			if at.Comparison {
				commit = ", commit of B " + short(p.Commit)
			}
		}
		metric, before, after := p.Metric, value(p.Metric, p.Before), value(p.Metric, p.After)
		if at.Comparison {
			metric = p.Metric + " B/A"
			before, after = strconv.FormatFloat(p.Before, 'f', 3, 64), strconv.FormatFloat(p.After, 'f', 3, 64)
		}
		fmt.Fprintf(w, "  %s %s %+.1f %% from %s %d (%s%s, %s): %s → %s, p = %.2g\n", metric, p.Direction, 100*p.Change, row, p.Index+1,
			at.Start.UTC().Format("2006-01-02 15:04Z"), commit, p.RunID, before, after, p.PValue)
	}
	return nil
}

// writeComparisonTable writes a compare schedule's rows: per metric the
// B/A ratio and the verdict's outcome.
func writeComparisonTable(w io.Writer, h History) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "#\tSTART\tCOMMIT A\tCOMMIT B\tSTATUS\tPAIRS\t")
	for _, m := range h.Metrics {
		fmt.Fprintf(tw, "%s B/A\t", m)
	}
	fmt.Fprintln(tw)
	for i, r := range h.Runs {
		status := string(r.Status)
		if r.Excluded {
			status += "*"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t", i+1, r.Start.UTC().Format("2006-01-02 15:04Z"), short(r.CommitA), short(r.CommitB), status, r.Pairs)
		for _, m := range h.Metrics {
			fmt.Fprintf(tw, "%s\t", ratioCell(r, m))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// ratioCell is "0.912 better": the metric's B/A ratio and outcome.
func ratioCell(r Run, m string) string {
	v, ok := r.Verdicts[m]
	x, measured := r.Values[m]
	if !ok || !measured {
		return "-"
	}
	outcome := string(v.Outcome)
	if v.Outcome == analysis.NoDifference {
		outcome = "same"
	}
	return strconv.FormatFloat(x, 'f', 3, 64) + " " + outcome
}

// writeRunTable writes a soak schedule's rows.
func writeRunTable(w io.Writer, h History) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tSTART\tCOMMIT\tSTATUS\tWINDOWS\tP50 ms\tP95 ms\tP99 ms\tREQ/S\tCPU µs/req\tHEAP END\tHEAP /h\tFINDINGS\t")
	for i, r := range h.Runs {
		slope := "-"
		if r.HeapSlopeBytesPerHour != nil {
			slope = signed(bytes(*r.HeapSlopeBytesPerHour))
		}
		status := string(r.Status)
		if r.Excluded {
			status += "*"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", i+1, r.Start.UTC().Format("2006-01-02 15:04Z"), short(r.Commit), status, r.Windows,
			num(r.Values, analysis.MetricP50Ms, 2), num(r.Values, analysis.MetricP95Ms, 2), num(r.Values, analysis.MetricP99Ms, 2),
			num(r.Values, analysis.MetricRPS, 1), num(r.Values, analysis.MetricCPUMicrosPerReq, 1), byteCell(r.Values, analysis.MetricHeapEndBytes), slope, findings(r.Findings))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func short(commit string) string {
	if commit == "" {
		return "-"
	}
	return commit[:min(len(commit), 10)]
}

func num(vs map[string]float64, m string, prec int) string {
	v, ok := vs[m]
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func byteCell(vs map[string]float64, m string) string {
	v, ok := vs[m]
	if !ok {
		return "-"
	}
	return bytes(v)
}

func value(m string, v float64) string {
	if strings.HasSuffix(m, "_bytes") || m == analysis.MetricAllocBytesPerReq {
		return bytes(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// bytes formats a byte count in binary units: "812 B", "12.3 MiB".
func bytes(b float64) string {
	neg := b < 0
	b = math.Abs(b)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	u := 0
	for b >= 1024 && u < len(units)-1 {
		b /= 1024
		u++
	}
	s := fmt.Sprintf("%.1f %s", b, units[u])
	if u == 0 {
		s = fmt.Sprintf("%.0f B", b)
	}
	if neg {
		return "-" + s
	}
	return s
}

func signed(s string) string {
	if strings.HasPrefix(s, "-") {
		return s
	}
	return "+" + s
}

func findings(f map[analysis.Severity]int) string {
	var parts []string
	for _, s := range []analysis.Severity{analysis.Critical, analysis.Warning, analysis.Info} {
		if f[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", f[s], s))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
