package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// restartScenario soaks the demo target on SQLite in its environment's
// directory (local provider) for windows × 1 s, with target.restart
// {policy: on-failure, max: max} and the SQLite probe reading its rows.
func restartScenario(t *testing.T, bin string, windows, max int) string {
	t.Helper()
	return writeScenario(t, fmt.Sprintf(`name: e2e-restart
load: {vus: 2, duration: %ds, window: 1s, timeout: 2s}
environment:
  provider: local
  target:
    command: [%q]
    env: {DEMO_SQLITE: "{{.EnvDir}}/demo.db"}
    health: /health
    health_timeout: 30s
    restart: {policy: on-failure, max: %d}
%sprobes:
  database: {sqlite: "{{.EnvDir}}/demo.db"}
`, windows, bin, max, demoMix))
}

// demoMix is a scenario's setup and ops for the demo target: each VU signs
// up and logs in, then creates and lists items (a table that grows).
const demoMix = `setup:
  - name: signup
    request: {method: POST, path: /users, json: {username: "vu{{ vu }}-{{ uuid }}", password: longhaul-e2e-password}}
    expect: {status: [201]}
    capture: [{json: username, var: username}]
  - name: login
    request: {method: POST, path: /login, json: {username: "{{ .username }}", password: longhaul-e2e-password}}
    expect: {status: [200]}
    capture: [{json: token, var: token}]
ops:
  - name: create
    weight: 1
    request: {method: POST, path: /items, headers: {Authorization: "Bearer {{ .token }}"}, json: {bucket: 1, title: "{{ randString 8 16 }}"}}
    expect: {status: [201]}
  - name: list
    weight: 1
    request: {method: GET, path: /items, query: {bucket: "1", limit: "5"}, headers: {Authorization: "Bearer {{ .token }}"}}
`

// killIncarnation waits until incarnation inc of the run has driven a few
// windows, then kills its target with SIGKILL and returns the pid.
func killIncarnation(t *testing.T, st store.Store, runID string, inc int) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		measured := 0
		for _, w := range runWindows(t, st, runID) {
			if w.Incarnation == inc && !w.Gap {
				measured++
			}
		}
		if measured < 3 {
			continue
		}
		run, err := st.GetRun(context.Background(), runID)
		if err != nil || run.Incarnations != inc {
			continue
		}
		pid := targetPID(t, run)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill incarnation %d's target %d: %v", inc, pid, err)
		}
		return pid
	}
	t.Fatalf("incarnation %d of run %s did not drive 3 windows within a minute", inc, runID)
	return 0
}

// itemRows is the items table's row count in window w (-1: not read).
func itemRows(w window.Window) int64 {
	if w.Probes.SQLite == nil {
		return -1
	}
	for _, tb := range w.Probes.SQLite.Tables {
		if tb.Name == "items" {
			return tb.Rows
		}
	}
	return -1
}

