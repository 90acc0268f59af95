package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// End-to-end tests of issue 5 through the command: probes sampled each
// window of `longhaul run`, analysis at the end, findings in the report and
// the store, `longhaul analyze`, and bad probe configuration.

// demoScenario soaks the demo target (local provider, SQLite) for 16 s in
// 1 s windows with the process probe, the passive heap metric every window
// and a forced-GC checkpoint every 3.
func demoScenario(t *testing.T, bin string) string {
	t.Helper()
	return writeScenario(t, localYAML("e2e-findings", "{vus: 4, duration: 16s, window: 1s, warmup: 1s, timeout: 5s}", bin, "30s")+listItems+`  heap:
    metric: {}
    gc_hook: {every: 3}
`)
}

// runReport runs `longhaul run ARGS --format json` in-process and returns its
// exit code, report line and stderr.
func runReport(t *testing.T, args ...string) (int, follow.ReportObject, string) {
	t.Helper()
	r := startSoakRun(t, append(args, "--format", "json")...)
	code := r.wait(t)
	if code == exitBadInput {
		return code, follow.ReportObject{}, r.stderr.String()
	}
	return code, reportLine(t, r.stdout.String()), r.stderr.String()
}

func verdictsOf(fs []analysis.Finding) []analysis.Finding {
	var out []analysis.Finding
	for _, f := range fs {
		if f.Severity.Rank() >= analysis.Warning.Rank() {
			out = append(out, f)
		}
	}
	return out
}

func hasKind(fs []analysis.Finding, kind string) bool {
	for _, f := range fs {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

func kinds(fs []analysis.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f.Severity) + " " + f.Kind
	}
	return out
}

// TestFindingsLeakAndClean: the demo target with DEMO_LEAK_BYTES=2048 gives
// a leak finding, the clean one no warning-or-worse finding; each window
// carries the probes' readings; the findings in the report are those in the
// store; `longhaul analyze` reproduces and re-stores them.
func TestFindingsLeakAndClean(t *testing.T) {
	if testing.Short() {
		t.Skip("two end-to-end soaks of 16 s")
	}
	bin := buildDemoTarget(t)
	tests := []struct {
		name     string
		env      []string
		wantLeak bool
	}{
		{"leak", []string{"--target-env", "DEMO_LEAK_BYTES=2048"}, true},
		{"clean", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			code, rep, stderr := runReport(t, append([]string{demoScenario(t, bin), "--data", data}, tt.env...)...)
			if code != exitOK || rep.Status != store.Completed {
				t.Fatalf("exit %d, status %s (%s); stderr:\n%s", code, rep.Status, rep.Reason, stderr)
			}
			got := verdictsOf(rep.Findings)
			if tt.wantLeak {
				if !hasKind(got, analysis.KindLeak) {
					t.Errorf("findings %q, want a leak", kinds(rep.Findings))
				}
			} else if len(got) > 0 {
				t.Errorf("warning-or-worse findings on the clean target: %q", kinds(got))
			}
			if len(rep.ProbeProblems) > 0 {
				t.Errorf("probe problems %+v, want none", rep.ProbeProblems)
			}

			st := storeOf(t, data)
			stored, err := st.Findings(context.Background(), rep.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := kinds(stored), kinds(rep.Findings); strings.Join(g, ",") != strings.Join(w, ",") {
				t.Errorf("stored findings %q, report's %q", g, w)
			}
			ws := runWindows(t, st, rep.RunID)
			var cpu, heap, forced int
			for _, w := range ws {
				if w.Probes.CPUMicrosPerRequest != nil && *w.Probes.CPUMicrosPerRequest > 0 {
					cpu++
				}
				if w.Probes.HeapBytes != nil {
					heap++
				}
				if w.Probes.HeapForcedGC {
					forced++
				}
			}
			if cpu < len(ws)-1 || heap < len(ws)-1 || forced < 4 {
				t.Errorf("of %d windows: %d with CPU per request, %d with a heap reading, %d forced-GC; want all (the first may lack CPU), and 5 forced", len(ws), cpu, heap, forced)
			}

			// longhaul analyze: the same verdict from the stored windows.
			code, out, errOut := runCommand(t, "analyze", rep.RunID, "--data", data, "--format", "json")
			if code != exitOK {
				t.Fatalf("analyze: exit %d: %s", code, errOut)
			}
			var an report.AnalysisObject
			if err := json.Unmarshal([]byte(out), &an); err != nil {
				t.Fatalf("analyze output %q: %v", out, err)
			}
			if g, w := kinds(an.Findings), kinds(rep.Findings); strings.Join(g, ",") != strings.Join(w, ",") {
				t.Errorf("analyze findings %q, the run's %q", g, w)
			}
			if an.Windows != len(ws) || an.WarmupSeconds != 1 {
				t.Errorf("analyze read %d windows with warm-up %vs, want %d and the scenario's 1s", an.Windows, an.WarmupSeconds, len(ws))
			}
			// The start of the run alone: analysed and printed, not stored.
			code, out, errOut = runCommand(t, "analyze", rep.RunID, "--data", data, "--format", "json", "--windows", "3")
			if code != exitOK {
				t.Fatalf("analyze --windows 3: exit %d: %s", code, errOut)
			}
			var part report.AnalysisObject
			if err := json.Unmarshal([]byte(out), &part); err != nil || part.Windows != 3 {
				t.Errorf("analyze --windows 3 read %d windows (%v), want 3", part.Windows, err)
			}
			if after, _ := st.Findings(context.Background(), rep.RunID); strings.Join(kinds(after), ",") != strings.Join(kinds(rep.Findings), ",") {
				t.Errorf("analyze --windows 3 replaced the stored findings %q by %q", kinds(rep.Findings), kinds(after))
			}
			if code, _, _ := runCommand(t, "analyze", rep.RunID, "--data", data, "--until", "-1s"); code != exitBadInput {
				t.Errorf("analyze --until -1s: exit %d, want %d", code, exitBadInput)
			}
			// A warm-up longer than the run leaves nothing to analyse: the
			// stored findings are replaced by that verdict.
			if code, _, errOut := runCommand(t, "analyze", rep.RunID, "--data", data, "--warmup", "1h"); code != exitOK {
				t.Fatalf("analyze --warmup 1h: exit %d: %s", code, errOut)
			}
			stored, _ = st.Findings(context.Background(), rep.RunID)
			if len(verdictsOf(stored)) > 0 || len(stored) == 0 || stored[0].Kind != analysis.KindInsufficientData {
				t.Errorf("findings after analyze --warmup 1h: %q, want insufficient_data only", kinds(stored))
			}
		})
	}
}

