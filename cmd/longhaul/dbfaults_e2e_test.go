package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// databasePID is the local database's pid recorded in the run's environment.
func databasePID(t *testing.T, run store.Run) int {
	t.Helper()
	var env struct {
		Database struct {
			Process struct {
				PID int `json:"pid"`
			} `json:"process"`
		} `json:"database"`
	}
	if err := json.Unmarshal(run.Environment, &env); err != nil || env.Database.Process.PID == 0 {
		t.Fatalf("run %s: no database pid in its environment %s (%v)", run.ID, run.Environment, err)
	}
	return env.Database.Process.PID
}

// TestSoakDatabaseKilled: the demo target on a private PostgreSQL cluster
// (local provider), its postmaster killed with SIGKILL mid-soak: longhaul
// starts the cluster again in place, the run completes with every slot
// measured (no gap), the windows around the kill record the target's
// errors, the window the kill was found in has the database_exit event
// (signal 9, restarted), the database_stop finding is a warning that says
// the database was restarted and when the target recovered, the terminal
// says it in one line, and the database probe reads the restarted server.
func TestSoakDatabaseKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~40 s)")
	}
	if _, err := provision.PostgresBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	const windows = 20
	data := t.TempDir()
	file := writeScenario(t, fmt.Sprintf(`name: e2e-dbkill
load: {vus: 2, duration: %ds, window: 1s, timeout: 2s}
environment:
  provider: local
  target:
    command: [%q]
    env: {DATABASE_URL: "{{.Database.URL}}"}
    health: /health
    health_timeout: 30s
  database: {kind: postgres}
%s`, windows, buildDemoTarget(t), demoMix))
	r := startSoakRun(t, file, "--data", data, "--format", "json")
	st := storeOf(t, data)
	run := onlyRun(t, st)
	waitWindow(t, st, run.ID, 4)
	killed := databasePID(t, waitEnvironment(t, st, run.ID))
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the postmaster %d: %v", killed, err)
	}
	run, ws := r.completed(t, st, run.ID)

	if gaps := checkWindows(t, ws, windows); gaps != 0 {
		t.Errorf("%d gaps, want 0: the target and its environment stayed up", gaps)
	}
	var stopped *window.Window
	var errs int64
	for i, w := range ws {
		errs += w.Errors.Total()
		for _, ev := range w.Events {
			if ev.Kind == window.EventDatabaseExit {
				stopped = &ws[i]
				if ev.Signal != int(syscall.SIGKILL) || !ev.Restarted || !strings.Contains(ev.Detail, "longhaul restarted it in place") {
					t.Errorf("window %d's database event = %+v, want signal 9, restarted", w.Index, ev)
				}
			}
		}
	}
	if stopped == nil {
		t.Fatal("no window records the database's stop")
	}
	if errs == 0 {
		t.Error("no window recorded an error: the kill went unseen by the clients")
	}
	// After the restart the target answers again without errors, and the
	// database probe reads the new server.
	lastW := ws[len(ws)-1]
	if lastW.Requests == 0 || lastW.Errors.Total() != 0 {
		t.Errorf("last window: %d requests, %d errors; want answered requests without errors", lastW.Requests, lastW.Errors.Total())
	}
	read := false
	for _, w := range ws {
		read = read || (w.Index > stopped.Index && w.Probes.Database != nil)
	}
	if !read {
		t.Errorf("no window after the restart has a database reading: the probe did not reconnect")
	}

	fs, err := st.Findings(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var stop *analysis.Finding
	for i, f := range fs {
		if f.Kind == analysis.KindDatabaseStop {
			stop = &fs[i]
		}
	}
	if stop == nil || stop.Severity != analysis.Warning || !strings.Contains(stop.Summary, "longhaul restarted it in place") || !strings.Contains(stop.Summary, "recovered in window") {
		t.Errorf("database_stop finding = %+v, want a warning: restarted in place, recovered", stop)
	}
	if !strings.Contains(r.stderr.String(), "longhaul restarted it in place") {
		t.Errorf("the terminal did not say the database was restarted; stderr:\n%s", r.stderr.String())
	}
}
