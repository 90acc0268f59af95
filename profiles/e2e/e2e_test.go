package e2e_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/devserver/devservertest"
	"github.com/longhaul-dev/longhaul/internal/demomix"
	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/internal/testbin"
	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/profiles"
	"github.com/longhaul-dev/longhaul/soakworker"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// The end-to-end tests of this file run real soaks and comparisons of the
// demo target (examples/demo-target, SQLite, local provider) with profiles
// on: an embedded Temporal server, the real worker (soakworker) and an
// SQLite store, as `longhaul run` and `longhaul compare` wire them. Windows
// are 1 s and rounds a few seconds, so each test takes well under a minute.

// rig is an embedded Temporal server with one real worker on it.
type rig struct {
	c   client.Client
	st  store.Store
	dir string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: real soaks of the demo target")
	}
	ctx := context.Background()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	_, c := devservertest.Start(ctx, t, devserver.Options{DataDir: filepath.Join(dir, "temporal"), Logger: log, LongPoll: time.Second},
		client.Options{Logger: discardSDKLog{}})
	st, err := store.Open(ctx, filepath.Join(dir, "longhaul.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w, err := soakworker.New(ctx, c, st, filepath.Join(dir, "data"), soakworker.Config{HostQueue: "longhaul-host-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &rig{c: c, st: st, dir: dir}
}

// discardSDKLog drops the Temporal client's logs.
type discardSDKLog struct{}

func (discardSDKLog) Debug(string, ...any) {}
func (discardSDKLog) Info(string, ...any)  {}
func (discardSDKLog) Warn(string, ...any)  {}
func (discardSDKLog) Error(string, ...any) {}

// demoTarget builds examples/demo-target (static, as its image does) once
// per test binary.
func demoTarget(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "../../examples/demo-target", "CGO_ENABLED=0")
}

// TestMain removes the demo target the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// demoScenario is the demo target (SQLite, local provider) under a mix of
// reads and writes, 4 VUs, 1 s windows, with the process probe, the heap
// metric (and the Go runtime's counters: bytes allocated per request) and
// the profiles of probes.profile (a YAML flow mapping).
func demoScenario(t *testing.T, duration time.Duration, profile string) string {
	t.Helper()
	return demoScenarioOn(t, "local", duration, profile)
}

