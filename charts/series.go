package charts

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// FewSamples is the request count under which a window's p99.9 rests on
// fewer than one sample above it: such values are drawn faint.
const FewSamples = 1000

// timeline is a run's spans on its time axis: x is seconds since the
// run's first window started.
type timeline struct {
	start time.Time
	spans []store.Span
	x     []float64 // midpoint of each span
	x0    []float64 // start of each span
	x1    []float64 // end of each span
	// begin and end are the x axis' range: 0 and the last span's end, or a
	// zoomed range's own.
	begin, end float64
}

func newTimeline(start time.Time, spans []store.Span) *timeline {
	tl := &timeline{start: start, spans: spans}
	for _, sp := range spans {
		a, b := sp.Start.Sub(start).Seconds(), sp.End.Sub(start).Seconds()
		tl.x0, tl.x1, tl.x = append(tl.x0, a), append(tl.x1, b), append(tl.x, (a+b)/2)
		tl.end = math.Max(tl.end, b)
	}
	return tl
}

// column returns f of every span (NaN for gaps and for f's own NaN).
func (tl *timeline) column(f func(sp store.Span) float64) []float64 {
	ys := make([]float64, len(tl.spans))
	for i, sp := range tl.spans {
		if sp.Gap {
			ys[i] = math.NaN()
			continue
		}
		ys[i] = f(sp)
	}
	return ys
}

// xOfIndex returns the x of window index i: the start of the span holding it
// (end when atEnd), and whether one does.
func (tl *timeline) xOfIndex(i int, atEnd bool) (float64, bool) {
	k := sort.Search(len(tl.spans), func(k int) bool { return tl.spans[k].LastIndex >= i })
	if k == len(tl.spans) || tl.spans[k].Index > i {
		return 0, false
	}
	if atEnd {
		return tl.x1[k], true
	}
	return tl.x0[k], true
}

// marks returns what every chart shows: lost windows and incarnation
// boundaries.
func (tl *timeline) marks() ([]band, []vline) {
	var bands []band
	var lines []vline
	for i, sp := range tl.spans {
		if sp.Gaps > 0 && (sp.Gap || sp.Gaps == sp.Windows) {
			bands = append(bands, band{X0: tl.x0[i], X1: tl.x1[i], Color: colorGap})
		}
		if i > 0 && sp.Incarnation != tl.spans[i-1].LastIncarnation || sp.LastIncarnation != sp.Incarnation {
			lines = append(lines, vline{X: tl.x0[i], Color: colorIncar, Label: fmt.Sprintf("incarnation %d", sp.LastIncarnation)})
		}
	}
	// Lost windows inside merged spans are shaded lightly in proportion.
	for i, sp := range tl.spans {
		if sp.Gaps > 0 && !sp.Gap && sp.Gaps < sp.Windows {
			c := colorGap
			c.A = uint8(max(10, int(c.A)*sp.Gaps/sp.Windows))
			bands = append(bands, band{X0: tl.x0[i], X1: tl.x1[i], Color: c})
		}
	}
	return bands, lines
}

func nan() float64 { return math.NaN() }

func perSecond(n int64, sp store.Span) float64 {
	secs := sp.Duration().Seconds()
	if secs <= 0 {
		return nan()
	}
	return float64(n) / secs
}

