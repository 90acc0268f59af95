package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// checkWindows verifies that each slot 0..slots-1 appears exactly once
// (window or gap) and returns the number of gaps.
func checkWindows(t *testing.T, ws []window.Window, slots int) (gaps int) {
	t.Helper()
	seen := map[int]int{}
	for _, w := range ws {
		seen[w.Index]++
		if w.Gap {
			gaps++
		}
	}
	for i := 0; i < slots; i++ {
		if seen[i] != 1 {
			t.Errorf("window slot %d appears %d times, want once", i, seen[i])
		}
	}
	if len(ws) != slots {
		t.Errorf("%d windows stored, want %d", len(ws), slots)
	}
	return gaps
}

// reportLine decodes the last NDJSON line of longhaul run --format json.
func reportLine(t *testing.T, stdout string) follow.ReportObject {
	t.Helper()
	var last string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			last = sc.Text()
		}
	}
	var r follow.ReportObject
	if err := json.Unmarshal([]byte(last), &r); err != nil || r.Type != "report" {
		t.Fatalf("last output line is not a report object (%v): %q", err, last)
	}
	return r
}

// TestSoakSurvivesWorkerKill: kill -9 the only worker during window 7 of a
// 20-window soak, start another: the run completes, the windows committed
// before the kill are unchanged, every slot is stored once, and the window
// lost with the worker is a gap, reported as such.
func TestSoakSurvivesWorkerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~45 s)")
	}
	ws0 := startWorkerSoak(t, 20)
	r, st := ws0.run, ws0.st
	run := onlyRun(t, st)
	before := waitWindow(t, st, run.ID, 6)
	ws0.worker.kill9()
	ws0.startWorker(t)

	run, ws := r.completed(t, st, run.ID)
	gaps := checkWindows(t, ws, 20)
	if gaps < 1 {
		t.Errorf("no gap recorded for the window in progress at the kill")
	}
	byIndex := map[int]window.Window{}
	for _, w := range ws {
		byIndex[w.Index] = w
	}
	for _, b := range before {
		if got := byIndex[b.Index]; !reflect.DeepEqual(got, b) {
			t.Errorf("window %d changed after the kill:\n got %+v\nwant %+v", b.Index, got, b)
		}
	}
	rep := reportLine(t, r.stdout.String())
	if rep.Status != store.Completed || rep.Gaps != gaps || rep.Windows != 20-gaps {
		t.Errorf("report line: status %s, windows %d, gaps %d; want completed, %d, %d", rep.Status, rep.Windows, rep.Gaps, 20-gaps, gaps)
	}
	if !strings.Contains(r.stdout.String(), `"gap":true`) {
		t.Errorf("the gap was not printed as a window line")
	}
	waitGone(t, targetPID(t, run))
}

// TestSoakSurvivesDevRestart: stop `longhaul dev` (server and worker)
// mid-soak and start it again on the same data directory: the run
// continues and completes.
func TestSoakSurvivesDevRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~40 s)")
	}
	data := t.TempDir()
	dev, addr := startDev(t, data)
	_, port, _ := net.SplitHostPort(addr)

	r := startSoakRun(t, localScenario(t, 12), "--temporal", addr, "--data", data, "--format", "json")
	st := storeOf(t, data)
	run := onlyRun(t, st)
	waitWindow(t, st, run.ID, 3)
	dev.stop()
	dev2 := startProc(t, "dev", "--data", data, "--port", port)
	dev2.waitFor("temporal dev server at", time.Minute)

	run, ws := r.completed(t, st, run.ID)
	checkWindows(t, ws, 12)
	// A target that never stopped has no crash finding (the dev server
	// restarting is not the target crashing).
	fs, err := st.Findings(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Kind == analysis.KindCrash {
			t.Errorf("crash finding on a run whose target never stopped: %s", f.Summary)
		}
	}
	waitGone(t, targetPID(t, run))
}