// TestFindingsInspectorUnreachable: an inspector port nobody listens on is
// reported once, at start; the soak completes; every window records the
// failing probe; the report lists it under probe problems and the analysis
// says the heap evidence is missing.
func TestFindingsInspectorUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak of 6 s")
	}
	port := freeport.ForTest(t) // free, so nothing answers there
	scen := writeScenario(t, localYAML("e2e-inspector", "{vus: 2, duration: 6s, window: 1s, timeout: 2s}", soakTarget(t), "20s")+getItems+
		fmt.Sprintf("probes:\n  heap:\n    inspector: {port: %d}\n", port))
	data := t.TempDir()
	code, rep, stderr := runReport(t, scen, "--data", data)
	if code != exitOK || rep.Status != store.Completed {
		t.Fatalf("exit %d, status %s (%s); stderr:\n%s", code, rep.Status, rep.Reason, stderr)
	}
	if n := strings.Count(stderr, "probe heap.inspector:"); n != 1 {
		t.Errorf("the failing inspector was logged %d times, want once; stderr:\n%s", n, stderr)
	}
	if len(rep.ProbeProblems) != 1 || rep.ProbeProblems[0].Probe != "heap.inspector" ||
		rep.ProbeProblems[0].Windows != rep.Windows || !strings.Contains(rep.ProbeProblems[0].Error, fmt.Sprint(port)) {
		t.Errorf("probe problems %+v, want heap.inspector failing in all %d windows, naming port %d", rep.ProbeProblems, rep.Windows, port)
	}
	var missing []string
	for _, f := range rep.Findings {
		if f.Kind == analysis.KindMissingEvidence {
			missing = append(missing, f.Evidence.Missing...)
		}
	}
	if !strings.Contains(strings.Join(missing, ","), "heap_bytes") {
		t.Errorf("findings %q (missing %q), want missing_evidence naming heap_bytes", kinds(rep.Findings), missing)
	}
	ws, err := storeOf(t, data).Windows(context.Background(), rep.RunID, store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if len(w.ProbeFailures) != 1 || w.ProbeFailures[0].Probe != "heap.inspector" || w.Probes.HeapBytes != nil {
			t.Errorf("window %d: probe failures %+v, heap %v; want heap.inspector failing and no heap", w.Index, w.ProbeFailures, w.Probes.HeapBytes)
		}
	}

	// The text report says the same.
	r := startSoakRun(t, scen, "--data", t.TempDir())
	if code := r.wait(t); code != exitOK {
		t.Fatalf("text run: exit %d; stderr:\n%s", code, r.stderr.String())
	}
	out := r.stdout.String()
	if !strings.Contains(out, "probe problems:\n  heap.inspector: failing in") || !strings.Contains(out, "missing_evidence") {
		t.Errorf("text report lacks the probe problem or the missing evidence:\n%s", out)
	}
}

