// Package follow shows a submitted run or comparison on the terminal until
// it ends: what is new every poll (windows, rounds, looks), Ctrl-C to cancel
// and a second Ctrl-C to detach, then the report and the exit code.
//
// It knows the workflow only as a Workflow (wait, cancel), so the same loop
// serves `run` and `compare` — and tests — whatever runs the workflow; the
// command adapts its Temporal client to it.
package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// Exit codes a follower ends with (the command's own: 0 is a nil error).
const (
	ExitFailed = 1 // the run or comparison failed or was cancelled, or the user detached
	ExitGate   = 3 // completed, but the gate failed (a threshold, --fail-on, --fail-on-worse)
)

// Exit is the error a follower returns when everything it had to say is
// printed and only the exit code remains.
type Exit struct{ Code int }

func (e Exit) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// Workflow is a submitted workflow as the follower sees it.
type Workflow interface {
	// Wait blocks until the workflow ends.
	Wait(ctx context.Context) error
	// Cancel asks the workflow to cancel (its environment is torn down).
	Cancel(ctx context.Context) error
}

// Terminal is where a follower writes and what interrupts it.
type Terminal struct {
	Stdout, Stderr io.Writer
	// Interrupts delivers SIGINT/SIGTERM.
	Interrupts <-chan os.Signal
}

// loop is one following: every poll, tick prints what is new; when the
// workflow ends, tick runs once more and finish prints the report.
type loop struct {
	what       string // "run", "comparison": for the lines it prints
	poll       time.Duration
	progress   *report.Progress // nil: no bar
	detachNote string
	tick       func() error
	// status, when set, reads the followed record's status and reason:
	// a queued one is said once (otherwise the wait looks like a hang).
	status func() (store.Status, string)
	finish func() error
	// down is set while the store does not answer (said once).
	down bool
}

// run follows wf until it ends, or until the second interrupt (the first
// cancels it).
func (l *loop) run(ctx context.Context, t Terminal, wf Workflow) error {
	done := make(chan struct{})
	go func() { _ = wf.Wait(context.WithoutCancel(ctx)); close(done) }()
	tick := time.NewTicker(l.poll)
	defer tick.Stop()
	cancelled, saidQueued := false, false
	for {
		select {
		case <-t.Interrupts:
			l.progress.Clear()
			if cancelled {
				fmt.Fprintf(t.Stderr, "longhaul: detached; %s\n", l.detachNote)
				return Exit{ExitFailed}
			}
			cancelled = true
			fmt.Fprintf(t.Stderr, "longhaul: cancelling the %s (tearing down; Ctrl-C again to detach)\n", l.what)
			if err := wf.Cancel(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(t.Stderr, "longhaul: cancel: %v\n", err)
			}
		case <-tick.C:
			if err := l.tick(); err != nil {
				if !errors.As(err, new(storeRead)) {
					return err
				}
				l.storeDown(t, err)
				continue
			}
			l.storeBack()
			if l.status != nil && !saidQueued {
				if st, reason := l.status(); st == store.Queued {
					saidQueued = true
					l.progress.Clear()
					fmt.Fprintf(t.Stderr, "longhaul: queued: %s\n", reason)
				}
			}
		case <-done:
			if err := l.retryRead(ctx, t, l.tick); err != nil {
				return err
			}
			// Stop, not Clear: the report must not redraw the bar.
			l.progress.Stop()
			return l.retryRead(ctx, t, l.finish)
		}
	}
}

// StoreWait is how long a follower whose run has ended waits for a
// results store that does not answer before it gives up (the run and its
// windows are safe: `longhaul report ID` prints them once it is back). It
// matches the worker's activities.DefaultStoreBehindLimit.
var StoreWait = 10 * time.Minute

// storeRead marks an error reading the store: the store is behind or
// away (a PostgreSQL store restarting), which is not the end of following.
type storeRead struct{ err error }

func (e storeRead) Error() string { return e.err.Error() }
func (e storeRead) Unwrap() error { return e.err }

// storeDown says once that the store does not answer; following goes on.
func (l *loop) storeDown(t Terminal, err error) {
	if l.down {
		return
	}
	l.down = true
	l.progress.Around(func() {
		fmt.Fprintf(t.Stderr, "longhaul: the results store is not answering (%v); the %s goes on, and its windows show here when the store is back\n", err, l.what)
	})
}

// storeBack notes that the store answers again, so that a later outage is
// said too. It prints nothing: the windows that waited now appear, and a
// worker in this process has said for how long the store was away.
func (l *loop) storeBack() { l.down = false }

// retryRead runs f until it does not fail reading the store, for up to
// StoreWait.
func (l *loop) retryRead(ctx context.Context, t Terminal, f func() error) error {
	deadline := time.Now().Add(StoreWait)
	for {
		err := f()
		if err == nil || !errors.As(err, new(storeRead)) || time.Now().After(deadline) {
			return err
		}
		l.storeDown(t, err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
