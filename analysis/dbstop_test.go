package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// TestDatabaseStop: a database that stopped is a finding of its own, a
// warning when the target answered again afterwards and critical when it
// did not; the error surge around it says the database stopped.
func TestDatabaseStop(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	stop := window.Event{Kind: window.EventDatabaseExit, At: t0.Add(52 * time.Second), Container: "1a2b3c4d5e6f",
		Detail: "the database container 1a2b3c4d5e6f is not running", ExitCode: new(int)}
	fail := func(w *window.Window, refused, s5xx int64) {
		w.Errors.Refused, w.Errors.Status5xx = refused, s5xx
		w.OK = w.Requests - refused - s5xx
	}

	t.Run("restarted", func(t *testing.T) {
		ws := crashRun(1, 30, t0)
		ws[5].Events = []window.Event{stop}
		fail(&ws[5], 300, 200)
		fail(&ws[6], 0, 900)
		fail(&ws[7], 0, 5) // under 1 %: answering again
		res := Analyze(ws, DefaultOptions())
		f := findKind(t, res, KindDatabaseStop)
		if f.Severity != Warning || f.Evidence.FirstWindow != 5 || f.Evidence.LastWindow != 6 || f.Evidence.Notes["recovered_window"] != 7 {
			t.Errorf("got %s windows %d–%d recovered %v; want a warning over windows 5–6, recovered in 7", f.Severity, f.Evidence.FirstWindow, f.Evidence.LastWindow, f.Evidence.Notes["recovered_window"])
		}
		for _, s := range []string{"the database exited 0:00:52 into the run (window 5; exit code 0)", "1,400 errors (5xx:1100 refused:300)", "recovered in window 7"} {
			if !strings.Contains(f.Summary, s) {
				t.Errorf("summary %q lacks %q", f.Summary, s)
			}
		}
		if res.Findings[0].Kind != KindDatabaseStop {
			t.Errorf("first finding %s, want the database stop first", res.Findings[0].Kind)
		}
	})

	t.Run("restarted by someone else", func(t *testing.T) {
		// A docker restart too fast for a check to see it stopped: found by
		// the container's new start, no exit status known.
		ws := crashRun(1, 30, t0)
		ws[5].Events = []window.Event{{Kind: window.EventDatabaseExit, At: t0.Add(52 * time.Second), Container: "1a2b3c4d5e6f", RestartedElsewhere: true,
			Detail: "the database container 1a2b3c4d5e6f was restarted, not by longhaul (down for 1.1 s; started again at 01:00:53.100)"}}
		fail(&ws[5], 0, 600)
		res := Analyze(ws, DefaultOptions())
		f := findKind(t, res, KindDatabaseStop)
		want := "the database was restarted 0:00:52 into the run (window 5; not by longhaul); the target answered 600 errors (5xx:600) until it recovered in window 6"
		if f.Summary != want || f.Severity != Warning {
			t.Errorf("got %s %q\nwant warning %q", f.Severity, f.Summary, want)
		}
	})

	t.Run("never back", func(t *testing.T) {
		ws := crashRun(1, 30, t0)
		ws[20].Events = []window.Event{stop}
		for i := 20; i < 30; i++ {
			fail(&ws[i], 0, 1000)
		}
		res := Analyze(ws, DefaultOptions())
		f := findKind(t, res, KindDatabaseStop)
		if f.Severity != Critical || !strings.Contains(f.Summary, "did not recover before the run ended") {
			t.Errorf("got %s %q; want critical, not recovered", f.Severity, f.Summary)
		}
		surge := findKind(t, res, KindErrorSurge)
		if !strings.Contains(surge.Summary, "the database stopped in window 20") || surge.Evidence.Notes["database_stopped_window"] != 20 {
			t.Errorf("error surge %q does not name the database's stop", surge.Summary)
		}
	})

	t.Run("found on resume", func(t *testing.T) {
		// The worker died in window 8; the drive resuming on the next
		// worker found the database stopped, restarted it and recorded it
		// in 8's gap. The target's pool still failed in window 9.
		ws := crashRun(1, 30, t0)
		found := window.Event{Kind: window.EventDatabaseExit, PID: 7, Signal: 9, Restarted: true,
			Detail: "the database (postgres) process 7 exited (signal 9: killed); longhaul restarted it in place, down for 1.3 s"}
		ws[8] = window.Window{Incarnation: 1, Index: 8, Gap: true, Start: ws[7].End, End: ws[8].End.Add(5 * time.Second), Events: []window.Event{found}}
		fail(&ws[9], 40, 0)
		res := Analyze(ws, DefaultOptions())
		f := findKind(t, res, KindDatabaseStop)
		want := "the database was killed by 0:01:35 into the run (window 8, lost with its worker: found stopped when the drive resumed; signal 9: killed); longhaul restarted it in place; the target answered 40 errors (refused:40) until it recovered in window 10"
		if f.Summary != want || f.Severity != Warning || f.Evidence.FirstWindow != 8 || f.Evidence.LastWindow != 9 {
			t.Errorf("got %s %q over windows %d–%d\nwant warning %q over 8–9", f.Severity, f.Summary, f.Evidence.FirstWindow, f.Evidence.LastWindow, want)
		}
	})

	t.Run("found on resume, never back", func(t *testing.T) {
		// Found stopped by a resumed drive in window 20's gap, and not
		// restarted: the error surge after it names the stop.
		ws := crashRun(1, 30, t0)
		ws[20] = window.Window{Incarnation: 1, Index: 20, Gap: true, Start: ws[19].End, End: ws[20].End,
			Events: []window.Event{{Kind: window.EventDatabaseExit, PID: 7, Detail: "the database (postgres) process 7 is not running"}}}
		for i := 21; i < 30; i++ {
			fail(&ws[i], 0, 1000)
		}
		res := Analyze(ws, DefaultOptions())
		if f := findKind(t, res, KindDatabaseStop); f.Severity != Critical || f.Evidence.FirstWindow != 20 {
			t.Errorf("database_stop %s in window %d, want critical in 20", f.Severity, f.Evidence.FirstWindow)
		}
		if surge := findKind(t, res, KindErrorSurge); !strings.Contains(surge.Summary, "the database stopped in window 20") {
			t.Errorf("error surge %q does not name the database's stop", surge.Summary)
		}
	})

	t.Run("no event, no finding", func(t *testing.T) {
		ws := crashRun(1, 30, t0)
		for i := 20; i < 30; i++ {
			fail(&ws[i], 0, 1000)
		}
		res := Analyze(ws, DefaultOptions())
		for _, f := range res.Findings {
			if f.Kind == KindDatabaseStop || strings.Contains(f.Summary, "database stopped") {
				t.Errorf("a database stop without an event: %s %q", f.Kind, f.Summary)
			}
		}
	})
}

func findKind(t *testing.T, res Result, kind string) Finding {
	t.Helper()
	for _, f := range res.Findings {
		if f.Kind == kind {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", kind, res.Findings)
	return Finding{}
}