// TestFindingsNodeInspectorDocker: the Node.js target in a container, its
// inspector published on 127.0.0.1 because the scenario reads the heap
// through it: a leak is found through the published port.
func TestFindingsNodeInspectorDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end docker soak of 15 s")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no docker engine answers")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: no image of the Node.js target can be built")
	}
	// Builds longhaul/node-target:latest from this machine's node, or finds
	// it up to date (a second or so).
	if out, err := exec.Command("../../bench/accuracy/node-image.sh").CombinedOutput(); err != nil {
		t.Fatalf("bench/accuracy/node-image.sh: %v\n%s", err, out)
	}
	// 2 s windows: the inspector's forced GC and heap reading get 500 ms
	// (a quarter of the window); at 1 s windows the 250 ms budget was missed
	// in a third of the windows on a machine at load average 25.
	scen := writeScenario(t, `name: e2e-node-docker
load: {rate: 300, max_vus: 8, duration: 24s, window: 2s, warmup: 2s, timeout: 5s}
environment:
  provider: docker
  target:
    image: longhaul/node-target:latest
    port: 8080
    health: /health
ops:
  - name: list
    weight: 1
    request: {method: GET, path: /items}
probes:
  heap:
    inspector: {port: 9229}
`)
	data := t.TempDir()
	code, rep, stderr := runReport(t, scen, "--data", data, "--target-env", "LEAK_BYTES=4096")
	if code != exitOK || rep.Status != store.Completed {
		t.Fatalf("exit %d, status %s (%s); stderr:\n%s", code, rep.Status, rep.Reason, stderr)
	}
	// The inspector answers through the published port: a reading that
	// missed its budget on a loaded machine (CI once saw 2 of 12 windows
	// at load average 8) is a timing problem, not a route problem; any
	// other failure, or timeouts in more than a quarter of the windows,
	// is one.
	for _, p := range rep.ProbeProblems {
		if !strings.HasPrefix(p.Error, "no answer within") || p.Windows*4 > p.Of {
			t.Errorf("probe problem %+v, want none (or a missed budget in a few windows)", p)
		}
	}
	if !hasKind(verdictsOf(rep.Findings), analysis.KindLeak) {
		t.Errorf("findings %q, want a leak", kinds(rep.Findings))
	}
	run, err := storeOf(t, data).GetRun(context.Background(), rep.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Ports map[string]int `json:"ports"`
	}
	if err := json.Unmarshal(run.Environment, &env); err != nil || env.Ports["9229"] == 0 {
		t.Errorf("environment %s: no published inspector port (%v)", run.Environment, err)
	}
}

