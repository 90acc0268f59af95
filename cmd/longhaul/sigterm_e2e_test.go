package main

import (
	"syscall"
	"testing"
	"time"
)

// TestWorkerSIGTERM: a deploy stops a worker with SIGTERM mid-soak. The
// worker stops taking work and exits at once (exit 0); the run resumes on
// the next worker of the host and completes, every window measured before
// the signal kept. The window in progress at the signal is closed short and
// kept (partial), not lost as after a kill -9; the hand-over itself is one
// gap (docs/faults.md).
func TestWorkerSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~40 s)")
	}
	ws0 := startWorkerSoak(t, 16)
	w1, r, st := ws0.worker, ws0.run, ws0.st
	before := waitWindow(t, st, ws0.runID, 5)
	termAt := time.Now()
	_ = w1.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w1.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker did not exit within 30 s of SIGTERM:\n%s", w1.out.String())
	}
	t.Logf("worker exited %.1f s after SIGTERM", time.Since(termAt).Seconds())
	if code := w1.cmd.ProcessState.ExitCode(); code != exitOK {
		t.Errorf("worker exit %d after SIGTERM, want 0:\n%s", code, w1.out.String())
	}
	ws0.startWorker(t)

	_, ws := r.completed(t, st, ws0.runID)
	gaps := checkWindows(t, ws, 16)
	partial := 0
	for _, w := range ws {
		if w.Partial {
			partial++
		}
	}
	for _, w := range ws {
		if w.Partial || w.Gap {
			t.Logf("window %d: gap %v, partial %v, %d requests, %s", w.Index, w.Gap, w.Partial, w.Requests, w.End.Sub(w.Start))
		}
	}
	t.Logf("%d gaps, %d partial windows; before the signal: %d windows", gaps, partial, len(before))
	if gaps > 1 || partial < 1 {
		t.Errorf("%d gaps and %d partial windows; want the window in progress at the signal closed short and kept (partial), and at most one gap for the hand-over", gaps, partial)
	}
	byIndex := map[int]bool{}
	for _, w := range ws {
		byIndex[w.Index] = !w.Gap
	}
	for _, b := range before {
		if !byIndex[b.Index] {
			t.Errorf("window %d, measured before SIGTERM, was lost", b.Index)
		}
	}
}