var (
	cBlue   = color.RGBA{0x1f, 0x6f, 0xd1, 0xff}
	cTeal   = color.RGBA{0x13, 0x9c, 0x8f, 0xff}
	cOrange = color.RGBA{0xe0, 0x7b, 0x10, 0xff}
	cRed    = color.RGBA{0xc8, 0x1e, 0x3c, 0xff}
	cGrey   = color.RGBA{0x80, 0x86, 0x90, 0xff}
	cPurple = color.RGBA{0x7b, 0x3f, 0xc4, 0xff}
	cGreen  = color.RGBA{0x2e, 0x8b, 0x3d, 0xff}
	cBrown  = color.RGBA{0x8a, 0x5a, 0x2b, 0xff}
	// errorColors by class (window.Class order, OK unused).
	errorColors = [window.NumClasses]color.RGBA{{}, cOrange, cRed, cPurple, cBrown, {0xb0, 0x30, 0x90, 0xff}, cGrey, {0xd4, 0xa0, 0x17, 0xff}, {0x50, 0x50, 0x50, 0xff}}
	palette     = []color.RGBA{cBlue, cOrange, cTeal, cPurple, cRed, cGreen, cBrown, cGrey}
	colorFind   = color.NRGBA{0xf0, 0xa0, 0x20, 0x30}
	colorFit    = color.RGBA{0xc8, 0x1e, 0x3c, 0xff}
	colorOnset  = color.RGBA{0xc8, 0x1e, 0x3c, 0xff}
)

