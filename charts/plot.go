package charts

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A chart is built as a chartSpec (data in run-elapsed seconds on x) and
// drawn by gonum/plot onto an svgCanvas.
type chartSpec struct {
	ID     string // "throughput", "latency", ...
	Title  string
	YLabel string
	Log    bool
	XMin   float64
	XMax   float64
	// XLabel titles the x axis (default: time since the run's first
	// window); XTicks labels it (default: elapsed time).
	XLabel string
	XTicks plot.Ticker
	Series []lineSeries
	Marks  []markSeries
	Bands  []band
	VLines []vline
	Fits   []fit
	// Empty explains a chart without data ("no RSS readings").
	Empty string
}

type lineSeries struct {
	Name  string
	Color color.RGBA
	Dash  bool
	X, Y  []float64 // NaN in Y breaks the line
	// Faint draws the series thin and translucent (values resting on too
	// few samples).
	Faint bool
	// Dots draws a small circle at each point instead of a line.
	Dots bool
}

// markSeries is glyphs at points (forced-GC checkpoints).
type markSeries struct {
	Name  string
	Color color.RGBA
	X, Y  []float64
}

// band shades x in [X0, X1): lost windows, a finding's window range.
type band struct {
	X0, X1 float64
	Color  color.NRGBA // translucent
	Label  string
}

// vline marks an x: an incarnation boundary, a collapse onset.
type vline struct {
	X     float64
	Color color.RGBA
	Label string
}

// fit is a straight segment: a finding's fitted trend.
type fit struct {
	X0, Y0, X1, Y1 float64
	Color          color.RGBA
	Label          string
}

// Chart geometry in points (the SVG's viewBox; CSS scales it to the page).
const (
	chartWidth  = 900
	chartHeight = 180
)

var (
	colorGrid  = color.RGBA{0xe3, 0xe6, 0xea, 0xff}
	colorAxis  = color.RGBA{0x55, 0x5b, 0x66, 0xff}
	colorGap   = color.NRGBA{0xd6, 0x33, 0x33, 0x40}
	colorIncar = color.RGBA{0x6b, 0x4f, 0xbb, 0xff}
)

// drawnChart is a rendered chart: the SVG and what the page's script needs
// to map a pointer position to a time.
type drawnChart struct {
	chartSpec
	SVG []byte
	// PX0, PX1: the data area's x range in viewBox units, for T0..T1.
	PX0, PX1, T0, T1 float64
}

func (s chartSpec) hasData() bool {
	for _, l := range s.Series {
		for _, y := range l.Y {
			if !math.IsNaN(y) {
				return true
			}
		}
	}
	return false
}

