package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/demomix"
	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// End-to-end tests of issue 11 through the command: `longhaul compare`
// with the embedded server and worker, short rounds in 1 s windows, the
// demo target on the local provider (and on the docker provider where an
// engine answers); `longhaul comparisons`; `longhaul report ID` of a
// comparison.

// compareScenario drives the demo target (local provider, its own SQLite
// per process, so every round's environment is fresh) with
// demomix.ListCreate: the list op is the one DEMO_RESPONSE_VARIANT changes.
func compareScenario(t *testing.T, bin string) string {
	t.Helper()
	return writeScenario(t, localYAML("e2e-compare", "{vus: 4, duration: 4s, window: 1s, warmup: 1s, timeout: 5s}", bin, "30s")+demomix.ListCreate+"probes:\n  process: true\n")
}

// compareRun is one finished in-process `longhaul compare`.
type compareRun struct {
	code           int
	stdout, stderr string
	obj            report.ComparisonObject
	rounds         []report.RoundObject // the NDJSON progress lines
	equivalence    []string             // the equivalence progress lines' statuses
}

// runCompare runs `longhaul compare ARGS --format json` in-process, bounded
// by timeout, and parses its NDJSON.
func runCompare(t *testing.T, timeout time.Duration, args ...string) compareRun {
	t.Helper()
	return startCompare(t, timeout, args...)()
}

// startCompare starts `longhaul compare ARGS --format json` in-process in
// the background; the function it returns waits for it and parses its
// NDJSON.
func startCompare(t *testing.T, timeout time.Duration, args ...string) func() compareRun {
	t.Helper()
	var out, errOut lockedbuf.Buffer
	home := t.TempDir()
	a := &app{stdout: &out, stderr: &errOut, stdin: strings.NewReader(""),
		getenv: func(k string) string { return map[string]string{"HOME": home}[k] }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	code := make(chan int, 1)
	go func() {
		defer cancel()
		code <- a.run(ctx, append(append([]string{"compare"}, args...), "--format", "json", "--ui-addr", "off"))
	}()
	return func() compareRun {
		t.Helper()
		r := compareRun{code: <-code}
		r.stdout, r.stderr = out.String(), errOut.String()
		r.parse(t)
		return r
	}
}

func (r *compareRun) parse(t *testing.T) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var head struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			t.Fatalf("not NDJSON: %q: %v", sc.Text(), err)
		}
		switch head.Type {
		case "round":
			var ro report.RoundObject
			if err := json.Unmarshal(sc.Bytes(), &ro); err != nil {
				t.Fatal(err)
			}
			r.rounds = append(r.rounds, ro)
		case "equivalence":
			r.equivalence = append(r.equivalence, head.Status)
		case "comparison":
			if err := json.Unmarshal(sc.Bytes(), &r.obj); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("unexpected line type %q: %s", head.Type, sc.Text())
		}
	}
}

func (r compareRun) verdict(metric string) (outcome string, ok bool) {
	for _, v := range r.obj.Verdicts {
		if v.Metric == metric {
			return string(v.Outcome), true
		}
	}
	return "", false
}

