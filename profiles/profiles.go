// Package profiles reads the CPU and heap profiles stored with a run
// (store.Profile, pprof format) into evidence: merged per run or per side of
// a comparison, normalised per request, diffed; the allocation sites whose
// retained bytes grew; a flame graph's tree.
//
// Recipe:
//
//  1. Select: Of(ctx, st, Selection{Run: id}) or Selection{Comparison: id,
//     Side: store.SideB} reads the stored profiles (CPU by default).
//  2. Merge(ps) parses and merges them into one *profile.Profile and sums
//     the requests served while they sampled.
//  3. Read it: Top (functions by CPU per request), Diff (A against B, the
//     biggest movers first), HeapGrowth (first against last heap profile),
//     Tree (a flame graph), or Write it as a .pb.gz that `go tool pprof`
//     opens.
//
// Per request: a CPU profile's samples are the target's CPU time while it
// sampled; divided by the requests served meanwhile (store.Profile.Requests)
// they are µs per request, comparable between rounds of different lengths
// and throughputs.
package profiles

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
)

// ErrNone is returned when there are no profiles to read.
var ErrNone = errors.New("no profiles")

// Merged is a set of profiles merged into one.
type Merged struct {
	*profile.Profile
	// Requests served while the CPU profiles sampled (0 for heap profiles
	// or when unknown).
	Requests float64
	// Count is how many profiles were merged.
	Count int
}

// Merge parses and merges ps (all of one kind). It fails with ErrNone when
// ps is empty.
func Merge(ps []store.Profile) (Merged, error) {
	if len(ps) == 0 {
		return Merged{}, ErrNone
	}
	parsed := make([]*profile.Profile, 0, len(ps))
	var m Merged
	for _, p := range ps {
		pp, err := profile.Parse(bytes.NewReader(p.Data))
		if err != nil {
			return Merged{}, fmt.Errorf("%s profile of run %s at window %d: %w", p.Kind, p.RunID, p.Index, err)
		}
		parsed = append(parsed, pp)
		m.Requests += p.Requests
	}
	merged, err := profile.Merge(parsed)
	if err != nil {
		return Merged{}, fmt.Errorf("merge %d profiles: %w", len(ps), err)
	}
	m.Profile, m.Count = merged, len(ps)
	return m, nil
}

// Write writes the merged profile as a gzipped profile.proto.
func (m Merged) Write(w io.Writer) error { return m.Profile.Write(w) }

