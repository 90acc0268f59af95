package charts

import (
	"errors"
	"fmt"
	"hash/fnv"
	"html"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/profiles"
	"github.com/longhaul-dev/longhaul/store"
)

// profileTopRows is how many functions a profile page's table lists.
const profileTopRows = 25

// profileView is the profile page of a run or of a comparison's side.
type profileView struct {
	Page page
	// What names the profiles: "run X" or "comparison X, side B".
	What, Kind string
	Back       string
	Count      int
	Requests   float64
	Top        []topRow
	Flame      template.HTML
	Download   string
	// Sides links a comparison's two sides; Diff is B against A.
	Sides []navLink
	Diff  []analysis.FunctionCost
	// KindLinks switch between CPU and heap.
	KindLinks []navLink
	Empty     string
}

type topRow struct {
	Function              string
	FlatPct, CumPct       string
	FlatPerReq, CumPerReq string
}

// profileSelection reads the page's selection from its path and query:
// /runs/{id}/profile or /comparisons/{id}/profile?side=A, kind=cpu|heap.
func profileSelection(r *http.Request) (profiles.Selection, string, error) {
	sel := profiles.Selection{ID: r.PathValue("id"), Kind: store.ProfileKind(r.URL.Query().Get("kind"))}
	if sel.Kind == "" {
		sel.Kind = store.ProfileCPU
	}
	if sel.Kind != store.ProfileCPU && sel.Kind != store.ProfileHeap {
		return sel, "", fmt.Errorf("%w: kind is cpu or heap", errBadRequest)
	}
	base := "/runs/" + url.PathEscape(sel.ID)
	if strings.HasPrefix(r.URL.Path, "/comparisons/") {
		base = "/comparisons/" + url.PathEscape(sel.ID)
		sel.Side = store.Side(strings.ToUpper(r.URL.Query().Get("side")))
		if sel.Side == "" {
			sel.Side = store.SideB
		}
		if sel.Side != store.SideA && sel.Side != store.SideB {
			return sel, "", fmt.Errorf("%w: side is A or B", errBadRequest)
		}
	}
	return sel, base, nil
}

// selectProfiles reads the profiles the request names (profileSelection).
func (s *Server) selectProfiles(r *http.Request) (profiles.Reader, profiles.Selection, string, []store.Profile, error) {
	sel, base, err := profileSelection(r)
	if err != nil {
		return nil, sel, "", nil, err
	}
	pr, ok := s.opts.Store.(profiles.Reader)
	if !ok {
		return nil, sel, "", nil, fmt.Errorf("%w: this store keeps no profiles", errNotFound)
	}
	ps, err := profiles.Select(r.Context(), pr, sel)
	if errors.Is(err, profiles.ErrBadSelection) {
		return nil, sel, "", nil, fmt.Errorf("%w: %v", errNotFound, err)
	}
	return pr, sel, base, ps, err
}

// profileDownload writes the merged profiles as a .pb.gz for go tool pprof.
func (s *Server) profileDownload(w http.ResponseWriter, r *http.Request) error {
	_, sel, _, ps, err := s.selectProfiles(r)
	if err != nil {
		return err
	}
	m, err := profiles.Merge(ps)
	if errors.Is(err, profiles.ErrNone) {
		return fmt.Errorf("%w: no %s profiles", errNotFound, sel.Kind)
	}
	if err != nil {
		return err
	}
	name := sel.ID
	if sel.Side != "" {
		name += "-" + string(sel.Side)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+"-"+string(sel.Kind)+".pb.gz"))
	return m.Write(w)
}