// crashFindings returns the run's crash findings.
func crashFindings(t *testing.T, st store.Store, runID string) []analysis.Finding {
	t.Helper()
	fs, err := st.Findings(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []analysis.Finding
	for _, f := range fs {
		if f.Kind == analysis.KindCrash {
			out = append(out, f)
		}
	}
	return out
}

// TestSoakTargetRestarts: the demo target on SQLite, with target.restart
// {policy: on-failure, max: 3}, killed with SIGKILL twice: the run
// completes with three incarnations of the same environment; each crash
// is a critical finding saying the target was restarted and for how long
// it was down; the slot lost at each restart is a gap of the new
// incarnation and every slot is stored once; the database file kept its
// rows (each incarnation starts with at least the rows the last one
// left); the terminal says each restart in one line; each incarnation's
// output is kept; teardown removes everything of every incarnation.
func TestSoakTargetRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~35 s)")
	}
	const windows = 24
	data := t.TempDir()
	r := startSoakRun(t, restartScenario(t, buildDemoTarget(t), windows, 3), "--data", data, "--format", "json")
	st := storeOf(t, data)
	run := onlyRun(t, st)
	pids := []int{killIncarnation(t, st, run.ID, 1), killIncarnation(t, st, run.ID, 2)}
	run, ws := r.completed(t, st, run.ID)

	if run.Incarnations != 3 {
		t.Errorf("run incarnations = %d, want 3", run.Incarnations)
	}
	if gaps := checkWindows(t, ws, windows); gaps != 2 {
		t.Errorf("%d gaps, want 2 (one slot lost at each restart)", gaps)
	}
	// Per incarnation: its gap first (the restart), rows kept across.
	last := map[int]window.Window{}
	for _, w := range ws {
		if w.Gap {
			if w.Incarnation == 1 || w.End.Before(w.Start) {
				t.Errorf("gap %d of incarnation %d (%v..%v), want one per restart, at its start", w.Index, w.Incarnation, w.Start, w.End)
			}
			continue
		}
		prev, seen := last[w.Incarnation-1]
		if _, started := last[w.Incarnation]; !started && seen {
			before, after := itemRows(prev), itemRows(w)
			if before <= 0 || after < before {
				t.Errorf("incarnation %d started with %d items, incarnation %d left %d: the database lost rows across the restart", w.Incarnation, after, w.Incarnation-1, before)
			}
		}
		last[w.Incarnation] = w
	}
	crashes := crashFindings(t, st, run.ID)
	if len(crashes) != 2 {
		t.Fatalf("%d crash findings, want 2: %+v", len(crashes), crashes)
	}
	for i, f := range crashes {
		want := fmt.Sprintf("restarted (incarnation %d), down for ", i+2)
		if f.Severity != analysis.Critical || f.Incarnation != i+1 || !strings.Contains(f.Summary, "(signal 9: killed)") || !strings.Contains(f.Summary, want) {
			t.Errorf("crash finding %d: %s incarnation %d %q; want critical, incarnation %d, signal 9, %q", i, f.Severity, f.Incarnation, f.Summary, i+1, want)
		}
		if d := f.Evidence.Notes["down_seconds"]; d <= 0 || d > 10 {
			t.Errorf("crash finding %d: down for %.1f s, want a few seconds", i, d)
		}
	}
	stderr := r.stderr.String()
	for inc := 2; inc <= 3; inc++ {
		if want := fmt.Sprintf("the target restarted (incarnation %d), down for ", inc); !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "level=WARN") {
		t.Errorf("raw log records on the terminal:\n%s", stderr)
	}
	logs, err := st.Logs(context.Background(), run.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[int]bool{}
	for _, l := range logs {
		if l.Source == "target" {
			kept[l.Incarnation] = true
		}
	}
	if !kept[1] || !kept[2] || !kept[3] {
		t.Errorf("target output kept for incarnations %v, want 1, 2 and 3", kept)
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "provision")); len(entries) != 0 {
		t.Errorf("teardown left %d local environment(s)", len(entries))
	}
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

// TestSoakTargetRestartsUsedUp: with max: 1, the second crash ends the
// run, failed, saying the restarts are used up; both crashes are findings.
func TestSoakTargetRestartsUsedUp(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~20 s)")
	}
	data := t.TempDir()
	r := startSoakRun(t, restartScenario(t, buildDemoTarget(t), 40, 1), "--data", data, "--format", "json")
	st := storeOf(t, data)
	run := onlyRun(t, st)
	killIncarnation(t, st, run.ID, 1)
	killIncarnation(t, st, run.ID, 2)
	if code := r.wait(t); code != exitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailed, r.stderr.String())
	}
	run, _ = st.GetRun(context.Background(), run.ID)
	if run.Status != store.Failed || !strings.Contains(run.Reason, "target stopped answering") || !strings.Contains(run.Reason, "as many as target.restart.max allows") {
		t.Errorf("status %s (%s), want failed: the target stopped answering, restarts used up", run.Status, run.Reason)
	}
	if run.Incarnations != 2 {
		t.Errorf("run incarnations = %d, want 2", run.Incarnations)
	}
	if crashes := crashFindings(t, st, run.ID); len(crashes) != 2 {
		t.Errorf("%d crash findings, want 2", len(crashes))
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "provision")); len(entries) != 0 {
		t.Errorf("teardown left %d local environment(s)", len(entries))
	}
}