// TestBadProbeConfig: a scenario whose probes section is wrong is refused
// before anything starts, with file:line, exit code 2.
func TestBadProbeConfig(t *testing.T) {
	const head = `name: bad-probes
load: {vus: 1, duration: 5s, window: 1s}
environment:
  target: {url: "http://127.0.0.1:1"}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /}
probes:
`
	tests := []struct {
		name, probes, want string
	}{
		{"unknown probe", "  heap_dump: true\n", `:10: unknown key "heap_dump" in probes`},
		{"unknown heap source", "  heap:\n    inspecter: {port: 9229}\n", `:11: unknown key "inspecter" in heap`},
		{"bad metric name", "  heap:\n    metric: {name: \"heap bytes\"}\n", `:11: heap.metric.name "heap bytes" is not a Prometheus metric name`},
		{"metric name with a digit first", "  heap:\n    metric: {name: 9heap}\n", `:11: heap.metric.name "9heap"`},
		{"inspector off loopback", "  heap:\n    inspector: {host: 10.0.0.1}\n", `:11: heap.inspector.host must be a loopback address`},
		{"inspector port", "  heap:\n    inspector: {port: 70000}\n", `:11: heap.inspector.port must be within 1..65535`},
		{"gc hook every", "  heap:\n    gc_hook: {every: 0}\n", `:11: heap.gc_hook.every`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeScenario(t, head+tt.probes)
			code, _, stderr := runCommand(t, "run", path, "--data", t.TempDir())
			if code != exitBadInput {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitBadInput, stderr)
			}
			if !strings.Contains(stderr, filepath.Base(path)+tt.want) {
				t.Errorf("stderr %q, want it to contain %q", stderr, filepath.Base(path)+tt.want)
			}
			if strings.Contains(stderr, "panic") || strings.Count(strings.TrimSpace(stderr), "\n") > 2 {
				t.Errorf("want one clear line per problem, got:\n%s", stderr)
			}
		})
	}
}

// TestAnalyzeCommand covers longhaul analyze on stored runs: missing probe
// data is named, an unknown run and bad flags are bad input.
func TestAnalyzeCommand(t *testing.T) {
	data := t.TempDir()
	st := storeOf(t, data)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	run := store.Run{ID: "run-no-probes", Name: "np", Kind: "soak", Status: store.Completed, CreatedAt: t0,
		Scenario: "name: np\nload: {vus: 1, duration: 20s, window: 1s, warmup: 2s}\nops:\n  - {name: get, weight: 1, request: {method: GET, path: /}}\n"}
	if err := st.PutRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		w := window.Window{RunID: run.ID, Incarnation: 1, Index: i, Start: t0.Add(time.Duration(i) * time.Second),
			End: t0.Add(time.Duration(i+1) * time.Second), Requests: 1000, OK: 1000, RPS: 1000, VUs: 4,
			LatencyMs: window.Latency{P50: 1, P90: 2, P95: 3, P99: 4, P999: 5, Max: 6}}
		if i >= 5 {
			w.ProbeFailures = []window.ProbeFailure{{Probe: "heap.metric", Error: "GET /metrics: 404 Not Found"}}
		}
		if err := st.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // in stdout (exit 0) or stderr
	}{
		{"text", []string{run.ID}, exitOK, []string{
			"run run-no-probes: 20 windows analysed, warm-up 2s",
			"probe problems:\n  heap.metric: failing in 15 of 20 windows (windows 5-19): GET /metrics: 404 Not Found",
			"info missing_evidence:", "missing post-GC heap, database statistics, target CPU time", "the heap.metric probe failed: GET /metrics: 404 Not Found"}},
		{"json", []string{run.ID, "--format", "json", "--warmup", "3s"}, exitOK, []string{
			`"type":"analysis"`, `"warmup_s":3`, `"kind":"missing_evidence"`, `"missing":["heap_bytes","database","cpu_seconds"]`, `"probe":"heap.metric"`}},
		{"unknown run", []string{"no-such-run"}, exitBadInput, []string{"no run no-such-run in"}},
		{"bad format", []string{run.ID, "--format", "xml"}, exitBadInput, []string{"--format"}},
		{"negative warm-up", []string{run.ID, "--warmup", "-1s"}, exitBadInput, []string{"--warmup must be ≥ 0"}},
		{"no run id", nil, exitBadInput, []string{"accepts 1 arg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCommand(t, append(append([]string{"analyze"}, tt.args...), "--data", data)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %q, stderr %q", code, tt.wantCode, out, errOut)
			}
			got := out
			if code != exitOK {
				got = errOut
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}
	fs, err := st.Findings(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) == 0 {
		t.Error("analyze stored no findings")
	}
}
