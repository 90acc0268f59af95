package charts

import (
	"context"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// The run summary: what k6's end-of-test summary and Gatling's report show
// first — throughput, error and dropped rates as tiles, then one percentile
// set (p50, p90, p95, p99, p99.9, max) for the run and per op, the same set
// the terminal's summary and the latency chart use, and the latency
// distribution as HdrHistogram's percentile plot.

// summaryView is the summary section of a run page.
type summaryView struct {
	Tiles []tile
	Rows  []summaryRow
	// Dist is the percentile plot (no SVG when there are no requests).
	Dist drawnChart
	// Partial is set when the run's last window was cut short: it is in the
	// totals, not in the findings.
	Partial bool
	// Statements are the run's database round trips and its costliest
	// statements (pg_stat_statements); nil without them.
	Statements *report.DatabaseStatements
}

// tile is one headline figure.
type tile struct {
	Key, Label, Value, Note string
	Bad                     bool
}

// summaryRow is the run's ("all") or one op's figures.
type summaryRow struct {
	Op                            string
	Requests                      int64
	RPS, ErrorPct                 float64
	P50, P90, P95, P99, P999, Max float64
	Few                           bool
	Errors                        int64
}

// buildSummary merges every window of the run (histograms merged, never
// percentiles averaged).
func buildSummary(ctx context.Context, st Reader, id string) (summaryView, error) {
	ws, err := st.Windows(ctx, id, store.AllWindows)
	if err != nil {
		return summaryView{}, err
	}
	return summarize(ws)
}

// summarize is buildSummary on windows already read.
func summarize(ws []window.Window) (summaryView, error) {
	var v summaryView
	if len(ws) == 0 {
		return v, nil
	}
	s, err := window.Merge(ws)
	if err != nil {
		return v, err
	}
	for _, w := range ws {
		v.Partial = v.Partial || w.Partial
	}
	v.Statements = report.RunStatements(ws, report.TopStatementsShown)
	pct := func(n, of int64) float64 {
		if of == 0 {
			return 0
		}
		return 100 * float64(n) / float64(of)
	}
	errs := s.Errors.Total() - s.Errors.Interrupted
	dropPct := pct(s.Dropped, s.Requests+s.Skipped+s.Dropped)
	v.Tiles = []tile{
		{Key: "rps", Label: "req/s", Value: fmtNum(s.RPS), Note: fmtCount(float64(s.Requests)) + " requests"},
		{Key: "errors", Label: "error rate", Value: fmtPctValue(pct(errs, s.Requests)), Note: fmtCount(float64(errs)) + " errors", Bad: errs > 0},
		{Key: "dropped", Label: "dropped rate", Value: fmtPctValue(dropPct), Note: fmtCount(float64(s.Dropped)) + " of the intended starts", Bad: dropPct >= 1},
		{Key: "p50", Label: "p50", Value: fmtMs(s.LatencyMs.P50)},
		{Key: "p99", Label: "p99", Value: fmtMs(s.LatencyMs.P99)},
		{Key: "max", Label: "max", Value: fmtMs(s.LatencyMs.Max)},
	}
	row := func(name string, requests int64, rps float64, l window.Latency, e window.Errors) summaryRow {
		n := e.Total() - e.Interrupted
		return summaryRow{Op: name, Requests: requests, RPS: rps, ErrorPct: pct(n, requests), Errors: n,
			P50: l.P50, P90: l.P90, P95: l.P95, P99: l.P99, P999: l.P999, Max: l.Max, Few: requests < FewSamples}
	}
	v.Rows = append(v.Rows, row("all", s.Requests, s.RPS, s.LatencyMs, s.Errors))
	names := make([]string, 0, len(s.Ops))
	for name := range s.Ops {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		o := s.Ops[name]
		v.Rows = append(v.Rows, row(name, o.Requests, o.RPS, o.LatencyMs, o.Errors))
	}
	all, ops, err := window.Distributions(ws)
	if err != nil {
		return v, err
	}
	if v.Dist, err = drawChart(distributionSpec(all, ops, names)); err != nil {
		return v, err
	}
	return v, nil
}

// fmtPctValue formats a percentage (0–100) with the digits a rate needs.
func fmtPctValue(p float64) string {
	switch {
	case p == 0:
		return "0 %"
	case p < 0.01:
		return "< 0.01 %"
	case p < 10:
		return strconv.FormatFloat(p, 'f', 2, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}

// maxOps is how many ops the distribution draws besides the whole run.
const maxOps = 7

// distributionSpec is the percentile plot: x is log10(1/(1−q)), so 90 %,
// 99 %, 99.9 % … are evenly spaced, and the maximum sits half a step past
// the last percentile.
func distributionSpec(all []window.CurvePoint, ops map[string][]window.CurvePoint, names []string) chartSpec {
	s := chartSpec{ID: "distribution", Title: "Latency distribution", YLabel: "ms", Log: true,
		XLabel: "percentile (log scale of 1/(1−q); the last point is the maximum)", XTicks: percentileTicks{}}
	add := func(name string, c []window.CurvePoint, i int) {
		l := lineSeries{Name: name, Color: palette[i%len(palette)]}
		for _, p := range c {
			l.X = append(l.X, curveX(p.Percentile, c))
			l.Y = append(l.Y, p.LatencyMs)
		}
		s.Series = append(s.Series, l)
	}
	if len(names) > 1 || len(names) == 0 {
		add("all requests", all, 0)
		s.Series[0].Color = colorAxis
	}
	for i, n := range names {
		if i == maxOps {
			break
		}
		add(n, ops[n], i)
	}
	for _, l := range s.Series {
		for _, x := range l.X {
			s.XMax = math.Max(s.XMax, x)
		}
	}
	return s
}

// curveX places percentile p of curve c on the plot's x axis.
func curveX(p float64, c []window.CurvePoint) float64 {
	if p < 100 {
		return math.Log10(100 / (100 - p))
	}
	last := 0.0
	for _, q := range c {
		if q.Percentile < 100 {
			last = math.Log10(100 / (100 - q.Percentile))
		}
	}
	return last + 0.5
}

// percentileTicks label x = 0, 1, 2 … as 0 %, 90 %, 99 %, 99.9 % ….
type percentileTicks struct{}

func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Ceil(min); e <= max+1e-9; e++ {
		label := "0 %"
		if e > 0 {
			label = strconv.FormatFloat(100-100/math.Pow(10, e), 'f', -1, 64) + " %"
		}
		ts = append(ts, plot.Tick{Value: e, Label: label})
	}
	return ts
}