// chartSet builds every chart of the run page from the timeline, the
// findings and the op shown on the latency chart ("" for all ops).
func chartSet(tl *timeline, fs []analysis.Finding, op string) []chartSpec {
	bands, lines := tl.marks()
	base := func(id, title, ylabel string) chartSpec {
		return chartSpec{ID: id, Title: title, YLabel: ylabel, XMin: tl.begin, XMax: tl.end,
			Bands: slices.Clone(bands), VLines: slices.Clone(lines)}
	}
	var out []chartSpec

	thr := base("throughput", "Throughput", "per second")
	thr.Series = append(thr.Series, lineSeries{Name: "requests/s", Color: cBlue, X: tl.x,
		Y: tl.column(func(sp store.Span) float64 { return sp.RPS })})
	for c := window.Class(1); c < window.NumClasses; c++ {
		ys := tl.column(func(sp store.Span) float64 { return perSecond(sp.Errors.Get(c), sp) })
		if anyPositive(ys) {
			thr.Series = append(thr.Series, lineSeries{Name: "errors " + c.String() + "/s", Color: errorColors[c], X: tl.x, Y: ys})
		}
	}
	if ys := tl.column(func(sp store.Span) float64 { return perSecond(sp.Dropped, sp) }); anyPositive(ys) {
		thr.Series = append(thr.Series, lineSeries{Name: "dropped starts/s", Color: cGrey, Dash: true, X: tl.x, Y: ys})
	}
	collapseMarks(&thr, tl, fs)
	out = append(out, thr)

	lat := base("latency", "Latency", "ms (log)")
	lat.Log = true
	if op != "" {
		lat.Title = "Latency of " + op
	}
	latOf := func(sp store.Span) (window.Latency, int64) {
		if op == "" {
			return sp.LatencyMs, sp.Requests
		}
		o := sp.Ops[op]
		return o.LatencyMs, o.Requests
	}
	pct := func(f func(window.Latency) float64) []float64 {
		return tl.column(func(sp store.Span) float64 {
			l, n := latOf(sp)
			if n == 0 {
				return nan()
			}
			return f(l)
		})
	}
	lat.Series = []lineSeries{
		{Name: "p50", Color: cBlue, X: tl.x, Y: pct(func(l window.Latency) float64 { return l.P50 })},
		{Name: "p90", Color: cTeal, X: tl.x, Y: pct(func(l window.Latency) float64 { return l.P90 })},
		{Name: "p95", Color: cGreen, X: tl.x, Y: pct(func(l window.Latency) float64 { return l.P95 })},
		{Name: "p99", Color: cOrange, X: tl.x, Y: pct(func(l window.Latency) float64 { return l.P99 })},
	}
	// p99.9 resting on fewer than FewSamples requests is its own faint series.
	p999, few := make([]float64, len(tl.spans)), make([]float64, len(tl.spans))
	for i, sp := range tl.spans {
		l, n := latOf(sp)
		p999[i], few[i] = nan(), nan()
		switch {
		case sp.Gap || n == 0:
		case n < FewSamples:
			few[i] = l.P999
		default:
			p999[i] = l.P999
		}
	}
	lat.Series = append(lat.Series, lineSeries{Name: "p99.9", Color: cRed, X: tl.x, Y: p999})
	if anyPositive(few) {
		lat.Series = append(lat.Series, lineSeries{Name: fmt.Sprintf("p99.9 on < %d requests", FewSamples), Color: cRed, Faint: true, Dots: true, X: tl.x, Y: few})
	}
	lat.Series = append(lat.Series, lineSeries{Name: "max", Color: cGrey, Dash: true, X: tl.x, Y: pct(func(l window.Latency) float64 { return l.Max })})
	collapseMarks(&lat, tl, fs)
	out = append(out, lat)

	cpu := base("cpu", "Target CPU per request", "µs/request")
	cpu.Series = []lineSeries{{Name: "CPU µs/request", Color: cPurple, X: tl.x, Y: tl.column(func(sp store.Span) float64 {
		return deref(sp.Probes.CPUMicrosPerRequest)
	})}}
	cpu.Empty = "no CPU readings (process probe off or failing)"
	out = append(out, cpu)

	// A Go target's allocations: drawn only for a run that has them, so
	// other runs' pages keep their charts.
	if columnsOf(tl.spans).Alloc {
		alloc := base("alloc", "Allocations per request", "KiB/request")
		alloc.Series = []lineSeries{{Name: "allocated KiB/request", Color: cBrown, X: tl.x, Y: tl.column(allocKiB)}}
		alloc.Empty = "no allocation readings (a Go target's metrics page, probes.heap.metric)"
		out = append(out, alloc)
	}

	mem := base("memory", "Memory", "MiB")
	mem.Series = []lineSeries{
		{Name: "RSS", Color: cTeal, X: tl.x, Y: tl.column(func(sp store.Span) float64 { return mib(sp.Probes.RSSBytes) })},
		{Name: "post-GC heap", Color: cBlue, X: tl.x, Y: tl.column(func(sp store.Span) float64 { return mib(sp.Probes.HeapBytes) })},
	}
	gcY := tl.column(func(sp store.Span) float64 {
		if !sp.Probes.HeapForcedGC {
			return nan()
		}
		return mib(sp.Probes.HeapBytes)
	})
	if anyPositive(gcY) {
		mem.Marks = []markSeries{{Name: "forced-GC checkpoint", Color: cRed, X: tl.x, Y: gcY}}
	}
	leakMarks(&mem, tl, fs)
	mem.Empty = "no RSS or heap readings (probes off or failing)"
	out = append(out, mem)

	rows := base("tables", "Database rows per table", "live rows")
	for k, name := range tableNames(tl.spans) {
		rows.Series = append(rows.Series, lineSeries{Name: name, Color: palette[k%len(palette)], X: tl.x, Y: tl.column(func(sp store.Span) float64 {
			if t, ok := table(sp, name); ok {
				return float64(t.LiveRows)
			}
			return nan()
		})})
	}
	collapseMarks(&rows, tl, fs)
	rows.Empty = "no database statistics (database probe off, or not PostgreSQL)"
	out = append(out, rows)

	read := base("rowsread", "Rows read per request", "rows/request")
	read.Series = []lineSeries{{Name: "all tables", Color: cGrey, Dash: true, X: tl.x, Y: tl.column(func(sp store.Span) float64 {
		if d := sp.Probes.Database; d != nil {
			return d.RowsReadPerRequest
		}
		return nan()
	})}}
	for k, name := range tableNames(tl.spans) {
		read.Series = append(read.Series, lineSeries{Name: name, Color: palette[k%len(palette)], X: tl.x, Y: tl.column(func(sp store.Span) float64 {
			if t, ok := table(sp, name); ok {
				return t.RowsReadPerRequest
			}
			return nan()
		})})
	}
	collapseMarks(&read, tl, fs)
	read.Empty = rows.Empty
	out = append(out, read)
	return out
}

