package charts

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// svgCanvas is a gonum/plot vg.Canvas that writes SVG meant to be inlined in
// a page under a strict Content-Security-Policy: colours, widths and fonts
// are presentation attributes (an inline style attribute would be refused
// by style-src 'self'), coordinates are absolute page units rounded to 0.1
// with relative segments, so a 1,000-point series costs ~7 KB. Text is
// escaped. gonum/plot's own vgsvg writes style attributes and 5-digit
// absolute coordinates.
type svgCanvas struct {
	w, h  vg.Length
	buf   bytes.Buffer
	stack []svgState
}

type svgState struct {
	m     affine
	color color.Color
	width vg.Length
	dash  []vg.Length
}

// affine maps (x, y) to (a*x + c*y + e, b*x + d*y + f), in gonum's
// coordinates (points, origin bottom-left).
type affine struct{ a, b, c, d, e, f float64 }

var identity = affine{a: 1, d: 1}

func (m affine) apply(x, y float64) (float64, float64) {
	return m.a*x + m.c*y + m.e, m.b*x + m.d*y + m.f
}

// mul returns m·n (n applied first).
func (m affine) mul(n affine) affine {
	return affine{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

func newSVGCanvas(w, h vg.Length) *svgCanvas {
	c := &svgCanvas{w: w, h: h, stack: []svgState{{m: identity, color: color.Black, width: vg.Points(1)}}}
	return c
}

func (c *svgCanvas) top() *svgState { return &c.stack[len(c.stack)-1] }

func (c *svgCanvas) Size() (vg.Length, vg.Length) { return c.w, c.h }
func (c *svgCanvas) SetLineWidth(w vg.Length)     { c.top().width = w }
func (c *svgCanvas) SetLineDash(d []vg.Length, _ vg.Length) {
	c.top().dash = append([]vg.Length(nil), d...)
}
func (c *svgCanvas) SetColor(col color.Color) {
	if col == nil {
		col = color.Black
	}
	c.top().color = col
}
func (c *svgCanvas) Rotate(rad float64) {
	s, co := math.Sincos(rad)
	c.top().m = c.top().m.mul(affine{a: co, b: s, c: -s, d: co})
}
func (c *svgCanvas) Translate(pt vg.Point) {
	c.top().m = c.top().m.mul(affine{a: 1, d: 1, e: pt.X.Points(), f: pt.Y.Points()})
}
func (c *svgCanvas) Scale(x, y float64) { c.top().m = c.top().m.mul(affine{a: x, d: y}) }
func (c *svgCanvas) Push()              { c.stack = append(c.stack, *c.top()) }
func (c *svgCanvas) Pop() {
	if len(c.stack) > 1 {
		c.stack = c.stack[:len(c.stack)-1]
	}
}

// DrawImage is not used by the charts; images are not drawn.
func (c *svgCanvas) DrawImage(vg.Rectangle, image.Image) {}

// page maps a gonum point to SVG page coordinates (origin top-left).
func (c *svgCanvas) page(p vg.Point) (float64, float64) {
	x, y := c.top().m.apply(p.X.Points(), p.Y.Points())
	return x, c.h.Points() - y
}

func (c *svgCanvas) Stroke(p vg.Path) {
	st := c.top()
	if st.width <= 0 {
		return
	}
	p = c.simplify(p)
	c.buf.WriteString(`<path fill="none" d="`)
	c.pathData(p)
	c.buf.WriteString(`"`)
	c.paint("stroke", st.color)
	c.buf.WriteString(` stroke-width="`)
	c.num(st.width.Points())
	c.buf.WriteString(`"`)
	if len(st.dash) > 0 {
		c.buf.WriteString(` stroke-dasharray="`)
		for i, d := range st.dash {
			if i > 0 {
				c.buf.WriteByte(' ')
			}
			c.num(d.Points())
		}
		c.buf.WriteString(`"`)
	}
	c.buf.WriteString("/>\n")
}

// simplifyTolerance is how far (viewBox units, ~1.25 px on a wide page) a
// dropped point may lie from the line drawn without it.
const simplifyTolerance = 0.3

// simplify drops the points of a polyline (moves and lines only) that lie
// within simplifyTolerance of the line through their neighbours kept
// (Ramer–Douglas–Peucker): what is drawn does not change visibly, and a
// flat or straight series costs a few points instead of one per window.
func (c *svgCanvas) simplify(p vg.Path) vg.Path {
	if len(p) < 16 || p[0].Type != vg.MoveComp {
		return p
	}
	for _, comp := range p[1:] {
		if comp.Type != vg.LineComp {
			return p
		}
	}
	xs, ys := make([]float64, len(p)), make([]float64, len(p))
	for i, comp := range p {
		xs[i], ys[i] = c.page(comp.Pos)
	}
	keep := make([]bool, len(p))
	keep[0], keep[len(p)-1] = true, true
	type span struct{ a, b int }
	stack := []span{{0, len(p) - 1}}
	for len(stack) > 0 {
		sp := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		dx, dy := xs[sp.b]-xs[sp.a], ys[sp.b]-ys[sp.a]
		norm := math.Hypot(dx, dy)
		far, farD := -1, simplifyTolerance
		for i := sp.a + 1; i < sp.b; i++ {
			var d float64
			if norm == 0 {
				d = math.Hypot(xs[i]-xs[sp.a], ys[i]-ys[sp.a])
			} else {
				d = math.Abs(dy*(xs[i]-xs[sp.a])-dx*(ys[i]-ys[sp.a])) / norm
			}
			if d > farD {
				far, farD = i, d
			}
		}
		if far > 0 {
			keep[far] = true
			stack = append(stack, span{sp.a, far}, span{far, sp.b})
		}
	}
	out := make(vg.Path, 0, len(p)/4)
	for i, comp := range p {
		if keep[i] {
			out = append(out, comp)
		}
	}
	return out
}

func (c *svgCanvas) Fill(p vg.Path) {
	c.buf.WriteString(`<path d="`)
	c.pathData(p)
	c.buf.WriteString(`"`)
	c.paint("fill", c.top().color)
	c.buf.WriteString("/>\n")
}

func (c *svgCanvas) paint(attr string, col color.Color) {
	r, g, b, a := col.RGBA()
	if a == 0 {
		fmt.Fprintf(&c.buf, ` %s="none"`, attr)
		return
	}
	// RGBA is alpha-premultiplied.
	fmt.Fprintf(&c.buf, ` %s="#%02x%02x%02x"`, attr, r*0xff/a, g*0xff/a, b*0xff/a)
	if a < 0xffff {
		fmt.Fprintf(&c.buf, ` %s-opacity="%.2f"`, attr, float64(a)/0xffff)
	}
}

// num writes v rounded to 0.1.
func (c *svgCanvas) num(v float64) {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0 // no "-0"
	}
	b := c.buf.AvailableBuffer()
	b = strconv.AppendFloat(b, v, 'f', -1, 64)
	c.buf.Write(b)
}

// pathData writes the path: absolute moves, relative lines from the rounded
// previous point (so rounding errors do not add up), arcs as SVG arcs.
func (c *svgCanvas) pathData(p vg.Path) {
	var px, py float64 // the previous point, rounded
	round := func(v float64) float64 { return math.Round(v*10) / 10 }
	for _, comp := range p {
		switch comp.Type {
		case vg.MoveComp:
			x, y := c.page(comp.Pos)
			px, py = round(x), round(y)
			c.buf.WriteByte('M')
			c.num(px)
			c.buf.WriteByte(' ')
			c.num(py)
		case vg.LineComp:
			x, y := c.page(comp.Pos)
			x, y = round(x), round(y)
			c.buf.WriteByte('l')
			c.num(x - px)
			c.buf.WriteByte(' ')
			c.num(y - py)
			px, py = x, y
		case vg.ArcComp:
			// Start point, then one or two arcs (SVG cannot draw a full
			// circle as one arc).
			r := comp.Radius.Points()
			at := func(angle float64) (float64, float64) {
				s, co := math.Sincos(angle)
				return c.page(vg.Point{X: comp.Pos.X + vg.Length(r*co), Y: comp.Pos.Y + vg.Length(r*s)})
			}
			x0, y0 := at(comp.Start)
			c.buf.WriteByte('L')
			c.num(x0)
			c.buf.WriteByte(' ')
			c.num(y0)
			parts := 1
			if math.Abs(comp.Angle) >= math.Pi {
				parts = 2
			}
			for i := 1; i <= parts; i++ {
				x, y := at(comp.Start + comp.Angle*float64(i)/float64(parts))
				sweep := 0 // page y points down: a counter-clockwise gonum arc is clockwise on the page
				if comp.Angle < 0 {
					sweep = 1
				}
				c.buf.WriteString(" A")
				c.num(r)
				c.buf.WriteByte(' ')
				c.num(r)
				fmt.Fprintf(&c.buf, " 0 0 %d ", sweep)
				c.num(x)
				c.buf.WriteByte(' ')
				c.num(y)
				px, py = round(x), round(y)
			}
		case vg.CurveComp:
			x, y := c.page(comp.Pos)
			c.buf.WriteByte('L')
			c.num(x)
			c.buf.WriteByte(' ')
			c.num(y)
			px, py = round(x), round(y)
		case vg.CloseComp:
			c.buf.WriteByte('Z')
		}
	}
}

func (c *svgCanvas) FillString(f font.Face, pt vg.Point, text string) {
	// Glyphs go up in gonum's space and down on the page: flip them back.
	m := affine{a: 1, d: -1, f: c.h.Points()}.mul(c.top().m).mul(affine{a: 1, d: 1, e: pt.X.Points(), f: pt.Y.Points()}).mul(affine{a: 1, d: -1})
	c.buf.WriteString(`<text`)
	if m.b == 0 && m.c == 0 && m.a == 1 && m.d == 1 {
		c.buf.WriteString(` x="`)
		c.num(m.e)
		c.buf.WriteString(`" y="`)
		c.num(m.f)
		c.buf.WriteString(`"`)
	} else {
		fmt.Fprintf(&c.buf, ` transform="matrix(%.3g %.3g %.3g %.3g %.1f %.1f)"`, m.a, m.b, m.c, m.d, m.e, m.f)
	}
	c.buf.WriteString(` font-size="`)
	c.num(f.Font.Size.Points())
	c.buf.WriteString(`"`)
	c.paint("fill", c.top().color)
	c.buf.WriteString(`>`)
	c.buf.WriteString(html.EscapeString(text))
	c.buf.WriteString("</text>\n")
}

// svg returns the document: an <svg> element sized by its viewBox (CSS sets
// its displayed width), with the drawing inside.
func (c *svgCanvas) svg(attrs string) []byte {
	var out bytes.Buffer
	out.Grow(c.buf.Len() + 200)
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" font-family="sans-serif"%s>`+"\n", c.w.Points(), c.h.Points(), attrs)
	out.Write(c.buf.Bytes())
	out.WriteString("</svg>")
	return out.Bytes()
}

var _ vg.CanvasSizer = (*svgCanvas)(nil)