// TestCompareLocalCPUBurn: B burns 400 µs of CPU per request more than A
// (DEMO_CPU_BURN_US): 3 pairs of 4 s rounds in ABBA order on the local
// provider say worse on cpu_us_per_request, --fail-on-worse makes that
// exit 3, the equivalence check found identical responses, every round is
// a completed run with windows, and `longhaul comparisons` and `longhaul
// report ID` (text and JSON) show the stored comparison.
func TestCompareLocalCPUBurn(t *testing.T) {
	file, data := demoCompare(t)
	r := runCompare(t, 4*time.Minute, file, "--data", data, "--pairs", "3", "--b-env", "DEMO_CPU_BURN_US=400",
		"--equivalence", "50", "--fail-on-worse", "--seed", "7",
		// The machine is shared: other work may take more than a quarter
		// of it, which would mark every round disturbed (the workflow's
		// tests cover disturbed rounds and reruns).
		"--disturbed-above", "off")
	if r.code != exitWorse {
		t.Fatalf("exit %d, want %d (worse with --fail-on-worse); stderr:\n%s\nstdout:\n%s", r.code, exitWorse, r.stderr, r.stdout)
	}
	o := r.obj
	if o.Status != store.Completed || o.Order != "abba" || o.Pairs != 3 || o.SameBuild {
		t.Errorf("comparison: status %s, order %s, %d pairs, same build %v", o.Status, o.Order, o.Pairs, o.SameBuild)
	}
	if o.Equivalence.Status != "identical" || o.Equivalence.Requests != 50 || len(r.equivalence) != 1 {
		t.Errorf("equivalence %+v (progress lines %v), want identical after 50 requests", o.Equivalence, r.equivalence)
	}
	if got, _ := r.verdict("cpu_us_per_request"); got != "worse" {
		t.Errorf("cpu_us_per_request: %s, want worse; verdicts: %+v", got, o.Verdicts)
	}
	if strings.Join(o.Worse, ",") == "" || !strings.Contains(r.stderr, "B is worse on") {
		t.Errorf("worse metrics %v; stderr:\n%s", o.Worse, r.stderr)
	}
	sides := ""
	for _, ro := range o.Rounds {
		sides += string(ro.Side)
	}
	if sides != "ABBAAB" || len(r.rounds) != 6 {
		t.Fatalf("rounds %s with %d progress lines, want ABBAAB and 6", sides, len(r.rounds))
	}
	st := storeOf(t, data)
	for _, ro := range o.Rounds {
		if ro.Seconds < 4 {
			t.Errorf("round %d took %.1f s by its record, want its 4 s at least", ro.Index, ro.Seconds)
		}
		run, err := st.GetRun(context.Background(), ro.RunID)
		if err != nil || run.Status != store.Completed {
			t.Errorf("round %d: run %s: %v, %v", ro.Index, ro.RunID, run.Status, err)
			continue
		}
		ws, err := st.Windows(context.Background(), ro.RunID, store.AllWindows)
		if err != nil || len(ws) < 3 {
			t.Errorf("round %d: %d windows, %v", ro.Index, len(ws), err)
		}
	}

	code, out, errOut := runCommand(t, "comparisons", "--data", data)
	if code != exitOK || !strings.Contains(out, o.ID) || !strings.Contains(out, "DEMO_CPU_BURN_US=400") || !strings.Contains(out, "worse") {
		t.Errorf("comparisons: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCommand(t, "report", o.ID, "--data", data)
	if code != exitOK || !strings.Contains(out, "CPU/request: B won 0/3 pairs") || !strings.Contains(out, "equivalence: identical (50 requests)") {
		t.Errorf("report: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCommand(t, "report", o.ID, "--data", data, "--format", "json")
	var again report.ComparisonObject
	if code != exitOK || json.Unmarshal([]byte(out), &again) != nil || again.ID != o.ID || len(again.Verdicts) != len(o.Verdicts) {
		t.Errorf("report --format json: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCompareResponseVariant: DEMO_RESPONSE_VARIANT=1 on B changes GET
// /items; the equivalence check says different, naming the op and the JSON
// path, and the comparison fails (exit 1) before any timed round. With
// --allow-diff it goes on.
func TestCompareResponseVariant(t *testing.T) {
	file, data := demoCompare(t)
	r := runCompare(t, 2*time.Minute, file, "--data", data, "--pairs", "1", "--b-env", "DEMO_RESPONSE_VARIANT=1", "--equivalence", "40")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", r.code, exitFailed, r.stderr, r.stdout)
	}
	e := r.obj.Equivalence
	if e.Status != "different" || e.FirstDifference == nil || e.FirstDifference.Op != "list" || !strings.HasPrefix(e.FirstDifference.JSONPath, "$") {
		t.Fatalf("equivalence %+v, want different on op list with a JSON path", e)
	}
	if r.obj.Status != store.Failed || !strings.Contains(r.obj.Reason, "answer differently") || len(r.obj.Rounds) != 0 {
		t.Errorf("status %s (%s), %d rounds; want failed before any round", r.obj.Status, r.obj.Reason, len(r.obj.Rounds))
	}
	t.Logf("first difference: %s", report.EquivalenceLine(e))

	r = runCompare(t, 2*time.Minute, file, "--data", data, "--pairs", "1", "--round-duration", "2s",
		"--b-env", "DEMO_RESPONSE_VARIANT=1", "--equivalence", "40", "--allow-diff")
	if r.code != exitOK || r.obj.Equivalence.Status != "different" || len(r.obj.Rounds) != 2 {
		t.Errorf("--allow-diff: exit %d, equivalence %s, %d rounds; want 0, different, 2\nstderr:\n%s", r.code, r.obj.Equivalence.Status, len(r.obj.Rounds), r.stderr)
	}
}

// TestCompareDockerAvsA: the demo image on the docker provider against
// itself, 1 pair of 3 s rounds: both rounds complete in containers, the
// equivalence check says identical, no metric is better or worse, and no
// container of the comparison is left.
func TestCompareDockerAvsA(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end comparison in containers")
	}
	requireDocker(t)
	if docker(t, "images", "-q", "longhaul/demo-target:latest") == "" {
		t.Skip("no longhaul/demo-target:latest image (scripts/offline-images.sh builds it)")
	}
	file := writeScenario(t, `name: e2e-compare-docker
load: {vus: 4, duration: 3s, window: 1s, warmup: 1s, timeout: 5s}
environment:
  provider: docker
  target:
    image: longhaul/demo-target:latest
    health: /health
    health_timeout: 30s
`+listItems)
	data := t.TempDir()
	r := runCompare(t, 4*time.Minute, file, "--data", data, "--pairs", "1", "--equivalence", "20")
	if r.code != exitOK || r.obj.Status != store.Completed || !r.obj.SameBuild {
		t.Fatalf("exit %d, status %s (%s), same build %v; stderr:\n%s", r.code, r.obj.Status, r.obj.Reason, r.obj.SameBuild, r.stderr)
	}
	if r.obj.Equivalence.Status != "identical" || len(r.obj.Rounds) != 2 {
		t.Errorf("equivalence %s, %d rounds", r.obj.Equivalence.Status, len(r.obj.Rounds))
	}
	for _, v := range r.obj.Verdicts {
		if v.Outcome == "better" || v.Outcome == "worse" {
			t.Errorf("A vs A: %s %s (%s)", v.Metric, v.Outcome, v.Summary)
		}
	}
	for _, ro := range r.obj.Rounds {
		checkNoLabelled(t, ro.RunID)
	}
}

// TestCompareBadInput: every mistake is one line and exit 2, before
// anything is stored.
func TestCompareBadInput(t *testing.T) {
	ok := writeScenario(t, `name: local
environment:
  provider: local
  target: {command: ["/bin/true"], health: /health}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /items}}
`)
	url := writeScenario(t, `name: url
environment:
  target: {url: "http://127.0.0.1:1"}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /items}}
`)
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no file", []string{"compare"}, "compare takes one scenario file: longhaul compare FILE"},
		{"missing file", []string{"compare", filepath.Join(t.TempDir(), "nope.yaml")}, "nope.yaml"},
		{"running target", []string{"compare", url}, "target.url"},
		{"bad order", []string{"compare", ok, "--order", "aabb"}, "--order"},
		{"bad pairs", []string{"compare", ok, "--pairs", "0"}, "--pairs"},
		{"bad equivalence", []string{"compare", ok, "--equivalence", "lots"}, "--equivalence"},
		{"bad provider", []string{"compare", ok, "--provider", "url"}, "--provider"},
		{"bad format", []string{"compare", ok, "--format", "xml"}, "--format"},
		{"bad disturbed-above", []string{"compare", ok, "--disturbed-above", "2"}, "--disturbed-above"},
		{"ref and image", []string{"compare", ok, "--b", "main", "--b-image", "x:1"}, "--b and --b-image"},
		{"ref without build", []string{"compare", ok, "--a", "main"}, "target.build"},
		{"image on local", []string{"compare", ok, "--a-image", "x:1"}, "--a-image"},
		{"bad env", []string{"compare", ok, "--b-env", "NOEQUALS"}, "--b-env"},
		{"window longer than round", []string{"compare", ok, "--round-duration", "2s", "--window", "5s"}, "longer than a round"},
		{"warm-up too long", []string{"compare", ok, "--round-duration", "2s", "--window", "1s", "--warmup", "2s"}, "warm-up"},
		{"comparisons bad status", []string{"comparisons", "--status", "exploded"}, "--status"},
		{"report unknown id", []string{"report", "no-such-id"}, "no run or comparison"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runLonghaul(t, runOpts{}, append(tt.args, "--data", t.TempDir())...)
			if r.code != exitBadInput {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitBadInput, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.stderr) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Errorf("stderr is not one line mentioning %q:\n%s", tt.stderr, r.stderr)
			}
		})
	}
}

// TestCompareLocalRefs: --a and --b name git refs of a repository whose
// app/burn file differs (0 and 400 µs of CPU per request); the local
// provider builds each ref once from its commit's tree (cached under the
// data directory by commit) and runs the target in that tree, so B is
// worse on CPU per request and the report names both commits.
func TestCompareLocalRefs(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end comparison")
	}
	bin := buildDemoTarget(t)
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.MkdirAll(filepath.Join(repo, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ tag, burn string }{{"base", "0"}, {"slow", "400"}} {
		if err := os.WriteFile(filepath.Join(repo, "app", "burn"), []byte(v.burn+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", ".")
		git("commit", "-q", "-m", v.tag)
		git("tag", v.tag)
	}
	file := writeScenario(t, fmt.Sprintf(`name: e2e-compare-refs
load: {vus: 4, duration: 3s, window: 1s, warmup: 1s, timeout: 5s}
environment:
  provider: local
  target:
    dir: %q
    build:
      command: cp %q "$LONGHAUL_ENV_DIR/demo-target"
    command: ["sh", "-c", "DEMO_CPU_BURN_US=$(cat burn) exec {{.EnvDir}}/demo-target"]
    health: /health
    health_timeout: 30s
`, filepath.Join(repo, "app"), bin)+listItems)
	data := t.TempDir()
	r := runCompare(t, 4*time.Minute, file, "--data", data, "--a", "base", "--b", "slow", "--pairs", "3",
		"--equivalence", "20", "--disturbed-above", "off")
	if r.code != exitOK || r.obj.Status != store.Completed {
		t.Fatalf("exit %d, status %s (%s); stderr:\n%s", r.code, r.obj.Status, r.obj.Reason, r.stderr)
	}
	if len(r.obj.A.Commit) != 40 || len(r.obj.B.Commit) != 40 || r.obj.A.Commit == r.obj.B.Commit || r.obj.SameBuild {
		t.Errorf("sides %+v %+v: want two different commits", r.obj.A, r.obj.B)
	}
	if got, _ := r.verdict("cpu_us_per_request"); got != "worse" {
		t.Errorf("cpu_us_per_request %s, want worse: %+v", got, r.obj.Verdicts)
	}
	builds, _ := filepath.Glob(filepath.Join(data, "builds", "*"))
	if len(builds) != 2 {
		t.Errorf("builds %v, want one per commit", builds)
	}
}

// TestCompareWorkerKill: kill -9 of the worker in the second round of a
// comparison (local provider, `longhaul dev` and `longhaul worker` as
// processes). A worker started again resumes: the round in progress
// completes (with a gap for the window the kill cut), the first round is
// not run again, and the comparison completes with its verdicts.
func TestCompareWorkerKill(t *testing.T) {
	file, data := demoCompare(t)
	_, addr := startDev(t, data, "--worker=false")
	w1 := startWorker(t, addr, data)
	wait := startCompare(t, 4*time.Minute, file, "--temporal", addr, "--data", data, "--pairs", "1",
		"--round-duration", "8s", "--equivalence", "10", "--disturbed-above", "off")
	st := storeOf(t, data)
	var cmp store.Comparison
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		cs, err := st.ListComparisons(context.Background(), store.ListOptions{})
		if err == nil && len(cs) == 1 && len(cs[0].Rounds) == 2 {
			cmp = cs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second round did not start; comparisons %+v, %v", cs, err)
		}
	}
	second := cmp.Rounds[1].RunID
	waitWindow(t, st, second, 2)
	w1.kill9()
	w2 := startWorker(t, addr, data)
	defer w2.stop()
	r := wait()
	if r.code != exitOK || r.obj.Status != store.Completed || len(r.obj.Rounds) != 2 {
		t.Fatalf("exit %d, status %s (%s), %d rounds; stderr:\n%s", r.code, r.obj.Status, r.obj.Reason, len(r.obj.Rounds), r.stderr)
	}
	for _, ro := range r.obj.Rounds {
		if ro.Status != store.Completed {
			t.Errorf("round %d %s", ro.Index, ro.Status)
		}
	}
	if len(r.obj.Verdicts) == 0 {
		t.Error("no verdicts")
	}
	first, err := st.GetRun(context.Background(), cmp.Rounds[0].RunID)
	if err != nil || first.Incarnations > 1 {
		t.Errorf("the first round ran again: %+v, %v", first, err)
	}
	ws := runWindows(t, st, second)
	gaps := 0
	for _, w := range ws {
		if w.Gap {
			gaps++
		}
	}
	if len(ws) != 8 || gaps == 0 {
		t.Errorf("the round in progress at the kill: %d windows, %d gaps; want 8 with a gap", len(ws), gaps)
	}
}

// TestCompareDetach: --detach submits the comparison, prints its id and
// returns; the record is stored with its plan.
func TestCompareDetach(t *testing.T) {
	file := writeScenario(t, `name: detached
environment:
  provider: local
  target: {command: ["/bin/true"], health: /health}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /items}}
`)
	data := t.TempDir()
	r := runLonghaul(t, runOpts{}, "compare", file, "--detach", "--data", data, "--pairs", "2", "--order", "random",
		"--round-duration", "5s", "--window", "1s", "--b-env", "X=1")
	if r.code != exitOK || !strings.Contains(r.stdout, "submitted") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cs, err := storeOf(t, data).ListComparisons(context.Background(), store.ListOptions{})
	if err != nil || len(cs) != 1 {
		t.Fatalf("comparisons %+v, %v", cs, err)
	}
	c := cs[0]
	if !strings.Contains(r.stdout, c.ID) || c.Pairs != 2 || c.Order != "random" || c.RoundDuration != 5*time.Second ||
		c.B.Env["X"] != "1" || c.WorkflowID == "" || c.Provider != "local" {
		t.Errorf("stored %+v", c)
	}
}

// TestCompareRerunDisturbed: with a disturbed threshold of 0.01 % of the
// host every round with any foreign load is disturbed, and
// --rerun-disturbed reruns its pair once (the budget is --pairs): the
// first rounds are kept, marked superseded, and the verdicts say why they
// are inconclusive.
func TestCompareRerunDisturbed(t *testing.T) {
	file, data := demoCompare(t)
	r := runCompare(t, 3*time.Minute, file, "--data", data, "--pairs", "1", "--round-duration", "3s",
		"--equivalence", "off", "--disturbed-above", "0.0001", "--rerun-disturbed")
	if r.code != exitOK || r.obj.Status != store.Completed || r.obj.Equivalence.Status != "skipped" {
		t.Fatalf("exit %d, status %s (%s), equivalence %s; stderr:\n%s", r.code, r.obj.Status, r.obj.Reason, r.obj.Equivalence.Status, r.stderr)
	}
	rs := r.obj.Rounds
	if len(rs) < 2 {
		t.Fatalf("%d rounds", len(rs))
	}
	if !rs[0].Disturbed && !rs[1].Disturbed {
		// An idle host: nothing to rerun.
		if len(rs) != 2 {
			t.Errorf("undisturbed pair rerun: %+v", rs)
		}
		t.Skipf("no foreign load on this host (rounds at %.4f and %.4f)", rs[0].ForeignCPU, rs[1].ForeignCPU)
	}
	if len(rs) != 4 || !rs[0].Superseded || !rs[1].Superseded || rs[2].Superseded || rs[3].Superseded || rs[2].Pair != 0 {
		t.Fatalf("rounds after a rerun: %+v", rs)
	}
	if v, _ := r.verdict("cpu_us_per_request"); v != "inconclusive" {
		t.Errorf("cpu_us_per_request %s with one pair, want inconclusive", v)
	}
}
