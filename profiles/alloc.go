package profiles

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// Allocated is what a set of rounds allocated, by allocation site: the
// bytes each function allocated (alloc_space, flat) between each round's
// first and last heap profile, and the requests served in between.
type Allocated struct {
	Bytes    map[string]int64
	Requests float64
}

// Round is one round's heap profiles and windows, as AllocatedBy reads them.
type Round struct {
	Heap    []store.Profile
	Windows []window.Window
}

// AllocatedBy sums the allocations of rounds. A Go heap profile's
// alloc_space counts every byte allocated since the process started (the
// runtime samples one allocation per 512 KiB and scales the samples up), so
// the last heap profile of an incarnation less its first is what was
// allocated in between: from the close of the first's window to the close
// of the last's, whose requests are those of the windows after the first's
// up to the last's. Incarnations with fewer than two heap profiles, or
// profiles without alloc_space (a Node.js target's sampling heap profile
// has none), add nothing.
func AllocatedBy(rounds []Round) (Allocated, error) {
	out := Allocated{Bytes: map[string]int64{}}
	for _, r := range rounds {
		byInc := map[int][]store.Profile{}
		for _, p := range r.Heap {
			if p.Kind == store.ProfileHeap {
				byInc[p.Incarnation] = append(byInc[p.Incarnation], p)
			}
		}
		for inc, ps := range byInc {
			if len(ps) < 2 {
				continue
			}
			slices.SortFunc(ps, func(a, b store.Profile) int { return a.Index - b.Index })
			first, last := ps[0], ps[len(ps)-1]
			if first.Index == last.Index {
				continue
			}
			before, ok, err := allocSpace(first)
			if err != nil || !ok {
				return out, err
			}
			after, ok, err := allocSpace(last)
			if err != nil || !ok {
				return out, err
			}
			var requests float64
			for _, w := range r.Windows {
				if w.Incarnation == inc && w.Index > first.Index && w.Index <= last.Index {
					requests += float64(w.Requests)
				}
			}
			if requests <= 0 {
				continue
			}
			for name, b := range after {
				if d := b - before[name]; d > 0 {
					out.Bytes[name] += d
				}
			}
			out.Requests += requests
		}
	}
	return out, nil
}

// allocSpace sums a heap profile's alloc_space by function (flat); ok is
// false when the profile has no alloc_space.
func allocSpace(p store.Profile) (map[string]int64, bool, error) {
	pp, err := profile.Parse(bytes.NewReader(p.Data))
	if err != nil {
		return nil, false, fmt.Errorf("heap profile of run %s at window %d: %w", p.RunID, p.Index, err)
	}
	vi := -1
	for i, st := range pp.SampleType {
		if st.Type == "alloc_space" {
			vi = i
		}
	}
	if vi < 0 {
		return nil, false, nil
	}
	fs, _ := functionsAt(pp, vi)
	out := make(map[string]int64, len(fs))
	for _, f := range fs {
		out[f.Name] = f.Flat
	}
	return out, true, nil
}

// MinDeltaBytesPerRequest is the least change in a function's bytes
// allocated per request that AllocDiff reports: the runtime samples one
// allocation in 512 KiB, so small sites come and go between profiles.
const MinDeltaBytesPerRequest = 16

// AllocDiff compares the bytes per request each function allocated on
// side A and side B and returns the n that moved most (by |B − A|, at
// least MinDeltaBytesPerRequest), biggest mover first. Both sides need
// requests.
func AllocDiff(a, b Allocated, n int) []analysis.AllocationCost {
	if a.Requests <= 0 || b.Requests <= 0 {
		return nil
	}
	total := func(m map[string]int64) (t int64) {
		for _, v := range m {
			t += v
		}
		return t
	}
	ta, tb := total(a.Bytes), total(b.Bytes)
	rows := map[string]*analysis.AllocationCost{}
	row := func(name string) *analysis.AllocationCost {
		r := rows[name]
		if r == nil {
			r = &analysis.AllocationCost{Function: name}
			rows[name] = r
		}
		return r
	}
	for name, v := range a.Bytes {
		r := row(name)
		r.ABytesPerRequest, r.AShare = float64(v)/a.Requests, share(v, ta)
	}
	for name, v := range b.Bytes {
		r := row(name)
		r.BBytesPerRequest, r.BShare = float64(v)/b.Requests, share(v, tb)
	}
	for _, r := range rows {
		r.DeltaBytesPerRequest = r.BBytesPerRequest - r.ABytesPerRequest
	}
	return biggestMovers(rows, n, MinDeltaBytesPerRequest, func(r *analysis.AllocationCost) (float64, string) {
		return r.DeltaBytesPerRequest, r.Function
	})
}

// ExplainsAlloc reports whether a verdict gets an allocation diff: an
// alloc_bytes_per_request verdict that is better, worse or inconclusive
// (for the reason Explains gives).
func ExplainsAlloc(v analysis.Verdict) bool {
	return v.Metric == analysis.MetricAllocBytesPerReq &&
		(v.Outcome == analysis.Better || v.Outcome == analysis.Worse || v.Outcome == analysis.Inconclusive)
}

// ExplainAllocVerdicts sets AllocDiff on the alloc_bytes_per_request
// verdicts of vs that ExplainsAlloc, from the heap profiles of side A's
// rounds (a) and side B's (b): the allocation sites whose bytes per
// request moved most. Without allocations measured on both sides the
// verdicts are left as they are.
func ExplainAllocVerdicts(vs []analysis.Verdict, a, b []Round) error {
	if !slices.ContainsFunc(vs, ExplainsAlloc) {
		return nil
	}
	aa, err := AllocatedBy(a)
	if err != nil {
		return err
	}
	ab, err := AllocatedBy(b)
	if err != nil {
		return err
	}
	diff := AllocDiff(aa, ab, DiffFunctions)
	if len(diff) == 0 {
		return nil
	}
	for i, v := range vs {
		if ExplainsAlloc(v) {
			vs[i].AllocDiff = diff
		}
	}
	return nil
}
