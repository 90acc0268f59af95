package activities_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

func TestClaimSlot(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	ended := map[string]bool{}
	a := &activities.Activities{Store: st, HostTaskQueue: activities.HostQueueName("box-1"), Slots: 1,
		WorkflowRunning: func(_ context.Context, id string) (bool, error) { return !ended[id], nil }}

	g, err := a.ClaimSlot(ctx, activities.SlotInput{Holder: "r1", WorkflowID: "wf-1"})
	if err != nil || g.Host != "box-1" || g.HostQueue != "longhaul-host-box-1" {
		t.Fatalf("claim on an idle host: %+v, %v", g, err)
	}
	_, err = a.ClaimSlot(ctx, activities.SlotInput{Holder: "r2", WorkflowID: "wf-2"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeNoSlot || app.NonRetryable() ||
		!strings.Contains(err.Error(), "no free measurement slot on host box-1 (1 of 1 held: r1)") {
		t.Fatalf("claim on a full host: %v, want a retryable %s naming r1", err, activities.ErrTypeNoSlot)
	}
	// r1's workflow ended without releasing (terminated): r2 takes the slot back.
	ended["wf-1"] = true
	if g, err := a.ClaimSlot(ctx, activities.SlotInput{Holder: "r2", WorkflowID: "wf-2"}); err != nil || g.Host != "box-1" {
		t.Fatalf("claim after the holder's workflow ended: %+v, %v", g, err)
	}
	if err := a.ReleaseSlot(ctx, activities.SlotInput{Holder: "r2"}); err != nil {
		t.Fatal(err)
	}
	if held, _ := st.HostSlots(ctx, ""); len(held) != 0 {
		t.Errorf("slots after release: %+v", held)
	}
}

func TestAbandonIncarnation(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	a := &activities.Activities{Store: st}
	for i := 2; i < 5; i++ {
		if err := st.PutWindow(ctx, window.Window{RunID: "r", Incarnation: 1, Index: i, Requests: 1}); err != nil {
			t.Fatal(err)
		}
	}
	in := activities.AbandonInput{RunID: "r", Incarnation: 1, FirstIndex: 2, Total: 10}
	for try := range 2 { // idempotent: a retry finds its own gap
		d, err := a.AbandonIncarnation(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if d.NextIndex != 6 || d.Windows != 3 || d.Gaps != 1 {
			t.Errorf("try %d: %+v, want next 6 after 3 windows and the gap at 5", try, d)
		}
	}
	ws, _ := st.Windows(ctx, "r", store.AllWindows)
	if len(ws) != 4 || !ws[3].Gap || ws[3].Index != 5 {
		t.Errorf("windows %+v, want 2–4 and a gap at 5", ws)
	}
	// An incarnation that committed nothing goes on where it started.
	if d, _ := a.AbandonIncarnation(ctx, activities.AbandonInput{RunID: "r", Incarnation: 2, FirstIndex: 6, Total: 10}); d.NextIndex != 6 || d.Gaps != 0 {
		t.Errorf("empty incarnation: %+v, want next 6, no gap", d)
	}
}
