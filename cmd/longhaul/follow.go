package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// follower (with followUntilDone) is how `run` and `compare` follow the workflow they submitted
// until it ends: every poll, tick prints what is new; Ctrl-C cancels the
// workflow (its environment is torn down), a second Ctrl-C stops following
// and leaves it going; when done closes, tick runs once more and finish
// prints the report.
type follower struct {
	what       string // "run", "comparison": for the lines it prints
	wr         client.WorkflowRun
	poll       time.Duration
	progress   *report.Progress // nil: no bar
	detachNote string
	tick       func() error
	// status, when set, reads the followed record's status and reason:
	// a queued one is said once (otherwise the wait looks like a hang).
	status func() (store.Status, string)
	finish func() error
}

func followUntilDone[D any](ctx context.Context, a *app, c client.Client, done <-chan D, f follower) error {
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	cancelled, saidQueued := false, false
	for {
		select {
		case <-a.interrupts:
			f.progress.Clear()
			if cancelled {
				fmt.Fprintf(a.stderr, "longhaul: detached; %s\n", f.detachNote)
				return errSilent{exitFailed}
			}
			cancelled = true
			fmt.Fprintf(a.stderr, "longhaul: cancelling the %s (tearing down; Ctrl-C again to detach)\n", f.what)
			if err := c.CancelWorkflow(context.WithoutCancel(ctx), f.wr.GetID(), f.wr.GetRunID()); err != nil {
				fmt.Fprintf(a.stderr, "longhaul: cancel: %v\n", err)
			}
		case <-tick.C:
			if err := f.tick(); err != nil {
				return err
			}
			if f.status != nil && !saidQueued {
				if st, reason := f.status(); st == store.Queued {
					saidQueued = true
					f.progress.Clear()
					fmt.Fprintf(a.stderr, "longhaul: queued: %s\n", reason)
				}
			}
		case <-done:
			if err := f.tick(); err != nil {
				return err
			}
			// Stop, not Clear: the report must not redraw the bar.
			f.progress.Stop()
			return f.finish()
		}
	}
}
