package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
)

// gatedScenario is localScenario with a thresholds section.
func gatedScenario(t *testing.T, windows int, ths string) string {
	t.Helper()
	return writeScenario(t, localScenarioYAML(t, windows)+"thresholds:\n"+ths)
}

// TestGatePasses: a 3-window soak whose thresholds hold exits 0; the JSON
// report says "gate":"passed" with each threshold's value, and `longhaul
// report` shows them later from the store.
func TestGatePasses(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak")
	}
	data := t.TempDir()
	file := gatedScenario(t, 3, `  - {metric: error_rate, max: 0.01}
  - {metric: rps, op: get, min: 1}
  - {metric: p99_ms, max: 1000, scope: window, windows: 2, abort: true}
  - {metric: cpu_us_per_request, max: 1000000}
`)
	r := startSoakRun(t, file, "--data", data, "--format", "json", "--fail-on", "critical")
	if code := r.wait(t); code != exitOK {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitOK, r.stdout.String(), r.stderr.String())
	}
	rep := reportLine(t, r.stdout.String())
	if rep.Status != store.Completed || rep.Gate != thresholds.Passed || rep.FailOn != "critical" || len(rep.Thresholds) != 4 {
		t.Fatalf("report: status %s, gate %s, fail_on %q, %d thresholds; want completed, passed, critical, 4", rep.Status, rep.Gate, rep.FailOn, len(rep.Thresholds))
	}
	for _, th := range rep.Thresholds {
		if !th.OK || th.Value == nil {
			t.Errorf("threshold %s: ok %v, value %v; want ok with a value", th.Threshold, th.OK, th.Value)
		}
	}
	st := storeOf(t, data)
	run := onlyRun(t, st)
	if run.FailOn != "critical" {
		t.Errorf("stored fail_on %q, want critical", run.FailOn)
	}
	st.Close()
	text := runLonghaul(t, runOpts{}, "report", run.ID, "--data", data)
	if text.code != exitOK || !strings.Contains(text.stdout, "  ok      error_rate max 0.01: 0\n") || !strings.Contains(text.stdout, "gate: passed\n") {
		t.Errorf("report exit %d:\n%s%s", text.code, text.stdout, text.stderr)
	}
}

// TestGateFailsAndAborts: a soak of 30 windows with a threshold no target
// meets (p50 under 1 µs), window-scoped with abort: true, stops after the
// second window that breaches it; it tears down, is analysed, completes with
// the breach as its reason and exits 3. A run-scoped failure is listed too.
func TestGateFailsAndAborts(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak")
	}
	data := t.TempDir()
	file := gatedScenario(t, 30, `  - {metric: p50_ms, max: 0.001, scope: window, windows: 2, abort: true}
  - {metric: rps, min: 1000000000}
  - {metric: error_rate, max: 0.5}
`)
	r := startSoakRun(t, file, "--data", data)
	if code := r.wait(t); code != exitGate {
		t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, exitGate, r.stdout.String(), r.stderr.String())
	}
	out := r.stdout.String()
	for _, want := range []string{
		"completed: stopped early: threshold p50_ms max 0.001 (2 windows in a row) failed with ",
		"  FAILED  p50_ms max 0.001 (2 windows in a row): ",
		"  FAILED  rps min 1000000000: ",
		"  ok      error_rate max 0.5: 0\n",
		"gate: failed\n  threshold p50_ms max 0.001 (2 windows in a row) failed: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	st := storeOf(t, data)
	run := onlyRun(t, st)
	if run.Status != store.Completed || !strings.HasPrefix(run.Reason, "stopped early: threshold p50_ms") {
		t.Errorf("run %s (%s), want completed, stopped early", run.Status, run.Reason)
	}
	ws, _ := st.Windows(context.Background(), run.ID, store.AllWindows)
	// Windows 0 and 1 breach; window 2 is the one in progress when the load
	// stops, committed short.
	if len(ws) < 2 || len(ws) > 4 {
		t.Errorf("%d windows stored, want 2-4: the run should stop after the second breach", len(ws))
	}
	rs, _ := st.Thresholds(context.Background(), run.ID)
	if len(rs) != 3 || rs[0].OK || rs[0].Window == nil || *rs[0].Window != 1 || rs[1].OK || !rs[2].OK {
		t.Errorf("stored thresholds %+v", rs)
	}
	fs, _ := st.Findings(context.Background(), run.ID)
	if len(fs) == 0 {
		t.Error("no findings: the analysis did not run on the stopped soak")
	}
	// The environment went: nothing is left under the data directory.
	run = waitEnvironment(t, st, run.ID)
	waitGone(t, targetPID(t, run))

	st.Close()
	js := runLonghaul(t, runOpts{}, "report", run.ID, "--data", data, "--format", "json")
	lines := strings.Split(strings.TrimSpace(js.stdout), "\n")
	var g struct {
		Type, Gate string
		Thresholds []thresholds.Result
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &g); err != nil || g.Type != "gate" || g.Gate != "failed" || len(g.Thresholds) != 3 {
		t.Errorf("report --format json: last line %q (%v)", lines[len(lines)-1], err)
	}
}

// TestVerdictExitCodes: the exit code of a finished run from its status,
// thresholds, findings and --fail-on.
func TestVerdictExitCodes(t *testing.T) {
	v := 1.0
	failed := []thresholds.Result{{Threshold: "rps min 2", Value: &v}}
	held := []thresholds.Result{{Threshold: "rps min 1", Value: &v, OK: true}}
	warn := []analysis.Finding{{Kind: "leak", Severity: analysis.Warning}}
	tests := []struct {
		name   string
		status store.Status
		failOn string
		rs     []thresholds.Result
		fs     []analysis.Finding
		want   int
	}{
		{"clean", store.Completed, "", held, warn, exitOK},
		{"threshold", store.Completed, "", failed, nil, exitGate},
		{"finding at fail-on", store.Completed, "warning", held, warn, exitGate},
		{"finding below fail-on", store.Completed, "critical", held, warn, exitOK},
		{"cancelled", store.Cancelled, "", held, nil, exitFailed},
		{"failed and breached", store.Failed, "", failed, nil, exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := store.Run{ID: "r", Status: tt.status, FailOn: tt.failOn}
			st := &activitiestest.Store{}
			_ = st.PutRun(context.Background(), run)
			if err := st.PutThresholds(context.Background(), "r", tt.rs); err != nil {
				t.Fatal(err)
			}
			v, err := follow.ReadVerdict(context.Background(), st, run, tt.fs)
			if err != nil {
				t.Fatal(err)
			}
			got := exitOK
			if err := v.Err(); err != nil {
				got = err.(follow.Exit).Code
			}
			if got != tt.want {
				t.Errorf("exit %d, want %d (gate %v)", got, tt.want, v.Gate)
			}
		})
	}
}
