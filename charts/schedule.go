package charts

import (
	"context"
	"fmt"
	"html"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/store"
)

// ScheduleSummary is a schedule as the schedules page lists it.
type ScheduleSummary struct {
	Name     string
	Cron     string
	Next     time.Time // zero when paused or unknown
	Paused   bool
	Scenario string
}

// Schedules lists the schedules (from Temporal, which this package does not
// import: the command wires it).
type Schedules func(ctx context.Context) ([]ScheduleSummary, error)

type schedulesView struct {
	Page      page
	Schedules []scheduleRow
	// Unavailable says why there is no list (no Temporal server wired).
	Unavailable string
}

type scheduleRow struct {
	ScheduleSummary
	Href string
}

func (s *Server) schedulesPage(w http.ResponseWriter, r *http.Request) error {
	v := schedulesView{Page: page{Title: "Schedules", Nav: []navLink{{"Runs", "/"}}}}
	if s.opts.Schedules == nil {
		v.Unavailable = "This UI has no Temporal server to ask for schedules; 'longhaul dev' serves this page with them. A schedule's page is /schedules/NAME."
	} else if list, err := s.opts.Schedules(r.Context()); err != nil {
		v.Unavailable = "Cannot list the schedules: " + err.Error()
	} else {
		for _, sc := range list {
			v.Schedules = append(v.Schedules, scheduleRow{ScheduleSummary: sc, Href: "/schedules/" + url.PathEscape(sc.Name)})
		}
	}
	return render(w, "schedules.html", v)
}

type scheduleView struct {
	Page    page
	Name    string
	RunsURL string
	H       history.History
	// Compare is set for a compare schedule: rows are comparisons, values
	// B/A ratios; Heads are then the ratio columns' headings.
	Compare bool
	Heads   []string
	// Row names a row ("run" or "comparison").
	Row    string
	Rows   []historyRow
	Charts []scheduleChart
	// Points are the change points, described.
	Points []pointView
}

type historyRow struct {
	history.Run
	N        int
	Href     string
	Cells    []string
	Findings []badge
}

type pointView struct {
	analysis.RunChangePoint
	N      int
	Href   string
	Change string
	Before string
	After  string
}

type scheduleChart struct {
	Metric string
	Unit   string
	SVG    template.HTML
}

// historyColumns are the metrics of the history table, with their units.
var historyColumns = []struct{ metric, unit string }{
	{analysis.MetricP50Ms, "ms"}, {analysis.MetricP95Ms, "ms"}, {analysis.MetricP99Ms, "ms"}, {analysis.MetricRPS, "req/s"},
	{analysis.MetricCPUMicrosPerReq, "µs/request"}, {analysis.MetricHeapEndBytes, "bytes"},
}

// tickLabel is a value on a calendar chart's axis: the number alone, as the
// chart's heading names the unit ("130 µs/request" does not fit the margin),
// except bytes, which are scaled (KiB, MiB).
func tickLabel(v float64, unit string) string {
	if unit == "bytes" {
		return fmtBytes(v)
	}
	return fmtNum(v)
}

func unitOf(metric string) string {
	for _, c := range historyColumns {
		if c.metric == metric {
			return c.unit
		}
	}
	return metricUnits[metric]
}

// historyStore is the store as history reads it; a store without
// comparisons has none.
type historyStore struct{ Reader }

func (h historyStore) ListComparisons(ctx context.Context, opts store.ListOptions) ([]store.Comparison, error) {
	if l, ok := h.Reader.(interface {
		ListComparisons(context.Context, store.ListOptions) ([]store.Comparison, error)
	}); ok {
		return l.ListComparisons(ctx, opts)
	}
	return nil, nil
}

var _ history.Store = historyStore{}

func (s *Server) schedulePage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	h, err := history.Build(r.Context(), historyStore{s.opts.Store}, name, history.Options{})
	if err != nil {
		return err
	}
	if len(h.Runs) == 0 {
		return fmt.Errorf("%w: schedule %s has no runs in this store", errNotFound, name)
	}
	return render(w, "schedule.html", buildSchedule(h))
}

