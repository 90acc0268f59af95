package main

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/follow"
)

// temporalWorkflow presents a submitted Temporal workflow to package follow,
// which follows `run` and `compare` on the terminal.
type temporalWorkflow struct {
	c  client.Client
	wr client.WorkflowRun
}

func (w temporalWorkflow) Wait(ctx context.Context) error { return w.wr.Get(ctx, nil) }

func (w temporalWorkflow) Cancel(ctx context.Context) error {
	return w.c.CancelWorkflow(ctx, w.wr.GetID(), w.wr.GetRunID())
}

// terminal is the app's terminal as package follow writes to it.
func (a *app) terminal() follow.Terminal {
	return follow.Terminal{Stdout: a.stdout, Stderr: a.stderr, Interrupts: a.interrupts}
}