// profilePage shows the merged profiles: the top functions (per request for
// CPU), a flame graph, the download; for a comparison, B against A too.
func (s *Server) profilePage(w http.ResponseWriter, r *http.Request) error {
	pr, sel, base, ps, err := s.selectProfiles(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	v := profileView{Page: page{Title: "Profile " + sel.ID, Nav: []navLink{{"Runs", "/"}}}, Kind: string(sel.Kind), Back: base, What: "run " + sel.ID}
	q := func(kind store.ProfileKind, side store.Side) string {
		vals := url.Values{}
		if kind != store.ProfileCPU {
			vals.Set("kind", string(kind))
		}
		if side != "" {
			vals.Set("side", string(side))
		}
		if len(vals) == 0 {
			return ""
		}
		return "?" + vals.Encode()
	}
	if sel.Side != "" {
		v.What = fmt.Sprintf("comparison %s, side %s", sel.ID, sel.Side)
		v.Sides = []navLink{{"A", base + "/profile" + q(sel.Kind, store.SideA)}, {"B", base + "/profile" + q(sel.Kind, store.SideB)}}
	}
	v.KindLinks = []navLink{{"CPU", base + "/profile" + q(store.ProfileCPU, sel.Side)}, {"heap", base + "/profile" + q(store.ProfileHeap, sel.Side)}}
	v.Download = base + "/profile.pb.gz" + q(sel.Kind, sel.Side)
	m, err := profiles.Merge(ps)
	if errors.Is(err, profiles.ErrNone) {
		v.Empty = fmt.Sprintf("No %s profiles are stored for this %s: its scenario needs probes.profile (see docs/profiles.md).", sel.Kind, map[bool]string{true: "side", false: "run"}[sel.Side != ""])
		return render(w, "profile.html", v)
	}
	if err != nil {
		return err
	}
	v.Count, v.Requests = m.Count, m.Requests
	for _, t := range profiles.Top(m, profileTopRows) {
		row := topRow{Function: t.Function, FlatPct: pctShare(t.FlatShare), CumPct: pctShare(t.CumShare)}
		if sel.Kind == store.ProfileCPU && m.Requests > 0 {
			row.FlatPerReq, row.CumPerReq = fmt.Sprintf("%.2f", t.FlatUsPerRequest), fmt.Sprintf("%.2f", t.CumUsPerRequest)
		}
		v.Top = append(v.Top, row)
	}
	v.Flame = flameSVG(profiles.Tree(m.Profile), sel.Kind)
	if sel.Side != "" && sel.Kind == store.ProfileCPU {
		other := sel
		other.Side = store.SideA
		if a, err := profiles.Select(ctx, pr, other); err == nil {
			if ma, err := profiles.Merge(a); err == nil {
				if sel.Side == store.SideB {
					v.Diff = profiles.Diff(ma, m, profileTopRows)
				} else {
					other.Side = store.SideB
					if b, err := profiles.Select(ctx, pr, other); err == nil {
						if mb, err := profiles.Merge(b); err == nil {
							v.Diff = profiles.Diff(m, mb, profileTopRows)
						}
					}
				}
			}
		}
	}
	return render(w, "profile.html", v)
}

func pctShare(f float64) string {
	if f > 0 && f < 0.001 {
		return "<0.1 %"
	}
	return fmt.Sprintf("%.1f %%", f*100)
}

// Flame graph geometry, in SVG user units (the SVG scales to the page).
const (
	flameWidth    = 1200.0
	flameRow      = 17.0
	flameMaxDepth = 48
	flameMinWidth = 0.3 // narrower frames are left out
	flameCharW    = 6.4 // an 11 px monospace character
)

// flameSVG draws the tree as an icicle graph: the root on top, each frame's
// callees below it, widths by value. It is plain SVG with presentation
// attributes only (the page's CSP refuses style attributes) and a <title>
// on every frame, so hovering shows the function and its share without
// any script.
func flameSVG(root *profiles.Node, kind store.ProfileKind) template.HTML {
	if root.Value <= 0 {
		return ""
	}
	depth := 0
	var measure func(n *profiles.Node, d int, w float64)
	measure = func(n *profiles.Node, d int, w float64) {
		if w < flameMinWidth || d >= flameMaxDepth {
			return
		}
		depth = max(depth, d+1)
		for _, c := range n.Children {
			measure(c, d+1, w*float64(c.Value)/float64(n.Value))
		}
	}
	measure(root, 0, flameWidth)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="flame" viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="flame graph" font-family="monospace" font-size="11">`, flameWidth, float64(depth)*flameRow)
	var draw func(n *profiles.Node, d int, x, w float64)
	draw = func(n *profiles.Node, d int, x, w float64) {
		if w < flameMinWidth || d >= flameMaxDepth {
			return
		}
		y := float64(d) * flameRow
		share := float64(n.Value) / float64(root.Value)
		fmt.Fprintf(&b, `<g><title>%s — %s of %s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s" stroke="#fff" stroke-width="0.5"/>`,
			html.EscapeString(n.Name), pctShare(share), kind, x, y, w, flameRow-1, flameColor(n.Name, d == 0))
		if chars := int((w - 6) / flameCharW); chars >= 3 {
			label := n.Name
			if r := []rune(label); len(r) > chars {
				label = string(r[:chars-1]) + "…"
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#222">%s</text>`, x+3, y+flameRow-5, html.EscapeString(label))
		}
		b.WriteString(`</g>`)
		cx := x
		for _, c := range n.Children {
			cw := w * float64(c.Value) / float64(n.Value)
			draw(c, d+1, cx, cw)
			cx += cw
		}
	}
	draw(root, 0, 0, flameWidth)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from escaped names and numbers only
}

// flameColor gives a function a warm colour of its own, the same on every
// page (hashed from its name); the Go runtime's frames are greyer.
func flameColor(name string, root bool) string {
	if root {
		return "#d0d0d0"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	v := float64(h.Sum32()%1000) / 1000
	r, g, bl := 230, int(110+100*v), int(40+50*v)
	if strings.HasPrefix(name, "runtime.") {
		r, g, bl = int(200-30*v), int(190-20*v), int(170-10*v)
	}
	return fmt.Sprintf("#%02x%02x%02x", clamp255(r), clamp255(g), clamp255(bl))
}

func clamp255(v int) int { return int(math.Max(0, math.Min(255, float64(v)))) }