// valueIndex is the sample value a profile is read by: CPU time
// ("cpu"/nanoseconds) for a CPU profile, retained bytes ("inuse_space") for
// a heap profile, else the last value.
func valueIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "cpu" || st.Type == "inuse_space" {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// Function is one function's share of a profile: Flat is what it spent
// itself (the leaf of the stack), Cum what it and its callees spent, in
// the profile's unit (nanoseconds of CPU, bytes retained).
type Function struct {
	Name      string
	Flat, Cum int64
}

// Functions sums p by function: flat (by the leaf frame, inlined frames
// counted as their own functions) and cumulative (each function once per
// stack). It returns them by flat, largest first, with the total. A CPU
// profile is read by its CPU time, a heap profile by its retained bytes
// (inuse_space).
func Functions(p *profile.Profile) ([]Function, int64) {
	return functionsAt(p, valueIndex(p))
}

// functionsAt is Functions by the sample value at index vi.
func functionsAt(p *profile.Profile, vi int) ([]Function, int64) {
	byName := map[string]*Function{}
	get := func(name string) *Function {
		f := byName[name]
		if f == nil {
			f = &Function{Name: name}
			byName[name] = f
		}
		return f
	}
	var total int64
	seen := map[string]bool{}
	for _, s := range p.Sample {
		v := s.Value[vi]
		if v == 0 {
			continue
		}
		total += v
		clear(seen)
		for i, loc := range s.Location {
			for j, ln := range loc.Line {
				name := funcName(ln)
				if i == 0 && j == 0 {
					get(name).Flat += v
				}
				if !seen[name] {
					seen[name] = true
					get(name).Cum += v
				}
			}
			if len(loc.Line) == 0 && i == 0 {
				get(fmt.Sprintf("0x%x", loc.Address)).Flat += v
			}
		}
	}
	out := make([]Function, 0, len(byName))
	for _, f := range byName {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Function) int {
		if c := cmp.Compare(b.Flat, a.Flat); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Cum, a.Cum); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out, total
}

func funcName(ln profile.Line) string {
	if ln.Function == nil || ln.Function.Name == "" {
		return "?"
	}
	return ln.Function.Name
}

// TopFunction is a row of a run's top-functions table.
type TopFunction struct {
	Function string `json:"function"`
	// FlatUsPerRequest and CumUsPerRequest are 0 when the requests are unknown.
	FlatUsPerRequest float64 `json:"flat_us_per_request"`
	CumUsPerRequest  float64 `json:"cum_us_per_request"`
	// FlatShare and CumShare are of the profile's total (0.61 is 61 %).
	FlatShare float64 `json:"flat_share"`
	CumShare  float64 `json:"cum_share"`
}

// Top returns the n functions with the most flat CPU of m, per request.
func Top(m Merged, n int) []TopFunction {
	fs, total := Functions(m.Profile)
	if total == 0 {
		return nil
	}
	var out []TopFunction
	for _, f := range fs {
		if len(out) == n {
			break
		}
		if f.Flat == 0 {
			break
		}
		out = append(out, TopFunction{
			Function: f.Name, FlatUsPerRequest: usPerRequest(f.Flat, m.Requests), CumUsPerRequest: usPerRequest(f.Cum, m.Requests),
			FlatShare: float64(f.Flat) / float64(total), CumShare: float64(f.Cum) / float64(total),
		})
	}
	return out
}

// usPerRequest turns nanoseconds of CPU into µs per request.
func usPerRequest(ns int64, requests float64) float64 {
	if requests <= 0 {
		return 0
	}
	return float64(ns) / 1e3 / requests
}

// MinDeltaUsPerRequest is the least change in a function's CPU per request
// that Diff reports: below it, sampling noise (a 100 Hz profile of a few
// seconds) moves functions about.
const MinDeltaUsPerRequest = 0.5

// Diff compares the flat CPU per request of every function in a and b and
// returns the n that moved most (by |B − A|, at least
// MinDeltaUsPerRequest), biggest mover first. Both need their requests.
func Diff(a, b Merged, n int) []analysis.FunctionCost {
	if a.Requests <= 0 || b.Requests <= 0 {
		return nil
	}
	fa, ta := Functions(a.Profile)
	fb, tb := Functions(b.Profile)
	rows := map[string]*analysis.FunctionCost{}
	row := func(name string) *analysis.FunctionCost {
		r := rows[name]
		if r == nil {
			r = &analysis.FunctionCost{Function: name}
			rows[name] = r
		}
		return r
	}
	for _, f := range fa {
		r := row(f.Name)
		r.AUsPerRequest = usPerRequest(f.Flat, a.Requests)
		r.AShare = share(f.Flat, ta)
	}
	for _, f := range fb {
		r := row(f.Name)
		r.BUsPerRequest = usPerRequest(f.Flat, b.Requests)
		r.BShare = share(f.Flat, tb)
	}
	for _, r := range rows {
		r.DeltaUsPerRequest = r.BUsPerRequest - r.AUsPerRequest
	}
	return biggestMovers(rows, n, MinDeltaUsPerRequest, func(r *analysis.FunctionCost) (float64, string) { return r.DeltaUsPerRequest, r.Function })
}

// biggestMovers returns the n rows whose change (delta, by absolute value)
// is largest and at least least, biggest first, ties by name: what a
// profile diff reports, whatever it measures.
func biggestMovers[T any](rows map[string]*T, n int, least float64, key func(*T) (delta float64, name string)) []T {
	var out []T
	for _, r := range rows {
		if d, _ := key(r); math.Abs(d) >= least {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(x, y T) int {
		dx, nx := key(&x)
		dy, ny := key(&y)
		if c := cmp.Compare(math.Abs(dy), math.Abs(dx)); c != 0 {
			return c
		}
		return cmp.Compare(nx, ny)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func share(v, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(v) / float64(total)
}

// HeapGrowth compares two heap profiles (inuse_space: the bytes retained
// at each site) and returns the n allocation sites whose retained bytes grew
// most, with their share of the whole profile's growth. Sites that did not
// grow are left out; so is everything when the heap did not grow.
func HeapGrowth(first, last *profile.Profile, n int) []analysis.AllocationSite {
	ff, tf := Functions(first)
	fl, tl := Functions(last)
	growth := tl - tf
	if growth <= 0 {
		return nil
	}
	before := map[string]int64{}
	for _, f := range ff {
		before[f.Name] = f.Flat
	}
	var out []analysis.AllocationSite
	for _, f := range fl {
		g := f.Flat - before[f.Name]
		if g <= 0 {
			continue
		}
		out = append(out, analysis.AllocationSite{
			Function: f.Name, BeforeBytes: before[f.Name], AfterBytes: f.Flat, GrowthBytes: g,
			Share: float64(g) / float64(growth),
		})
	}
	slices.SortFunc(out, func(x, y analysis.AllocationSite) int {
		if c := cmp.Compare(y.GrowthBytes, x.GrowthBytes); c != 0 {
			return c
		}
		return cmp.Compare(x.Function, y.Function)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Node is a frame of a flame graph: the function, the value of the stacks
// through it (its own and its callees'), and its callees by name.
type Node struct {
	Name     string
	Value    int64
	Children []*Node
}

// Tree builds p's flame graph: the root ("all") holds every stack, each
// stack from its outermost caller down to its leaf, inlined frames as
// frames of their own; children are ordered by name, so that the same
// function stays in the same place from one profile to the next.
func Tree(p *profile.Profile) *Node {
	vi := valueIndex(p)
	root := &Node{Name: "all"}
	index := map[*Node]map[string]*Node{}
	for _, s := range p.Sample {
		v := s.Value[vi]
		if v <= 0 {
			continue
		}
		root.Value += v
		n := root
		for i := len(s.Location) - 1; i >= 0; i-- {
			loc := s.Location[i]
			for j := len(loc.Line) - 1; j >= 0; j-- {
				n = child(index, n, funcName(loc.Line[j]))
				n.Value += v
			}
		}
	}
	sortTree(root)
	return root
}

func child(index map[*Node]map[string]*Node, n *Node, name string) *Node {
	m := index[n]
	if m == nil {
		m = map[string]*Node{}
		index[n] = m
	}
	c := m[name]
	if c == nil {
		c = &Node{Name: name}
		m[name] = c
		n.Children = append(n.Children, c)
	}
	return c
}

func sortTree(n *Node) {
	slices.SortFunc(n.Children, func(a, b *Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range n.Children {
		sortTree(c)
	}
}
