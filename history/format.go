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

// JSON is the object `longhaul history --format json` prints.
type JSON struct {
	Type         string                    `json:"type"` // "history"
	Schedule     string                    `json:"schedule"`
	Metrics      []string                  `json:"metrics"`
	Runs         []RunJSON                 `json:"runs"`
	Excluded     []string                  `json:"excluded"`
	ChangePoints []analysis.RunChangePoint `json:"change_points"`
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
	Findings              map[analysis.Severity]int `json:"findings"`
}

// ToJSON is h as JSON (never null lists).
func (h History) ToJSON() JSON {
	out := JSON{Type: "history", Schedule: h.Schedule, Metrics: h.Metrics, Runs: []RunJSON{}, Excluded: []string{}, ChangePoints: h.ChangePoints}
	if out.ChangePoints == nil {
		out.ChangePoints = []analysis.RunChangePoint{}
	}
	for _, r := range h.Runs {
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
			Findings: findings,
		})
		if r.Excluded {
			out.Excluded = append(out.Excluded, r.RunID)
		}
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

// WriteText writes h as a table of runs, then the change points.
func WriteText(w io.Writer, h History) error {
	excluded := 0
	for _, r := range h.Runs {
		if r.Excluded {
			excluded++
		}
	}
	fmt.Fprintf(w, "history of %s: %d runs", h.Schedule, len(h.Runs))
	if excluded > 0 {
		fmt.Fprintf(w, " (%d left out of the series: failed or cancelled)", excluded)
	}
	fmt.Fprintln(w)
	if len(h.Runs) == 0 {
		_, err := fmt.Fprintf(w, "no runs yet (longhaul schedule describe %s shows when it fires)\n", h.Schedule)
		return err
	}
	fmt.Fprintln(w)
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
	if excluded > 0 {
		fmt.Fprintln(w, "* not in the series")
	}
	fmt.Fprintln(w)
	if len(h.ChangePoints) == 0 {
		_, err := fmt.Fprintf(w, "no change points in %s\n", strings.Join(h.Metrics, ", "))
		return err
	}
	fmt.Fprintln(w, "change points:")
	for _, p := range h.ChangePoints {
		at := h.Runs[p.Index]
		commit := ""
		if p.Commit != "" {
			commit = ", commit " + short(p.Commit)
		}
		fmt.Fprintf(w, "  %s %s %+.1f %% from run %d (%s%s, %s): %s → %s, p = %.2g\n", p.Metric, p.Direction, 100*p.Change, p.Index+1,
			at.Start.UTC().Format("2006-01-02 15:04Z"), commit, p.RunID, value(p.Metric, p.Before), value(p.Metric, p.After), p.PValue)
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
	if strings.HasSuffix(m, "_bytes") {
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