// rowHref links a history row: its run, or its comparison.
func rowHref(r history.Run) string {
	if r.Comparison {
		return "/comparisons/" + url.PathEscape(r.RunID)
	}
	return "/runs/" + url.PathEscape(r.RunID)
}

// ratioCell is a comparison's metric: "0.912 (−8.8 %) better".
func ratioCell(r history.Run, m string) string {
	x, ok := r.Values[m]
	if !ok {
		return "–"
	}
	out := string(r.Verdicts[m].Outcome)
	if r.Verdicts[m].Outcome == analysis.NoDifference {
		out = "no difference"
	}
	return fmt.Sprintf("%.3f (%s) %s", x, pct(x), out)
}

func buildSchedule(h history.History) scheduleView {
	v := scheduleView{Page: page{Title: "Schedule " + h.Schedule, Nav: []navLink{{"Runs", "/"}, {"Schedules", "/schedules"}}},
		Name: h.Schedule, H: h, RunsURL: query("/", "schedule", h.Schedule), Compare: h.Kind == history.KindCompare, Row: "run"}
	if v.Compare {
		v.Row, v.RunsURL = "comparison", ""
		for _, m := range h.Metrics {
			v.Heads = append(v.Heads, m+" B/A")
		}
	}
	byRun := map[string]history.Run{}
	for i, r := range h.Runs {
		byRun[r.RunID] = r
		row := historyRow{Run: r, N: i + 1, Href: rowHref(r)}
		if v.Compare {
			for _, m := range h.Metrics {
				row.Cells = append(row.Cells, ratioCell(r, m))
			}
		} else {
			for _, c := range historyColumns {
				cell := "–"
				if x, ok := r.Values[c.metric]; ok {
					cell = fmtMetric(x, c.unit)
				}
				row.Cells = append(row.Cells, cell)
			}
		}
		for _, sev := range []analysis.Severity{analysis.Critical, analysis.Warning, analysis.Info} {
			if n := r.Findings[sev]; n > 0 {
				row.Findings = append(row.Findings, badge{Severity: string(sev), N: n})
			}
		}
		v.Rows = append(v.Rows, row)
	}
	for _, p := range h.ChangePoints {
		pv := pointView{RunChangePoint: p, N: p.Index + 1, Href: rowHref(byRun[p.RunID]), Change: fmt.Sprintf("%+.1f %%", 100*p.Change)}
		if v.Compare {
			pv.Metric = p.Metric + " B/A"
			pv.Before, pv.After = fmt.Sprintf("%.3f", p.Before), fmt.Sprintf("%.3f", p.After)
		} else {
			u := unitOf(p.Metric)
			pv.Before, pv.After = fmtMetric(p.Before, u), fmtMetric(p.After, u)
		}
		v.Points = append(v.Points, pv)
	}
	for _, m := range h.Metrics {
		svg, ok := calendarChart(h, m)
		if ok {
			unit := unitOf(m)
			if v.Compare {
				unit = "B/A"
			}
			v.Charts = append(v.Charts, scheduleChart{Metric: m, Unit: unit, SVG: svg})
		}
	}
	return v
}

// Geometry of a calendar chart, in SVG user units.
const (
	calW, calH                           = 900.0, 200.0
	calLeft, calRight, calTop, calBottom = 70.0, 20.0, 16.0, 34.0
)

