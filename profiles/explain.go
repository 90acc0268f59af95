package profiles

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// DiffFunctions is how many functions a verdict or finding lists.
const DiffFunctions = 5

// ExplainVerdicts sets ProfileDiff on the CPU-per-request verdicts of vs
// that Explains from the CPU profiles of side A (a) and side B (b): each
// side's profiles merged, the functions whose CPU per request moved most.
// Without profiles on both sides the verdicts are left as they are.
func ExplainVerdicts(vs []analysis.Verdict, a, b []store.Profile) error {
	var need bool
	for _, v := range vs {
		need = need || Explains(v)
	}
	if !need || len(a) == 0 || len(b) == 0 {
		return nil
	}
	ma, err := Merge(a)
	if err != nil {
		return err
	}
	mb, err := Merge(b)
	if err != nil {
		return err
	}
	diff := Diff(ma, mb, DiffFunctions)
	for i, v := range vs {
		if Explains(v) && len(diff) > 0 {
			vs[i].ProfileDiff = diff
		}
	}
	return nil
}

// Explains reports whether a verdict gets a profile diff: a CPU-per-request
// verdict that is better, worse or inconclusive. An inconclusive one too,
// because the profiles are evidence of their own: the pairs may be too few
// or too noisy to decide the total, while one function that costs B 60 µs
// per request and A nothing tells the user that the difference is real and
// where it is (and that more pairs would decide it). A no_difference
// verdict gets none: its diff is sampling noise by the verdict's own
// measure.
func Explains(v analysis.Verdict) bool {
	return v.Metric == analysis.MetricCPUMicrosPerReq &&
		(v.Outcome == analysis.Better || v.Outcome == analysis.Worse || v.Outcome == analysis.Inconclusive)
}

// AfterWarmup keeps the profiles that started after the warm-up of their
// incarnation (its first window's start plus warmup), as the verdicts'
// values do.
func AfterWarmup(ps []store.Profile, ws []window.Window, warmup time.Duration) []store.Profile {
	first := map[int]time.Time{}
	for _, w := range ws {
		if t, ok := first[w.Incarnation]; !ok || w.Start.Before(t) {
			first[w.Incarnation] = w.Start
		}
	}
	var out []store.Profile
	for _, p := range ps {
		t, ok := first[p.Incarnation]
		if !ok || !p.Start.Before(t.Add(warmup)) {
			out = append(out, p)
		}
	}
	return out
}

// ExplainFindings adds what the profiles say to fs: a leak finding gets the
// allocation sites whose retained bytes grew most between its incarnation's
// first and latest heap profiles; a collapse finding gets the functions whose
// CPU per request grew most between the first and the last third of its
// windows' CPU profiles. The first of them is added to the summary.
func ExplainFindings(fs []analysis.Finding, cpu, heap []store.Profile) error {
	for i := range fs {
		f := &fs[i]
		switch f.Kind {
		case analysis.KindLeak:
			if f.Severity == analysis.Info {
				continue
			}
			first, last, ok := heapEnds(heap, f.Incarnation)
			if !ok {
				continue
			}
			mf, err := Merge([]store.Profile{first})
			if err != nil {
				return err
			}
			ml, err := Merge([]store.Profile{last})
			if err != nil {
				return err
			}
			sites := HeapGrowth(mf.Profile, ml.Profile, DiffFunctions)
			if len(sites) == 0 {
				continue
			}
			f.Evidence.AllocationSites = sites
			f.Summary += "; " + sites[0].Sentence()
		case analysis.KindCollapse:
			early, late := thirds(cpu, f.Incarnation, f.Evidence.FirstWindow, f.Evidence.LastWindow)
			if len(early) == 0 || len(late) == 0 {
				continue
			}
			me, err := Merge(early)
			if err != nil {
				return err
			}
			ml, err := Merge(late)
			if err != nil {
				return err
			}
			var grew []analysis.FunctionCost
			for _, d := range Diff(me, ml, 4*DiffFunctions) {
				if d.DeltaUsPerRequest > 0 && len(grew) < DiffFunctions {
					grew = append(grew, d)
				}
			}
			if len(grew) == 0 {
				continue
			}
			f.Evidence.Functions = grew
			f.Summary += "; the late windows spend " + grew[0].Moved()
		}
	}
	return nil
}

// heapEnds returns the incarnation's first and latest heap profiles.
func heapEnds(heap []store.Profile, incarnation int) (first, last store.Profile, ok bool) {
	var mine []store.Profile
	for _, p := range heap {
		if p.Incarnation == incarnation {
			mine = append(mine, p)
		}
	}
	if len(mine) < 2 {
		return first, last, false
	}
	slices.SortFunc(mine, func(a, b store.Profile) int { return a.Index - b.Index })
	return mine[0], mine[len(mine)-1], true
}

// thirds splits the incarnation's CPU profiles in windows [from, to] into
// the first and the last third of that range.
func thirds(cpu []store.Profile, incarnation, from, to int) (early, late []store.Profile) {
	span := to - from + 1
	if span < 3 {
		return nil, nil
	}
	for _, p := range cpu {
		switch {
		case p.Incarnation != incarnation || p.Index < from || p.Index > to:
		case p.Index < from+span/3:
			early = append(early, p)
		case p.Index > to-span/3:
			late = append(late, p)
		}
	}
	return early, late
}

// ProfileReader reads a run's stored profiles (store.Store does).
type ProfileReader interface {
	Profiles(ctx context.Context, runID string, q store.ProfileQuery) ([]store.Profile, error)
}

// ExplainRun reads the run's profiles and explains its leak and collapse
// findings with them (ExplainFindings). Runs without such findings read no
// profiles.
func ExplainRun(ctx context.Context, st ProfileReader, runID string, fs []analysis.Finding) error {
	var need bool
	for _, f := range fs {
		need = need || f.Kind == analysis.KindLeak || f.Kind == analysis.KindCollapse
	}
	if !need {
		return nil
	}
	ps, err := st.Profiles(ctx, runID, store.ProfileQuery{WithData: true})
	if err != nil {
		return fmt.Errorf("read the profiles of run %s: %w", runID, err)
	}
	var cpu, heap []store.Profile
	for _, p := range ps {
		if p.Kind == store.ProfileHeap {
			heap = append(heap, p)
		} else {
			cpu = append(cpu, p)
		}
	}
	return ExplainFindings(fs, cpu, heap)
}
