package profiles

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/profiles/profilestest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// stack is a sample: its frames from the leaf up and its value.
type stack struct {
	frames []string
	value  int64
}

func convert(stacks []stack) []profilestest.Stack {
	out := make([]profilestest.Stack, len(stacks))
	for i, s := range stacks {
		out[i] = profilestest.Stack{Frames: s.frames, Value: s.value}
	}
	return out
}

func cpuProfile(_ testing.TB, stacks ...stack) []byte  { return profilestest.CPU(convert(stacks)...) }
func heapProfile(_ testing.TB, stacks ...stack) []byte { return profilestest.Heap(convert(stacks)...) }

const ms = int64(time.Millisecond)

func TestFunctionsAndTop(t *testing.T) {
	m, err := Merge([]store.Profile{
		{Kind: store.ProfileCPU, Requests: 1000, Data: cpuProfile(t,
			stack{[]string{"main.spin", "main.handle", "net/http.serve"}, 60 * ms},
			stack{[]string{"encoding/json.Marshal", "main.handle", "net/http.serve"}, 30 * ms})},
		{Kind: store.ProfileCPU, Requests: 1000, Data: cpuProfile(t,
			stack{[]string{"main.spin", "main.handle", "net/http.serve"}, 60 * ms},
			stack{[]string{"syscall.Syscall", "net/http.serve"}, 50 * ms})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Count != 2 || m.Requests != 2000 {
		t.Errorf("merged %d profiles, %g requests; want 2, 2000", m.Count, m.Requests)
	}
	top := Top(m, 2)
	want := []TopFunction{
		{Function: "main.spin", FlatUsPerRequest: 60, CumUsPerRequest: 60, FlatShare: 0.6, CumShare: 0.6},
		{Function: "syscall.Syscall", FlatUsPerRequest: 25, CumUsPerRequest: 25, FlatShare: 0.25, CumShare: 0.25},
	}
	if len(top) != 2 || top[0] != want[0] || top[1] != want[1] {
		t.Errorf("Top = %+v\nwant %+v", top, want)
	}
	fs, total := Functions(m.Profile)
	for _, f := range fs {
		if f.Name == "net/http.serve" && (f.Flat != 0 || f.Cum != total) {
			t.Errorf("net/http.serve flat %d cum %d, want 0 and the total %d", f.Flat, f.Cum, total)
		}
	}
}

func TestDiffNamesTheBurningFunction(t *testing.T) {
	base := []stack{
		{[]string{"encoding/json.Marshal", "main.handle"}, 40 * ms},
		{[]string{"syscall.Syscall", "main.handle"}, 60 * ms},
	}
	a, _ := Merge([]store.Profile{{Kind: store.ProfileCPU, Requests: 1000, Data: cpuProfile(t, base...)}})
	b, _ := Merge([]store.Profile{{Kind: store.ProfileCPU, Requests: 1000, Data: cpuProfile(t, append(base, stack{[]string{"main.spin", "main.handle"}, 58 * ms})...)}})
	got := Diff(a, b, 5)
	if len(got) != 1 {
		t.Fatalf("Diff = %+v, want main.spin alone (the others did not move)", got)
	}
	if d := got[0]; d.Function != "main.spin" || d.AUsPerRequest != 0 || d.BUsPerRequest != 58 || d.DeltaUsPerRequest != 58 {
		t.Errorf("Diff[0] = %+v", d)
	}
	if s := got[0].Sentence("B"); s != "B spends +58 µs/request more in main.spin (0 → 37 % of the target's CPU)" {
		t.Errorf("sentence %q", s)
	}
	// The same profile on both sides moves nothing.
	if got := Diff(a, a, 5); len(got) != 0 {
		t.Errorf("Diff(a, a) = %+v, want nothing", got)
	}
	// No requests, no per-request figures.
	if got := Diff(Merged{Profile: a.Profile}, b, 5); got != nil {
		t.Errorf("Diff without requests = %+v", got)
	}
}

func TestHeapGrowth(t *testing.T) {
	first, _ := profile.ParseData(heapProfile(t,
		stack{[]string{"main.(*leakedMemory).retain", "main.handle"}, 1 << 20},
		stack{[]string{"main.newCache"}, 8 << 20}))
	last, _ := profile.ParseData(heapProfile(t,
		stack{[]string{"main.(*leakedMemory).retain", "main.handle"}, 401 << 20},
		stack{[]string{"main.newCache"}, 8 << 20},
		stack{[]string{"bufio.NewReaderSize"}, 4 << 20}))
	got := HeapGrowth(first, last, 5)
	if len(got) != 2 || got[0].Function != "main.(*leakedMemory).retain" || got[0].GrowthBytes != 400<<20 || got[1].Function != "bufio.NewReaderSize" {
		t.Fatalf("HeapGrowth = %+v", got)
	}
	if s := got[0].Sentence(); s != "retained +400 MiB at main.(*leakedMemory).retain (99 % of the growth)" {
		t.Errorf("sentence %q", s)
	}
	if got := HeapGrowth(last, first, 5); got != nil {
		t.Errorf("a heap that shrank: %+v, want nothing", got)
	}
}

func TestTree(t *testing.T) {
	p, _ := profile.ParseData(cpuProfile(t,
		stack{[]string{"main.spin", "main.handle", "main.main"}, 6},
		stack{[]string{"main.write", "main.handle", "main.main"}, 3},
		stack{[]string{"runtime.gcBgMarkWorker"}, 1}))
	root := Tree(p)
	if root.Value != 10 || len(root.Children) != 2 || root.Children[0].Name != "main.main" || root.Children[1].Name != "runtime.gcBgMarkWorker" {
		t.Fatalf("root %+v", root)
	}
	h := root.Children[0].Children[0]
	if h.Name != "main.handle" || h.Value != 9 || len(h.Children) != 2 || h.Children[0].Name != "main.spin" || h.Children[0].Value != 6 {
		t.Errorf("main.handle %+v", h)
	}
}

func TestExplain(t *testing.T) {
	cpuA := []store.Profile{{Kind: store.ProfileCPU, Requests: 100, Data: cpuProfile(t, stack{[]string{"main.handle"}, 10 * ms})}}
	cpuB := []store.Profile{{Kind: store.ProfileCPU, Requests: 100, Data: cpuProfile(t, stack{[]string{"main.handle"}, 10 * ms}, stack{[]string{"main.spin"}, 6 * ms})}}
	vs := []analysis.Verdict{
		{Metric: analysis.MetricCPUMicrosPerReq, Outcome: analysis.Worse},
		{Metric: analysis.MetricP50Ms, Outcome: analysis.Worse},
	}
	if err := ExplainVerdicts(vs, cpuA, cpuB); err != nil {
		t.Fatal(err)
	}
	if len(vs[0].ProfileDiff) == 0 || vs[0].ProfileDiff[0].Function != "main.spin" || vs[1].ProfileDiff != nil {
		t.Errorf("verdicts %+v", vs)
	}
	// An inconclusive verdict gets the diff too (Explains); no_difference none.
	undecided := []analysis.Verdict{{Metric: analysis.MetricCPUMicrosPerReq, Outcome: analysis.Inconclusive}}
	if err := ExplainVerdicts(undecided, cpuA, cpuB); err != nil || len(undecided[0].ProfileDiff) == 0 || undecided[0].ProfileDiff[0].Function != "main.spin" {
		t.Errorf("inconclusive verdict: %+v, %v; want main.spin's diff", undecided, err)
	}
	noDiff := []analysis.Verdict{{Metric: analysis.MetricCPUMicrosPerReq, Outcome: analysis.NoDifference}}
	if err := ExplainVerdicts(noDiff, cpuA, cpuB); err != nil || noDiff[0].ProfileDiff != nil {
		t.Errorf("no_difference verdict got a diff: %+v, %v", noDiff, err)
	}

	heap := []store.Profile{
		{Kind: store.ProfileHeap, Index: 2, Data: heapProfile(t, stack{[]string{"main.retain"}, 1 << 20})},
		{Kind: store.ProfileHeap, Index: 40, Data: heapProfile(t, stack{[]string{"main.retain"}, 101 << 20})},
	}
	var cpu []store.Profile
	for i := range 9 {
		spin := int64(i) * ms // grows with the run
		cpu = append(cpu, store.Profile{Kind: store.ProfileCPU, Index: i * 5, Requests: 100, Data: cpuProfile(t, stack{[]string{"main.handle"}, 10 * ms}, stack{[]string{"main.list"}, 1 + spin*10})})
	}
	fs := []analysis.Finding{
		{Kind: analysis.KindLeak, Severity: analysis.Warning, Summary: "heap grew", Evidence: analysis.Evidence{FirstWindow: 2, LastWindow: 40}},
		{Kind: analysis.KindCollapse, Severity: analysis.Warning, Summary: "throughput fell", Evidence: analysis.Evidence{FirstWindow: 0, LastWindow: 40}},
		{Kind: analysis.KindLeak, Severity: analysis.Info, Summary: "too few readings"},
	}
	if err := ExplainFindings(fs, cpu, heap); err != nil {
		t.Fatal(err)
	}
	if want := "heap grew; retained +100 MiB at main.retain (100 % of the growth)"; fs[0].Summary != want {
		t.Errorf("leak summary %q, want %q", fs[0].Summary, want)
	}
	if len(fs[1].Evidence.Functions) != 1 || fs[1].Evidence.Functions[0].Function != "main.list" || !strings.Contains(fs[1].Summary, "the late windows spend +") {
		t.Errorf("collapse %+v", fs[1])
	}
	if fs[2].Summary != "too few readings" || fs[2].Evidence.AllocationSites != nil {
		t.Errorf("an info finding was explained: %+v", fs[2])
	}
}

func TestSelectAndWrite(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"r1", "ra", "rb"} {
		if err := st.PutRun(ctx, store.Run{ID: id, Name: "x", Kind: "soak", Status: store.Completed, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(run string, idx int, fn string) {
		if err := st.PutProfile(ctx, store.Profile{RunID: run, Kind: store.ProfileCPU, Index: idx, Requests: 10, Data: cpuProfile(t, stack{[]string{fn}, 10 * ms})}); err != nil {
			t.Fatal(err)
		}
	}
	put("r1", 0, "main.a")
	put("r1", 5, "main.b")
	put("ra", 0, "main.sideA")
	put("rb", 0, "main.sideB")
	if err := st.PutComparison(ctx, store.Comparison{ID: "c1", Name: "x", Status: store.Completed, CreatedAt: time.Now(), Rounds: []store.Round{
		{Index: 0, Side: store.SideA, RunID: "ra", Status: store.Completed},
		{Index: 1, Side: store.SideB, RunID: "rb", Status: store.Completed},
	}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sel  Selection
		want []string // functions in the merged profile
		err  error
	}{
		{Selection{ID: "r1"}, []string{"main.a", "main.b"}, nil},
		{Selection{ID: "r1", FromIndex: 5}, []string{"main.b"}, nil},
		{Selection{ID: "r1", ToIndex: 5}, []string{"main.a"}, nil},
		{Selection{ID: "c1", Side: "b"}, []string{"main.sideB"}, nil},
		{Selection{ID: "c1", Side: store.SideA}, []string{"main.sideA"}, nil},
		{Selection{ID: "c1"}, nil, ErrBadSelection},
		{Selection{ID: "r1", Side: store.SideA}, nil, ErrBadSelection},
		{Selection{ID: "nope"}, nil, ErrBadSelection},
		{Selection{ID: "r1", FromIndex: 6}, nil, ErrNone},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		_, err := Write(ctx, st, tt.sel, &b)
		if !errors.Is(err, tt.err) {
			t.Errorf("Write(%+v) = %v, want %v", tt.sel, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		p, err := profile.Parse(&b)
		if err != nil {
			t.Fatalf("Write(%+v) wrote no profile: %v", tt.sel, err)
		}
		var got []string
		for _, f := range p.Function {
			got = append(got, f.Name)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("Write(%+v) functions %v, want %v", tt.sel, got, tt.want)
		}
	}
}

// TestAllocDiff: each round's allocations are its last heap profile's
// alloc_space less its first's, per request of the windows in between;
// B's extra allocation site comes first.
func TestAllocDiff(t *testing.T) {
	ws := func(inc int, requests ...int64) []window.Window {
		var out []window.Window
		for i, n := range requests {
			out = append(out, window.Window{Incarnation: inc, Index: i, Requests: n})
		}
		return out
	}
	allocs := func(index int, stacks ...stack) store.Profile {
		return store.Profile{Kind: store.ProfileHeap, Incarnation: 1, Index: index, Data: profilestest.Allocs(convert(stacks)...)}
	}
	// A: 100 B/request in main.handle over windows 2..3 (200 requests).
	a := []Round{{Windows: ws(1, 100, 100, 100, 100), Heap: []store.Profile{
		allocs(1, stack{[]string{"main.handle"}, 50_000}),
		allocs(3, stack{[]string{"main.handle"}, 70_000}),
	}}}
	// B: the same, and 4096 B/request in main.allocGarbage.
	b := []Round{{Windows: ws(1, 100, 100, 100, 100), Heap: []store.Profile{
		allocs(1, stack{[]string{"main.handle"}, 50_000}, stack{[]string{"main.allocGarbage"}, 1 << 20}),
		allocs(3, stack{[]string{"main.handle"}, 70_000}, stack{[]string{"main.allocGarbage"}, 1<<20 + 200*4096}),
	}}}
	aa, err := AllocatedBy(a)
	if err != nil {
		t.Fatal(err)
	}
	ab, err := AllocatedBy(b)
	if err != nil {
		t.Fatal(err)
	}
	if aa.Requests != 200 || ab.Requests != 200 || aa.Bytes["main.handle"] != 20_000 {
		t.Fatalf("A %+v, B %+v", aa, ab)
	}
	d := AllocDiff(aa, ab, 5)
	if len(d) != 1 || d[0].Function != "main.allocGarbage" || d[0].DeltaBytesPerRequest != 4096 || d[0].ABytesPerRequest != 0 {
		t.Fatalf("AllocDiff = %+v, want main.allocGarbage +4096 B/request only", d)
	}
	if got, want := d[0].Sentence("B"), "B allocates +4.00 KiB/request more at main.allocGarbage (0 → 98 % of the target's allocations)"; got != want {
		t.Errorf("Sentence = %q, want %q", got, want)
	}
	vs := []analysis.Verdict{{Metric: analysis.MetricAllocBytesPerReq, Outcome: analysis.Worse}, {Metric: analysis.MetricCPUMicrosPerReq, Outcome: analysis.Worse}}
	if err := ExplainAllocVerdicts(vs, a, b); err != nil || len(vs[0].AllocDiff) != 1 || vs[1].AllocDiff != nil {
		t.Errorf("ExplainAllocVerdicts: %+v, %v", vs, err)
	}
	// One heap profile per round: nothing to subtract, no diff.
	one := []Round{{Windows: a[0].Windows, Heap: a[0].Heap[:1]}}
	if got, err := AllocatedBy(one); err != nil || got.Requests != 0 {
		t.Errorf("one profile: %+v, %v", got, err)
	}
}