// calendarChart draws metric m of the history: one point per run (or
// comparison: its B/A ratio) at its start time, each a link to its page;
// change points as dashed lines with their commit; rows left out of the
// series as marks on the time axis, red for failed or cancelled, grey for a
// skipped firing. ok is false when no row has the metric.
func calendarChart(h history.History, m string) (template.HTML, bool) {
	var t0, t1 time.Time
	lo, hi := math.Inf(1), math.Inf(-1)
	any := false
	for _, r := range h.Runs {
		if t0.IsZero() || r.Start.Before(t0) {
			t0 = r.Start
		}
		if r.Start.After(t1) {
			t1 = r.Start
		}
		if x, ok := r.Values[m]; ok && !r.Excluded {
			lo, hi, any = math.Min(lo, x), math.Max(hi, x), true
		}
	}
	if !any {
		return "", false
	}
	if hi == lo {
		lo, hi = lo*0.9, hi*1.1+1e-9
	}
	pad := (hi - lo) * 0.1
	lo, hi = math.Max(0, lo-pad), hi+pad
	span := t1.Sub(t0).Seconds()
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return calLeft + (calW-calLeft-calRight)/2
		}
		return calLeft + (calW-calLeft-calRight)*t.Sub(t0).Seconds()/span
	}
	yOf := func(v float64) float64 { return calTop + (calH-calTop-calBottom)*(1-(v-lo)/(hi-lo)) }
	unit := unitOf(m)
	if h.Kind == history.KindCompare {
		unit = "" // a ratio
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="calendar" viewBox="0 0 %g %g" role="img" aria-label="%s per run">`, calW, calH, html.EscapeString(m))
	// Axes and the value range.
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#999"/>`, calLeft, calH-calBottom, calW-calRight, calH-calBottom)
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#eee"/>`, calLeft, y, calW-calRight, y)
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" font-size="11" text-anchor="end" fill="#666">%s</text>`, calLeft-6, y+4, html.EscapeString(tickLabel(v, unit)))
	}
	for _, t := range []time.Time{t0, t1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" font-size="11" text-anchor="middle" fill="#666">%s</text>`, xOf(t), calH-calBottom+16, t.UTC().Format("Jan 2 15:04"))
	}
	// Change points of this metric.
	for _, p := range h.ChangePoints {
		if p.Metric != m {
			continue
		}
		x := xOf(h.Runs[p.Index].Start)
		label := p.RunID[:min(8, len(p.RunID))]
		if p.Commit != "" {
			label = p.Commit[:min(10, len(p.Commit))]
		}
		color := "#2a7"
		if p.Direction == analysis.Regression {
			color = "#c33"
		}
		fmt.Fprintf(&b, `<line class="changepoint" x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="%s" stroke-dasharray="4 3"/>`, x, calTop, x, calH-calBottom, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" font-size="11" fill="%s">%s %+.1f %%</text>`, x+4, calTop+10, color, html.EscapeString(label), 100*p.Change)
	}
	// The runs: points in the series, marks for the excluded.
	prevX, prevY := -1.0, -1.0
	for _, r := range h.Runs {
		x := xOf(r.Start)
		link := rowHref(r)
		title := html.EscapeString(fmt.Sprintf("%s %s %s", r.Start.UTC().Format(time.DateTime), r.Status, r.RunID))
		if r.Excluded {
			class, color := "excluded", "#c33"
			if r.Status == store.Skipped {
				class, color = "excluded skipped", "#888"
			}
			if r.Reason != "" {
				title += ": " + html.EscapeString(r.Reason)
			}
			fmt.Fprintf(&b, `<a href="%s"><path class="%s" d="M%.1f %gl6 6m0 -6l-6 6" stroke="%s" stroke-width="2"/><title>%s</title></a>`,
				link, class, x-3, calH-calBottom-3, color, title)
			continue
		}
		v, ok := r.Values[m]
		if !ok {
			continue
		}
		y := yOf(v)
		if prevX >= 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#69c"/>`, prevX, prevY, x, y)
		}
		prevX, prevY = x, y
		commit := ""
		if r.Commit != "" {
			commit = " " + r.Commit[:min(10, len(r.Commit))]
		}
		fmt.Fprintf(&b, `<a href="%s"><circle class="run" cx="%.1f" cy="%.1f" r="4" fill="#369"/><title>%s: %s%s</title></a>`,
			link, x, y, title, html.EscapeString(strings.TrimSpace(fmtMetric(v, unit))), html.EscapeString(commit))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), true //nolint:gosec // every interpolated string is escaped above
}
