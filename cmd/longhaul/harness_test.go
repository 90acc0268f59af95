package main

import (
	"context"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// The end-to-end tests' shared steps: a run followed to its end, its
// record and its windows read back. Starting things (a target, a dev
// server, a worker, a run) is in soak_e2e_test.go (startProc, startDev,
// startSoakRun, soakTarget) and shipped_e2e_test.go (startDemoTarget).

// completed waits for the followed run to exit 0 and returns the run
// (which must have completed) and its windows.
func (r *soakRun) completed(t *testing.T, st store.Store, runID string) (store.Run, []window.Window) {
	t.Helper()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("longhaul run exit %d, want 0; stderr:\n%s", code, r.stderr.String())
	}
	run, err := st.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.Completed {
		t.Errorf("status %s (%s), want completed", run.Status, run.Reason)
	}
	return run, runWindows(t, st, runID)
}

// runWindows reads every window of a run.
func runWindows(t *testing.T, st store.Store, runID string) []window.Window {
	t.Helper()
	ws, err := st.Windows(context.Background(), runID, store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// workerSoak is a soak of the local scenario for windows, followed from a
// client of a `longhaul dev` without a worker of its own, driven by one
// separate worker (the one a fault test stops).
type workerSoak struct {
	data, addr string
	worker     *proc
	run        *soakRun
	st         store.Store
	runID      string
}

// startWorkerSoak starts it and returns once the run is recorded.
func startWorkerSoak(t *testing.T, windows int) *workerSoak {
	t.Helper()
	w := &workerSoak{data: t.TempDir()}
	_, w.addr = startDev(t, w.data, "--worker=false")
	w.worker = w.startWorker(t)
	w.run = startSoakRun(t, localScenario(t, windows), "--temporal", w.addr, "--data", w.data, "--format", "json")
	w.st = storeOf(t, w.data)
	w.runID = onlyRun(t, w.st).ID
	return w
}

// startWorker starts another worker of the same host.
func (w *workerSoak) startWorker(t *testing.T) *proc {
	t.Helper()
	p := startProc(t, "worker", "--temporal", w.addr, "--data", w.data)
	p.waitFor("worker on", time.Minute)
	return p
}

// liveSoak is a soak of the local scenario followed by r, recorded as run
// in st, its target up as process pid.
type liveSoak struct {
	r   *soakRun
	st  store.Store
	run store.Run
	pid int
}

// startLiveSoak starts a soak of the local scenario for windows on the
// data directory data (args: more flags of longhaul run) and returns once
// `after` windows are stored and its environment is recorded.
func startLiveSoak(t *testing.T, data string, windows, after int, args ...string) liveSoak {
	t.Helper()
	r := startSoakRun(t, append([]string{localScenario(t, windows), "--data", data, "--format", "json"}, args...)...)
	st := storeOf(t, data)
	run := onlyRun(t, st)
	waitWindow(t, st, run.ID, after)
	run = waitEnvironment(t, st, run.ID)
	return liveSoak{r: r, st: st, run: run, pid: targetPID(t, run)}
}
