package store

import (
	"context"
	"time"
)

// Slot is a measurement slot held on a worker host. Two soaks driven at
// once on one host corrupt each other's numbers, so each host has a few
// slots (one by default) and a soak or a whole comparison holds one from
// before its environment is provisioned until its final status is recorded.
// Slots live in the store, not in a worker's memory, so a worker killed and
// started again on the same host still sees the slots of the runs it was
// driving, and those runs resume there without a newcomer slipping in.
type Slot struct {
	// Holder is the run id of a soak, or the comparison id of a comparison.
	Holder string `json:"holder"`
	// Host is the worker host's id (its --host-id).
	Host string `json:"host"`
	// WorkflowID is the holder's workflow: a slot whose workflow is no
	// longer running (terminated before it could release) may be taken back.
	WorkflowID string    `json:"workflow_id,omitempty"`
	ClaimedAt  time.Time `json:"claimed_at"`
}

// Slots are the measurement slots of the worker hosts.
type Slots interface {
	// ClaimSlot gives s.Holder a slot on s.Host when it holds one there
	// already or fewer than n are held there (a slot it holds on another
	// host is given up). It reports whether it did, and the slots held on
	// the host afterwards. Claims on one host are serialised (across
	// processes too), so n is never exceeded.
	ClaimSlot(ctx context.Context, s Slot, n int) (bool, []Slot, error)
	// ReleaseSlot gives up holder's slot; releasing none is not an error.
	ReleaseSlot(ctx context.Context, holder string) error
	// HostSlots returns the slots held on host ("" for every host), oldest first.
	HostSlots(ctx context.Context, host string) ([]Slot, error)
}