// demoScenarioOn is demoScenario on a provider: local runs the demo
// target built here, docker the image longhaul/demo-target:latest
// (scripts/offline-images.sh builds it).
func demoScenarioOn(t *testing.T, provider string, duration time.Duration, profile string) string {
	t.Helper()
	target := fmt.Sprintf("command: [%q]", demoTarget(t))
	if provider == "docker" {
		target = "image: longhaul/demo-target:latest"
	}
	return fmt.Sprintf(`name: profiles-e2e
load: {vus: 4, duration: %s, window: 1s, warmup: 1s, timeout: 5s}
environment:
  provider: %s
  target:
    %s
    health: /health
    health_timeout: 30s
%sprobes:
  process: true
  heap: {metric: {}}
  profile: %s
`, duration, provider, target, demomix.ListCreate, profile)
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// compare runs a comparison of the scenario (pairs of ABBA rounds, no
// equivalence check: the tests' builds answer alike) with bEnv on side B,
// and returns its stored record.
func (r *rig) compare(t *testing.T, scenario string, pairs int, bEnv ...string) store.Comparison {
	t.Helper()
	p, err := launch.PlanCompare(launch.CompareRequest{
		File: writeFile(t, "compare.yaml", scenario), BEnv: bEnv, Pairs: fmt.Sprint(pairs), Order: workflows.OrderABBA,
		Equivalence: "off", DisturbedAbove: "off", Format: "json", Seed: 7, DecideOn: "cpu,p50,p99,throughput",
		Changed: func(string) bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := p.Record
	name := strings.ReplaceAll(t.Name(), "/", "-")
	rec.ID, rec.WorkflowID, rec.CreatedAt = "cmp-"+strings.ToLower(name), "longhaul-compare-"+name, time.Now()
	p.Input.ComparisonID = rec.ID
	if err := r.st.PutComparison(ctx, rec); err != nil {
		t.Fatal(err)
	}
	r.execute(ctx, t, rec.WorkflowID, workflows.CompareWorkflowName, p.Input)
	c, err := r.st.GetComparison(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.Completed {
		t.Fatalf("comparison %s: %s", c.Status, c.Reason)
	}
	return c
}

// soak runs one soak of the scenario with env added to the target's
// environment and returns its run and findings.
func (r *rig) soak(t *testing.T, scenario string, duration time.Duration, env map[string]string) (store.Run, []analysis.Finding) {
	t.Helper()
	p, err := launch.PlanSoak(context.Background(), launch.SoakRequest{File: writeFile(t, "soak.yaml", scenario), Format: "json", HostWait: time.Minute,
		Changed: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := strings.ReplaceAll(t.Name(), "/", "-")
	run := store.Run{ID: "run-" + strings.ToLower(name), Name: p.Scenario.Name, Kind: "soak", Status: store.Pending,
		Scenario: string(p.Source), ScenarioDir: p.Dir, WorkflowID: "longhaul-soak-" + name, CreatedAt: time.Now()}
	if err := r.st.PutRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	r.execute(ctx, t, run.WorkflowID, workflows.WorkflowName,
		workflows.SoakInput{RunID: run.ID, Name: run.Name, Duration: duration, Window: time.Second, TargetEnv: env, HostWait: time.Minute})
	got, err := r.st.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := r.st.Findings(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got, fs
}

// execute runs workflow with input as workflow id on the general queue and
// waits for it to end.
func (r *rig) execute(ctx context.Context, t *testing.T, id, workflow string, input any) {
	t.Helper()
	wr, err := r.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: activities.GeneralQueue}, workflow, input)
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(ctx, nil); err != nil {
		t.Fatalf("%s %s: %v", workflow, id, err)
	}
}

func cpuVerdict(c store.Comparison, metric string) analysis.Verdict {
	for _, v := range c.Verdicts {
		if v.Metric == metric {
			return v
		}
	}
	return analysis.Verdict{}
}

// sideValues is each side's mean of the rounds' values of a metric
// (analysis.RoundValuesOf, warm-up excluded), read back from the windows.
func (r *rig) sideValues(t *testing.T, c store.Comparison, metric string) (a, b float64) {
	t.Helper()
	var sum [2]float64
	var n [2]int
	for _, ro := range c.Rounds {
		if ro.Superseded || ro.Status != store.Completed {
			continue
		}
		ws, err := r.st.Windows(context.Background(), ro.RunID, store.AllWindows)
		if err != nil {
			t.Fatal(err)
		}
		rv, err := analysis.RoundValuesOf(ws, c.Warmup)
		if err != nil {
			t.Fatalf("round %d: %v", ro.Index, err)
		}
		v, ok := rv[metric]
		if !ok {
			t.Fatalf("round %d (%s) has no %s", ro.Index, ro.Side, metric)
		}
		i := 0
		if ro.Side == store.SideB {
			i = 1
		}
		sum[i] += v
		n[i]++
	}
	if n[0] == 0 || n[1] == 0 {
		t.Fatalf("rounds: %d of A, %d of B", n[0], n[1])
	}
	return sum[0] / float64(n[0]), sum[1] / float64(n[1])
}

// TestDemoCompareCPUBurnNamesSpin: B burns 60 µs of CPU per request more
// than A (DEMO_CPU_BURN_US=60, examples/demo-target/burn.go's main.spin).
// B's CPU per request is higher by about that much, the verdict is worse
// (or, with 3 short pairs on a loaded machine, inconclusive — never better
// or no_difference), and the verdict's profile_diff names main.spin first
// with about 60 µs/request more.
func TestDemoCompareCPUBurnNamesSpin(t *testing.T) {
	r := newRig(t)
	c := r.compare(t, demoScenario(t, 6*time.Second, "{pprof: /debug/pprof, seconds: 1, every: 2, heap_every: 10}"), 3, "DEMO_CPU_BURN_US=60")
	v := cpuVerdict(c, analysis.MetricCPUMicrosPerReq)
	a, b := r.sideValues(t, c, analysis.MetricCPUMicrosPerReq)
	t.Logf("cpu_us_per_request: A %.1f, B %.1f; verdict %s (ratio %.3f, %s)", a, b, v.Outcome, v.Ratio, v.Reason)
	for _, d := range v.ProfileDiff {
		t.Logf("  %s", d.Sentence("B"))
	}
	if v.Outcome != analysis.Worse && v.Outcome != analysis.Inconclusive {
		t.Errorf("cpu_us_per_request: %s, want worse (or inconclusive on a loaded machine)", v.Outcome)
	}
	if !(v.Ratio > 1) || !(b-a > 20) {
		t.Errorf("B/A %.3f, B−A %.1f µs/request: want B costlier by about 60", v.Ratio, b-a)
	}
	if len(v.ProfileDiff) == 0 {
		t.Fatalf("no profile_diff on the %s CPU verdict", v.Outcome)
	}
	if top := v.ProfileDiff[0]; top.Function != "main.spin" || top.DeltaUsPerRequest < 30 || top.DeltaUsPerRequest > 120 || top.AUsPerRequest > 1 {
		t.Errorf("profile_diff[0] = %+v, want main.spin at about +60 µs/request (A ≈ 0)", top)
	}
}

// TestDemoLeakNamesRetain: a soak of the demo target with DEMO_LEAK_BYTES
// gives a leak finding whose allocation_sites (from the first and the last
// heap profile, inuse_space) name main.(*leakedMemory).retain first, with
// most of the growth, and whose summary says so.
func TestDemoLeakNamesRetain(t *testing.T) { leakNamesRetain(t, newRig(t), "local") }

func leakNamesRetain(t *testing.T, r *rig, provider string) {
	run, fs := r.soak(t, demoScenarioOn(t, provider, 14*time.Second, "{pprof: /debug/pprof, seconds: 1, every: 4, heap_every: 3}"),
		14*time.Second, map[string]string{"DEMO_LEAK_BYTES": "2048"})
	if run.Status != store.Completed {
		t.Fatalf("run %s: %s", run.Status, run.Reason)
	}
	leak := leakFinding(t, fs)
	if leak == nil {
		t.Fatal("no leak finding")
	}
	sites := leak.Evidence.AllocationSites
	if len(sites) == 0 {
		t.Fatal("the leak finding has no allocation_sites")
	}
	const retain = "main.(*leakedMemory).retain"
	if sites[0].Function != retain || sites[0].Share < 0.5 || sites[0].GrowthBytes <= 0 {
		t.Errorf("allocation_sites[0] = %+v, want %s with most of the growth", sites[0], retain)
	}
	if !strings.Contains(leak.Summary, retain) {
		t.Errorf("summary %q does not name %s", leak.Summary, retain)
	}
}

// leakFinding logs a soak's findings and returns its last leak finding above
// info, or nil.
func leakFinding(t *testing.T, fs []analysis.Finding) *analysis.Finding {
	t.Helper()
	var leak *analysis.Finding
	for i := range fs {
		t.Logf("finding: %s %s: %s", fs[i].Severity, fs[i].Kind, fs[i].Summary)
		if fs[i].Kind == analysis.KindLeak && fs[i].Severity != analysis.Info {
			leak = &fs[i]
		}
	}
	return leak
}

// TestDemoCompareAllocNamesAllocGarbage: B allocates and drops 4096 bytes
// per request more than A (DEMO_ALLOC_BYTES=4096). alloc_bytes_per_request
// (the runtime's counters) is worse, B − A within 10 % of 4096, and the
// verdict's alloc_diff (each round's heap profiles' alloc_space) names
// main.allocGarbage first with about 4 KiB per request more.
func TestDemoCompareAllocNamesAllocGarbage(t *testing.T) { compareAlloc(t, newRig(t), "local") }

func compareAlloc(t *testing.T, r *rig, provider string) {
	c := r.compare(t, demoScenarioOn(t, provider, 6*time.Second, "{pprof: /debug/pprof, seconds: 1, every: 2, heap_every: 2}"), 3, "DEMO_ALLOC_BYTES=4096")
	v := cpuVerdict(c, analysis.MetricAllocBytesPerReq)
	a, b := r.sideValues(t, c, analysis.MetricAllocBytesPerReq)
	t.Logf("alloc_bytes_per_request: A %.0f, B %.0f (B − A %.0f); verdict %s (ratio %.3f, %s)", a, b, b-a, v.Outcome, v.Ratio, v.Reason)
	for _, d := range v.AllocDiff {
		t.Logf("  %s", d.Sentence("B"))
	}
	if v.Outcome != analysis.Worse {
		t.Errorf("alloc_bytes_per_request: %s, want worse", v.Outcome)
	}
	if d := b - a; d < 0.9*4096 || d > 1.1*4096 {
		t.Errorf("B − A = %.0f bytes per request, want 4096 ± 10 %%", d)
	}
	if len(v.AllocDiff) == 0 {
		t.Fatal("no alloc_diff on the alloc_bytes_per_request verdict")
	}
	// The heap profile samples one allocation per 512 KiB: a looser bound
	// than the runtime's exact counters.
	if top := v.AllocDiff[0]; top.Function != "main.allocGarbage" || top.DeltaBytesPerRequest < 0.7*4096 || top.DeltaBytesPerRequest > 1.3*4096 {
		t.Errorf("alloc_diff[0] = %+v, want main.allocGarbage at about +4096 B/request", top)
	}
}

// TestNodeSoakNamesHotLoopAndLeak: a soak of examples/node-target with
// HOT_LOOP_US and LEAK_BYTES, profiled through its inspector
// (probes.profile.inspector). The leak finding's allocation_sites (from
// the sampling heap profiler) name retainString first; the run's CPU
// profiles, merged and read per request as `longhaul profile` and the
// profile page read them, have hotLoop as their top function.
func TestNodeSoakNamesHotLoopAndLeak(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	r := newRig(t)
	port := freeport.ForTest(t)
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "examples", "node-target", "server.js")
	scenario := fmt.Sprintf(`name: node-profiles-e2e
load: {vus: 4, duration: 14s, window: 1s, warmup: 1s, timeout: 5s}
environment:
  provider: local
  target:
    command: [%q, "--inspect=127.0.0.1:%d", %q]
    port: 0
    health: /health
    health_timeout: 30s
ops:
  - {name: list, weight: 1, request: {method: GET, path: /items}}
probes:
  process: true
  heap: {inspector: {port: %d}}
  profile: {inspector: true, seconds: 1, every: 2, heap_every: 3}
`, node, port, script, port)
	run, fs := r.soak(t, scenario, 14*time.Second, map[string]string{"LEAK_BYTES": "4096", "HOT_LOOP_US": "1000"})
	if run.Status != store.Completed {
		t.Fatalf("run %s: %s", run.Status, run.Reason)
	}
	leak := leakFinding(t, fs)
	if leak == nil {
		t.Error("no leak finding")
	} else if sites := leak.Evidence.AllocationSites; len(sites) == 0 || sites[0].Function != "retainString" {
		t.Errorf("allocation_sites %+v, want retainString first", sites)
	}
	ps, err := profiles.Select(context.Background(), r.st, profiles.Selection{ID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	m, err := profiles.Merge(ps)
	if err != nil {
		t.Fatalf("the run's CPU profiles: %v", err)
	}
	top := profiles.Top(m, 3)
	for _, f := range top {
		t.Logf("  %s: %.0f µs/request flat (%.0f %%)", f.Function, f.FlatUsPerRequest, f.FlatShare*100)
	}
	// At least a quarter of the planted cost: with other packages' tests on
	// both cores, V8's sampler read the probes test's loop at 43 % of it
	// (probes.TestProfilerNodeInspector says why).
	if len(top) == 0 || top[0].Function != "hotLoop" || top[0].FlatUsPerRequest < 250 {
		t.Errorf("top functions %+v, want hotLoop first with at least a quarter of its planted 1000 µs/request", top)
	}
}

// TestDemoDockerAllocAndLeak: the allocation comparison and the leak soak
// again on the docker provider (the demo image, its pprof reached through
// the route the driver takes).
func TestDemoDockerAllocAndLeak(t *testing.T) {
	if out, err := exec.Command("docker", "image", "inspect", "longhaul/demo-target:latest").CombinedOutput(); err != nil {
		t.Skipf("no docker image longhaul/demo-target:latest (scripts/offline-images.sh builds it): %v %s", err, out)
	}
	r := newRig(t)
	t.Run("alloc", func(t *testing.T) { compareAlloc(t, r, "docker") })
	t.Run("leak", func(t *testing.T) { leakNamesRetain(t, r, "docker") })
}
