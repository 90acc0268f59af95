package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/store"
)

// claimSlot takes a measurement slot for holder (a soak's run id, a
// comparison's id) on whichever worker host has one free: ClaimSlot on the
// general queue, retried until a host answers yes. Temporal's queue does
// the waiting: between attempts no history grows, and every attempt asks
// the next worker that polls. A claim not granted at once marks the holder
// queued (setStatus with QueuedReason) until it is, then granted (the
// status it had: pending for a soak, running for a comparison).
func claimSlot(ctx workflow.Context, holder string, granted store.Status, setStatus func(workflow.Context, store.Status, string) error) (activities.SlotGrant, error) {
	var a *activities.Activities
	cctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           activities.GeneralQueue,
		StartToCloseTimeout: generalTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 1.5, MaximumInterval: slotRetryMax,
			MaximumAttempts: 0, // a queued run waits as long as it takes (it can be cancelled)
		},
	})
	in := activities.SlotInput{Holder: holder, WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID}
	claim := workflow.ExecuteActivity(cctx, a.ClaimSlot, in)
	tctx, stopTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimer(tctx, queuedAfter)
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(claim, func(workflow.Future) {})
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.Select(ctx)
	stopTimer()
	queued := !claim.IsReady()
	if queued {
		if err := setStatus(ctx, store.Queued, QueuedReason); err != nil {
			return activities.SlotGrant{}, err
		}
	}
	var g activities.SlotGrant
	if err := claim.Get(ctx, &g); err != nil {
		return g, err
	}
	if queued {
		return g, setStatus(ctx, granted, "")
	}
	return g, nil
}

// releaseSlot gives holder's slot up (call it with a disconnected context
// when it must run after cancellation) and reports whether it did. A
// failure is logged, not fatal: the next claim on that host takes back the
// slot of a workflow that is no longer running.
func releaseSlot(ctx workflow.Context, holder string) bool {
	var a *activities.Activities
	rctx := storeBound(ctx, generalTimeout)
	if err := workflow.ExecuteActivity(rctx, a.ReleaseSlot, activities.SlotInput{Holder: holder}).Get(rctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("releasing the measurement slot failed", "holder", holder, "error", err)
		return false
	}
	return true
}