// TestSoakCancel: Ctrl-C during a soak on the embedded default cancels it:
// teardown runs (the target process is gone), the status is cancelled,
// completed windows are kept, exit code 1.
func TestSoakCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak")
	}
	s := startLiveSoak(t, t.TempDir(), 30, 2)
	r, st, run, pid := s.r, s.st, s.run, s.pid
	checkLiveUI(t, r.stderr.String(), run.ID)
	r.sig <- os.Interrupt
	if code := r.wait(t); code != exitFailed {
		t.Fatalf("exit %d after Ctrl-C, want %d; stderr:\n%s", code, exitFailed, r.stderr.String())
	}
	run, _ = st.GetRun(context.Background(), run.ID)
	if run.Status != store.Cancelled {
		t.Errorf("status %s, want cancelled", run.Status)
	}
	if ws := runWindows(t, st, run.ID); len(ws) < 3 {
		t.Errorf("%d windows kept, want at least the 3 completed before Ctrl-C", len(ws))
	}
	if rep := reportLine(t, r.stdout.String()); rep.Status != store.Cancelled {
		t.Errorf("report status %s, want cancelled", rep.Status)
	}
	waitGone(t, pid)
}

// TestSoakTargetDies: the target process dies mid-soak; its windows record
// the errors, the run ends failed with the reason, teardown still runs.
func TestSoakTargetDies(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak")
	}
	data := t.TempDir()
	s := startLiveSoak(t, data, 30, 2)
	r, st, run, pid := s.r, s.st, s.run, s.pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != exitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailed, r.stderr.String())
	}
	run, _ = st.GetRun(context.Background(), run.ID)
	if run.Status != store.Failed || !strings.Contains(run.Reason, "target stopped answering") {
		t.Errorf("status %s (%s), want failed because the target stopped answering", run.Status, run.Reason)
	}
	ws, _ := st.Windows(context.Background(), run.ID, store.AllWindows)
	var errs int64
	for _, w := range ws {
		errs += w.Errors.Total()
	}
	if errs == 0 {
		t.Errorf("no window recorded errors after the target died (%d windows)", len(ws))
	}
	if len(ws) >= 30 {
		t.Errorf("%d windows: the run went on after the target died", len(ws))
	}
	// The crash is a finding: when, how (signal 9), what it printed last.
	// The window it was noticed in holds the event; connects refused after
	// it are not throughput.
	var crashed *window.Window
	for i := range ws {
		if len(ws[i].Events) > 0 {
			crashed = &ws[i]
		}
	}
	if crashed == nil || crashed.Events[0].Kind != window.EventTargetExit || crashed.Events[0].Signal != 9 {
		t.Errorf("no window holds the target's exit by signal 9: %+v", crashed)
	} else {
		for _, w := range ws {
			if w.Index > crashed.Index && (w.RPS > 0 || w.ConnectFailures == 0) {
				t.Errorf("window %d after the crash: rps %.1f, %d connect failures; want 0 and > 0", w.Index, w.RPS, w.ConnectFailures)
			}
		}
	}
	fs, err := st.Findings(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var crash *analysis.Finding
	for i := range fs {
		if fs[i].Kind == analysis.KindCrash {
			crash = &fs[i]
		}
	}
	if crash == nil {
		t.Fatalf("no crash finding; findings: %+v", fs)
	}
	if crash.Severity != analysis.Critical || !strings.Contains(crash.Summary, "(signal 9: killed)") || crash.Evidence.Notes["requests_served"] <= 0 {
		t.Errorf("crash finding %s %q (notes %v), want critical, signal 9, requests served", crash.Severity, crash.Summary, crash.Evidence.Notes)
	}
	if !slices.ContainsFunc(crash.Evidence.Output, func(l string) bool { return strings.Contains(l, "listening") }) {
		t.Errorf("crash finding's output %q lacks the target's start-up line", crash.Evidence.Output)
	}
	// The terminal says it in one readable line, no raw log records.
	stderr := r.stderr.String()
	if want := fmt.Sprintf("the target process %d exited (signal 9: killed)", pid); !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "level=WARN") || strings.Contains(stderr, "time=") {
		t.Errorf("raw log records on the terminal:\n%s", stderr)
	}
	rep := reportLine(t, r.stdout.String())
	if rep.Status != store.Failed || !strings.Contains(rep.Reason, "target stopped answering") {
		t.Errorf("report: %s (%s), want failed with the reason", rep.Status, rep.Reason)
	}
	envDir := filepath.Join(data, "provision")
	if entries, _ := os.ReadDir(envDir); len(entries) != 0 {
		t.Errorf("teardown left %d local environment(s) in %s", len(entries), envDir)
	}
	waitGone(t, pid)
}