// drawChart draws the chart. A chart without data is returned without SVG.
func drawChart(s chartSpec) (drawnChart, error) {
	d := drawnChart{chartSpec: s}
	if !s.hasData() {
		return d, nil
	}
	p := plot.New()
	p.BackgroundColor = color.Transparent
	p.HideAxes()
	p.X.Min, p.X.Max = s.XMin, math.Max(s.XMax, s.XMin+1)
	p.X.Tick.Marker = elapsedTicks{}
	if s.XTicks != nil {
		p.X.Tick.Marker = s.XTicks
	}
	p.X.Label.Text = s.XLabel
	if s.XLabel == "" {
		p.X.Label.Text = "time since the first window"
	}
	p.X.Label.TextStyle.Font.Size = vg.Points(8.5)
	p.X.Label.TextStyle.Color = colorAxis
	p.X.Label.Padding = vg.Points(1)
	p.Y.Label.Text = s.YLabel
	p.Y.Label.TextStyle.Font.Size = vg.Points(9)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Tick.Label.Font.Size = vg.Points(9)
		a.Tick.Label.Color = colorAxis
		a.Tick.Color = colorAxis
		a.LineStyle.Color = colorAxis
		a.LineStyle.Width = vg.Points(0.6)
		a.Padding = vg.Points(2)
	}
	p.X.Tick.Length = vg.Points(3)
	p.Y.Tick.Length = vg.Points(3)

	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, l := range s.Series {
		for _, y := range l.Y {
			if !math.IsNaN(y) && (!s.Log || y > 0) {
				ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
			}
		}
	}
	for _, f := range s.Fits {
		ymax = math.Max(ymax, math.Max(f.Y0, f.Y1))
	}
	if s.Log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		ymin, ymax = math.Pow(10, math.Floor(math.Log10(ymin))), math.Pow(10, math.Ceil(math.Log10(ymax*1.0001)))
	} else {
		p.Y.Tick.Marker = compactTicks{}
		ymin = math.Min(0, ymin)
		if ymax <= ymin {
			ymax = ymin + 1
		}
		ymax *= 1.08
	}
	p.Y.Min, p.Y.Max = ymin, ymax

	p.Add(horizontalGrid{})
	for _, b := range s.Bands {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: b.X0, Y: ymin}, {X: b.X1, Y: ymin}, {X: b.X1, Y: ymax}, {X: b.X0, Y: ymax}})
		if err != nil {
			return d, err
		}
		poly.Color = b.Color
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	for _, v := range s.VLines {
		l, err := plotter.NewLine(plotter.XYs{{X: v.X, Y: ymin}, {X: v.X, Y: ymax}})
		if err != nil {
			return d, err
		}
		l.Color, l.Width, l.Dashes = v.Color, vg.Points(1), []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
	}
	for _, l := range s.Series {
		if err := addSeries(p, l, s.Log); err != nil {
			return d, err
		}
	}
	for _, m := range s.Marks {
		var xys plotter.XYs
		for i := range m.X {
			if !math.IsNaN(m.Y[i]) && (!s.Log || m.Y[i] > 0) {
				xys = append(xys, plotter.XY{X: m.X[i], Y: m.Y[i]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return d, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: m.Color, Radius: vg.Points(2.2), Shape: draw.RingGlyph{}}
		p.Add(sc)
	}
	for _, f := range s.Fits {
		l, err := plotter.NewLine(plotter.XYs{{X: f.X0, Y: f.Y0}, {X: f.X1, Y: f.Y1}})
		if err != nil {
			return d, err
		}
		l.Color, l.Width, l.Dashes = f.Color, vg.Points(1.6), []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
	}
	var labels plotter.XYLabels
	for _, v := range s.VLines {
		if v.Label != "" {
			labels.XYs = append(labels.XYs, plotter.XY{X: v.X, Y: ymax})
			labels.Labels = append(labels.Labels, " "+v.Label)
		}
	}
	for _, b := range s.Bands {
		if b.Label != "" {
			labels.XYs = append(labels.XYs, plotter.XY{X: b.X0, Y: ymax})
			labels.Labels = append(labels.Labels, " "+b.Label)
		}
	}
	if len(labels.XYs) > 0 {
		lb, err := plotter.NewLabels(labels)
		if err != nil {
			return d, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(8.5)
			lb.TextStyle[i].Color = colorAxis
			lb.TextStyle[i].YAlign = draw.YTop
		}
		p.Add(lb)
	}

	c := newSVGCanvas(chartWidth, chartHeight)
	dc := draw.New(c)
	p.Draw(dc)
	da := p.DataCanvas(dc)
	trX, _ := p.Transforms(&da)
	d.T0, d.T1 = p.X.Min, p.X.Max
	d.PX0, d.PX1 = trX(p.X.Min).Points(), trX(p.X.Max).Points()
	d.SVG = c.svg(fmt.Sprintf(` class="chart-svg" data-px0="%.1f" data-px1="%.1f" data-t0="%g" data-t1="%g" data-vw="%d"`,
		d.PX0, d.PX1, d.T0, d.T1, chartWidth))
	return d, nil
}

// addSeries adds l as one line per run of defined values (NaN breaks it;
// so does a value a log scale cannot show).
func addSeries(p *plot.Plot, l lineSeries, log bool) error {
	var seg plotter.XYs
	flush := func() error {
		if len(seg) == 0 {
			return nil
		}
		defer func() { seg = nil }()
		if l.Dots || len(seg) == 1 {
			sc, err := plotter.NewScatter(seg)
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: l.Color, Radius: vg.Points(1.3), Shape: draw.CircleGlyph{}}
			if l.Faint {
				sc.GlyphStyle.Shape = draw.RingGlyph{}
			}
			p.Add(sc)
			return nil
		}
		ln, err := plotter.NewLine(seg)
		if err != nil {
			return err
		}
		ln.Color, ln.Width = l.Color, vg.Points(1.3)
		if l.Dash {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		if l.Faint {
			ln.Width = vg.Points(0.8)
			ln.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2)}
		}
		p.Add(plainLine{ln})
		return nil
	}
	for i := range l.X {
		y := l.Y[i]
		if math.IsNaN(y) || math.IsInf(y, 0) || log && y <= 0 {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		seg = append(seg, plotter.XY{X: l.X[i], Y: y})
	}
	return flush()
}

// plainLine is a line without glyph boxes: plotter.Line gives one per
// point, which gonum measures for padding (a third of a chart's drawing
// time for 1,440 points) although a line has no glyphs to keep inside.
type plainLine struct{ l *plotter.Line }

func (p plainLine) Plot(c draw.Canvas, pl *plot.Plot)           { p.l.Plot(c, pl) }
func (p plainLine) DataRange() (xmin, xmax, ymin, ymax float64) { return p.l.DataRange() }

// horizontalGrid draws light lines at the y ticks.
type horizontalGrid struct{}

func (horizontalGrid) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: colorGrid, Width: vg.Points(0.6)}
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if t.IsMinor() {
			continue
		}
		y := trY(t.Value)
		c.StrokeLine2(ls, c.Min.X, y, c.Max.X, y)
	}
}