// collapseMarks draws each collapse finding's onset, naming its table and op.
func collapseMarks(s *chartSpec, tl *timeline, fs []analysis.Finding) {
	for _, f := range fs {
		if f.Kind != analysis.KindCollapse {
			continue
		}
		x, ok := tl.xOfIndex(f.Evidence.FirstWindow, false)
		if !ok {
			continue
		}
		label := "collapse"
		if f.Evidence.Table != "" {
			label += ": " + f.Evidence.Table
		}
		if op := findingOp(f); op != "" {
			label += " (op " + op + ")"
		}
		s.VLines = append(s.VLines, vline{X: x, Color: colorOnset, Label: label})
	}
}

// leakMarks shades each leak finding's window range on the memory chart and
// draws its fitted slope through the post-GC heap readings of that range.
func leakMarks(s *chartSpec, tl *timeline, fs []analysis.Finding) {
	for _, f := range fs {
		if f.Kind != analysis.KindLeak {
			continue
		}
		x0, ok0 := tl.xOfIndex(f.Evidence.FirstWindow, false)
		x1, ok1 := tl.xOfIndex(f.Evidence.LastWindow, true)
		if !ok0 || !ok1 {
			continue
		}
		if f.Evidence.Notes["off_heap"] == 1 {
			// Its slope is of the RSS or the external memory, not of the
			// heap readings drawn here.
			s.Bands = append(s.Bands, band{X0: x0, X1: x1, Color: colorFind, Label: "leak outside the heap: " + string(f.Severity)})
			continue
		}
		s.Bands = append(s.Bands, band{X0: x0, X1: x1, Color: colorFind, Label: "leak: " + string(f.Severity)})
		if f.Evidence.SlopeUnit != "bytes/hour" || f.Evidence.Slope == 0 {
			continue
		}
		slope := f.Evidence.Slope / 3600 / (1 << 20) // MiB per second
		// Theil–Sen intercept: the median of y - slope*x over the range.
		var resid []float64
		for i, sp := range tl.spans {
			if sp.Gap || sp.Probes.HeapBytes == nil || tl.x[i] < x0 || tl.x[i] > x1 || sp.Incarnation != f.Incarnation {
				continue
			}
			resid = append(resid, mib(sp.Probes.HeapBytes)-slope*tl.x[i])
		}
		if len(resid) == 0 {
			continue
		}
		sort.Float64s(resid)
		b := resid[len(resid)/2]
		s.Fits = append(s.Fits, fit{X0: x0, Y0: b + slope*x0, X1: x1, Y1: b + slope*x1, Color: colorFit,
			Label: fmt.Sprintf("fitted %s/hour", fmtBytes(f.Evidence.Slope))})
	}
}

// findingOp returns the op a finding names, if its evidence has one (the
// collapse detector's per-op attribution).
func findingOp(f analysis.Finding) string {
	b, err := json.Marshal(f.Evidence)
	if err != nil {
		return ""
	}
	var m struct {
		Op string `json:"op"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Op
}

func tableNames(spans []store.Span) []string {
	seen := map[string]bool{}
	var names []string
	for _, sp := range spans {
		if d := sp.Probes.Database; d != nil {
			for _, t := range d.Tables {
				if !seen[t.Name] {
					seen[t.Name] = true
					names = append(names, t.Name)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func table(sp store.Span, name string) (window.Table, bool) {
	if d := sp.Probes.Database; d != nil {
		for _, t := range d.Tables {
			if t.Name == name {
				return t, true
			}
		}
	}
	return window.Table{}, false
}

func anyPositive(ys []float64) bool {
	for _, y := range ys {
		if y > 0 {
			return true
		}
	}
	return false
}

func deref(p *float64) float64 {
	if p == nil {
		return nan()
	}
	return *p
}

func mib(p *int64) float64 {
	if p == nil {
		return nan()
	}
	return float64(*p) / (1 << 20)
}

func fmtBytes(b float64) string {
	switch a := math.Abs(b); {
	case a >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case a >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
