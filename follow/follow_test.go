package follow

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// fakeWorkflow ends when end is closed; Cancel counts its calls and, with
// endOnCancel, ends it as a cancelled workflow would.
type fakeWorkflow struct {
	end         chan struct{}
	cancels     atomic.Int32
	endOnCancel bool
}

func newWorkflow() *fakeWorkflow { return &fakeWorkflow{end: make(chan struct{})} }

func (w *fakeWorkflow) Wait(ctx context.Context) error {
	select {
	case <-w.end:
	case <-ctx.Done():
	}
	return nil
}

func (w *fakeWorkflow) Cancel(context.Context) error {
	if w.cancels.Add(1) == 1 && w.endOnCancel {
		close(w.end)
	}
	return nil
}

type terminal struct {
	Terminal
	stdout, stderr *strings.Builder
	interrupts     chan os.Signal
}

func newTerminal() *terminal {
	t := &terminal{stdout: new(strings.Builder), stderr: new(strings.Builder), interrupts: make(chan os.Signal, 2)}
	t.Terminal = Terminal{Stdout: t.stdout, Stderr: t.stderr, Interrupts: t.interrupts}
	return t
}

func runStore(t *testing.T, status store.Status, windows int) *activitiestest.Store {
	t.Helper()
	ctx := context.Background()
	st := &activitiestest.Store{}
	start := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	if err := st.PutRun(ctx, store.Run{ID: "r1", Name: "demo", Status: status, CreatedAt: start}); err != nil {
		t.Fatal(err)
	}
	for i := range windows {
		w := window.Window{RunID: "r1", Index: i, Start: start.Add(time.Duration(i) * time.Second), End: start.Add(time.Duration(i+1) * time.Second),
			Requests: 100, OK: 100, RPS: 100, LatencyMs: window.Latency{P50: 1, P99: 2}}
		if err := st.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// A followed run prints each window once, then the report; its exit code
// follows the run's status.
func TestFollowRunToTheEnd(t *testing.T) {
	for _, tt := range []struct {
		status store.Status
		want   error
	}{{store.Completed, nil}, {store.Failed, Exit{ExitFailed}}} {
		t.Run(string(tt.status), func(t *testing.T) {
			st := runStore(t, tt.status, 3)
			term, wf := newTerminal(), newWorkflow()
			close(wf.end)
			err := FollowRun(context.Background(), term.Terminal, st, wf, Run{ID: "r1", Format: report.Text, Duration: 3 * time.Second, Window: time.Second, LogPath: "/data/temporal.log"})
			if err != tt.want {
				t.Fatalf("FollowRun = %v, want %v", err, tt.want)
			}
			out := term.stdout.String()
			if !strings.Contains(out, "run r1 "+string(tt.status)) {
				t.Errorf("no status line in:\n%s", out)
			}
			if n := strings.Count(out, "\n"); n < 4 {
				t.Errorf("want 3 window lines, a summary and the status, got %d lines:\n%s", n, out)
			}
			if logNamed := strings.Contains(term.stderr.String(), "/data/temporal.log"); logNamed != (tt.status == store.Failed) {
				t.Errorf("Temporal's log named = %v for a %s run; stderr:\n%s", logNamed, tt.status, term.stderr)
			}
		})
	}
}

// --format json: one line per window, then the report object.
func TestFollowRunJSON(t *testing.T) {
	st := runStore(t, store.Completed, 2)
	term, wf := newTerminal(), newWorkflow()
	close(wf.end)
	if err := FollowRun(context.Background(), term.Terminal, st, wf, Run{ID: "r1", Format: report.JSON, Duration: 2 * time.Second, Window: time.Second}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(term.stdout.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 2 windows and a report, got %d lines:\n%s", len(lines), term.stdout)
	}
	var r ReportObject
	if err := json.Unmarshal([]byte(lines[2]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Type != "report" || r.RunID != "r1" || r.Windows != 2 || r.Gate != "passed" || r.Findings == nil {
		t.Errorf("report object %+v", r)
	}
}

// The first Ctrl-C cancels the workflow; the second detaches with the note
// and exit code 1, leaving the workflow going.
func TestFollowInterrupts(t *testing.T) {
	st := runStore(t, store.Running, 0)
	term, wf := newTerminal(), newWorkflow()
	term.interrupts <- syscall.SIGINT
	term.interrupts <- syscall.SIGINT
	err := FollowRun(context.Background(), term.Terminal, st, wf, Run{ID: "r1", Format: report.Text, Duration: time.Minute, Window: time.Second, DetachNote: "run r1 goes on"})
	if err != (Exit{ExitFailed}) {
		t.Fatalf("FollowRun = %v, want exit 1", err)
	}
	if n := wf.cancels.Load(); n != 1 {
		t.Errorf("Cancel called %d times, want once", n)
	}
	for _, want := range []string{"cancelling the run (tearing down; Ctrl-C again to detach)", "detached; run r1 goes on"} {
		if !strings.Contains(term.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, term.stderr)
		}
	}
}

// A cancelled run ends the follow with its report once the workflow ends.
func TestFollowCancelThenEnd(t *testing.T) {
	st := runStore(t, store.Cancelled, 1)
	term, wf := newTerminal(), newWorkflow()
	wf.endOnCancel = true
	term.interrupts <- syscall.SIGINT
	err := FollowRun(context.Background(), term.Terminal, st, wf, Run{ID: "r1", Format: report.Text, Duration: time.Minute, Window: time.Second})
	if err != (Exit{ExitFailed}) {
		t.Fatalf("FollowRun = %v, want exit 1", err)
	}
	if !strings.Contains(term.stdout.String(), "run r1 cancelled") {
		t.Errorf("stdout:\n%s", term.stdout)
	}
}

// A queued run says so once, with the reason, while it waits.
func TestFollowSaysQueuedOnce(t *testing.T) {
	st := &activitiestest.Store{}
	ctx := context.Background()
	if err := st.PutRun(ctx, store.Run{ID: "q", Status: store.Queued, Reason: "waiting for a slot on host h1"}); err != nil {
		t.Fatal(err)
	}
	term, wf := newTerminal(), newWorkflow()
	go func() {
		time.Sleep(700 * time.Millisecond) // several polls of 100 ms
		_ = st.SetStatus(ctx, "q", store.Completed, "", time.Now())
		close(wf.end)
	}()
	if err := FollowRun(ctx, term.Terminal, st, wf, Run{ID: "q", Format: report.Text, Duration: time.Second, Window: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(term.stderr.String(), "longhaul: queued: waiting for a slot on host h1"); n != 1 {
		t.Errorf("queued said %d times, want once; stderr:\n%s", n, term.stderr)
	}
}

// A comparison's rounds print once each; with FailOnWorse a worse metric
// is exit 3 and names it, without it exit 0.
func TestFollowComparison(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	cmp := store.Comparison{ID: "c1", Name: "demo", Status: store.Running, Pairs: 1, Order: "abba", RoundDuration: time.Second, Window: time.Second}
	if err := st.PutComparison(ctx, cmp); err != nil {
		t.Fatal(err)
	}
	for i, side := range []store.Side{"A", "B"} {
		if err := st.PutRound(ctx, "c1", store.Round{Index: i, Pair: 0, Side: side, RunID: "run-" + string(side), Status: store.Completed}); err != nil {
			t.Fatal(err)
		}
	}
	cmp.Status = store.Completed
	cmp.Verdicts = []analysis.Verdict{{Metric: "cpu", Outcome: analysis.Worse, Ratio: 1.2, CI: [2]float64{1.1, 1.3}, Pairs: 1}}
	if err := st.PutComparison(ctx, cmp); err != nil {
		t.Fatal(err)
	}
	for _, failOnWorse := range []bool{false, true} {
		term, wf := newTerminal(), newWorkflow()
		close(wf.end)
		err := FollowComparison(ctx, term.Terminal, st, wf, Comparison{ID: "c1", Format: report.Text, Pairs: 1, RoundDuration: time.Second, Window: time.Second, FailOnWorse: failOnWorse})
		want := error(nil)
		if failOnWorse {
			want = Exit{ExitGate}
		}
		if err != want {
			t.Errorf("FailOnWorse %v: %v, want %v", failOnWorse, err, want)
		}
		for _, round := range []string{"round 1/2 (pair 1, A)", "round 2/2 (pair 1, B)"} {
			if n := strings.Count(term.stdout.String(), round); n != 1 {
				t.Errorf("%q printed %d times, want once; stdout:\n%s", round, n, term.stdout)
			}
		}
		if failOnWorse && !strings.Contains(term.stderr.String(), "B is worse on cpu (--fail-on-worse)") {
			t.Errorf("stderr:\n%s", term.stderr)
		}
	}
}