// compactTicks are gonum's default ticks labelled 0, 250, 1.5k, 50k, 2M.
type compactTicks struct{}

func (compactTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmtCompact(ts[i].Value)
		}
	}
	return ts
}

func fmtCompact(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// elapsedTicks labels run-elapsed seconds as durations: 0, 30s, 1m, 1h30m.
type elapsedTicks struct{}

var tickSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800}

func (elapsedTicks) Ticks(min, max float64) []plot.Tick {
	span := max - min
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 8 {
			step = s
			break
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max+1e-9; v += step {
		label := fmtElapsed(v)
		if v > min && max-v < span*0.03 {
			// A label centred on the right edge would be cut in half
			// ("20s" read as "20"): the tick stays, unlabelled.
			label = ""
		}
		ts = append(ts, plot.Tick{Value: v, Label: label})
	}
	return ts
}

// fmtElapsed writes seconds as 0, 45s, 2m, 1h30m, 2d3h.
func fmtElapsed(sec float64) string {
	d := time.Duration(math.Round(sec)) * time.Second
	if d == 0 {
		return "0"
	}
	days, d := d/(24*time.Hour), d%(24*time.Hour)
	h, d := d/time.Hour, d%time.Hour
	m, d := d/time.Minute, d%time.Minute
	s := d / time.Second
	out := ""
	if days > 0 {
		out += strconv.Itoa(int(days)) + "d"
	}
	if h > 0 {
		out += strconv.Itoa(int(h)) + "h"
	}
	if m > 0 && days == 0 {
		out += strconv.Itoa(int(m)) + "m"
	}
	if s > 0 && days == 0 && h == 0 {
		out += strconv.Itoa(int(s)) + "s"
	}
	return out
}

// logTicks: a labelled tick per decade, minor ticks at 2 and 5.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max*1.0001; e++ {
		v := math.Pow(10, e)
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		for _, k := range []float64{2, 5} {
			if k*v < max {
				ts = append(ts, plot.Tick{Value: k * v})
			}
		}
	}
	return ts
}
