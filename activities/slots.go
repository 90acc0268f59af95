package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// ErrTypeNoSlot is the type of the retryable error ClaimSlot gives when this
// worker's host has no free measurement slot: Temporal retries the claim,
// on whichever worker polls next, so a queued run lands on the first host
// that frees a slot.
const ErrTypeNoSlot = "NoFreeSlot"

// DefaultSlots is the number of measurement slots of a host when
// Activities.Slots is 0: one soak driven at a time, because two on one
// host corrupt each other's numbers.
const DefaultSlots = 1

// SlotInput asks for a measurement slot for a soak (Holder: its run id) or a
// whole comparison (its comparison id).
type SlotInput struct {
	Holder     string
	WorkflowID string
}

// SlotGrant is the host a holder got its slot on.
type SlotGrant struct {
	HostQueue string
	Host      string
}

// HostID is the host id of a host queue (the worker's --host-id).
func HostID(queue string) string {
	if h, ok := strings.CutPrefix(queue, hostQueuePrefix); ok && h != "" {
		return h
	}
	return queue
}

func (a *Activities) slots() int {
	if a.Slots > 0 {
		return a.Slots
	}
	return DefaultSlots
}

// ClaimSlot takes a measurement slot on this worker's host for in.Holder. It
// runs on the general queue, so whichever worker picks it up offers its own
// host; a full host answers ErrTypeNoSlot (retryable) and the claim moves
// on. A holder that already has the slot (a resumed run) gets it again. The
// slots of holders whose workflow is no longer running (terminated before
// it could release) are taken back first.
func (a *Activities) ClaimSlot(ctx context.Context, in SlotInput) (SlotGrant, error) {
	grant := SlotGrant{HostQueue: a.hostQueue(), Host: HostID(a.hostQueue())}
	sl := store.Slot{Holder: in.Holder, Host: grant.Host, WorkflowID: in.WorkflowID, ClaimedAt: a.now()}
	for try := 0; ; try++ {
		ok, held, err := a.Store.ClaimSlot(ctx, sl, a.slots())
		if err != nil {
			return SlotGrant{}, fmt.Errorf("claim a slot on %s: %w", grant.Host, err)
		}
		if ok {
			a.logger().Info("measurement slot claimed", "holder", in.Holder, "host", grant.Host)
			return grant, nil
		}
		if try > 0 || !a.takeBackAbandoned(ctx, held) {
			holders := make([]string, len(held))
			for i, h := range held {
				holders[i] = h.Holder
			}
			return SlotGrant{}, temporal.NewApplicationError(
				fmt.Sprintf("no free measurement slot on host %s (%d of %d held: %s)", grant.Host, len(held), a.slots(), strings.Join(holders, ", ")),
				ErrTypeNoSlot)
		}
	}
}

// ReleaseSlot gives up in.Holder's slot (idempotent). It is a store write,
// so it runs on the general queue: a dead host does not keep a slot busy.
func (a *Activities) ReleaseSlot(ctx context.Context, in SlotInput) error {
	if err := a.Store.ReleaseSlot(ctx, in.Holder); err != nil {
		return err
	}
	a.logger().Info("measurement slot released", "holder", in.Holder)
	return nil
}

// takeBackAbandoned releases the slots in held whose workflow is no longer
// running and reports whether it released any.
func (a *Activities) takeBackAbandoned(ctx context.Context, held []store.Slot) bool {
	freed := false
	for _, h := range held {
		if h.WorkflowID == "" {
			continue
		}
		running, err := a.workflowRunning(ctx, h.WorkflowID)
		if err != nil || running {
			continue
		}
		if a.Store.ReleaseSlot(ctx, h.Holder) == nil {
			a.logger().Warn("took back the measurement slot of a workflow that ended without releasing it", "holder", h.Holder, "workflow", h.WorkflowID)
			freed = true
		}
	}
	return freed
}

// workflowRunning asks Temporal (the worker's own client) whether the
// workflow's latest run is still running. Without a client (tests) every
// workflow counts as running.
func (a *Activities) workflowRunning(ctx context.Context, id string) (running bool, err error) {
	if a.WorkflowRunning != nil {
		return a.WorkflowRunning(ctx, id)
	}
	defer func() {
		if recover() != nil { // no client in the SDK's test environment
			running, err = true, nil
		}
	}()
	c := activity.GetClient(ctx)
	if c == nil {
		return true, nil
	}
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return false, nil
		}
		return true, err
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// AbandonInput names an incarnation whose host's worker did not come back.
type AbandonInput struct {
	RunID       string
	Incarnation int
	// FirstIndex is where the incarnation's last drive started; Total the
	// run's window slots.
	FirstIndex int
	Total      int
}

// AbandonIncarnation finds where driving stands after an incarnation was
// abandoned on a host that is gone (its drive never reported back): the
// windows it committed from FirstIndex on, and a gap for the window that
// was in progress, so that the next incarnation, on another host, goes on
// from LostDetails.NextIndex and no window index is driven twice. It reads
// the store only, so it runs on the general queue. It is idempotent.
func (a *Activities) AbandonIncarnation(ctx context.Context, in AbandonInput) (LostDetails, error) {
	ws, err := a.Store.Windows(ctx, in.RunID, store.WindowQuery{Incarnation: in.Incarnation, FromIndex: in.FirstIndex})
	if err != nil {
		return LostDetails{}, fmt.Errorf("abandon run %s incarnation %d: read windows: %w", in.RunID, in.Incarnation, err)
	}
	d := LostDetails{NextIndex: in.FirstIndex, Reason: "the host's worker did not come back"}
	var last window.Window
	for _, w := range ws {
		if w.Gap {
			d.Gaps++
		} else {
			d.Windows++
		}
		if w.Index+1 > d.NextIndex {
			d.NextIndex, last = w.Index+1, w
		}
	}
	// The window in progress when the host went away is lost: a gap marks
	// it (unless the last row is a gap already: a retry of this activity).
	if len(ws) > 0 && !last.Gap && d.NextIndex < in.Total {
		gap := window.Window{RunID: in.RunID, Incarnation: in.Incarnation, Index: d.NextIndex, Start: last.End, End: a.now(), Gap: true}
		if err := a.Store.PutWindow(ctx, gap); err != nil {
			return d, fmt.Errorf("abandon run %s incarnation %d: record gap %d: %w", in.RunID, in.Incarnation, d.NextIndex, err)
		}
		d.Gaps++
		d.NextIndex++
	}
	return d, nil
}
