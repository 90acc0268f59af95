package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// TestSoakHoldsSlotWhileDriven: the soak claims its host's only slot
// before provisioning, holds it while it drives, and releases it after its
// final status.
func TestSoakHoldsSlotWhileDriven(t *testing.T) {
	f := newFixture(t, 3)
	var during []store.Slot
	f.drv.Before = func(ctx context.Context, _, i int) error {
		if i == 1 {
			during, _ = f.store.HostSlots(ctx, "")
		}
		return nil
	}
	if _, err := f.run(); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0].Holder != "r1" || during[0].Host != "test" || during[0].WorkflowID == "" {
		t.Errorf("slots while driving: %+v, want r1's on host test with its workflow id", during)
	}
	if after, _ := f.store.HostSlots(context.Background(), ""); len(after) != 0 {
		t.Errorf("slots after the soak: %+v, want none", after)
	}
}

// TestSoakQueuedForSlot: the host's only slot is held by another run; the
// soak is recorded queued (with the reason) until that slot is released,
// then goes on: pending, running, completed.
func TestSoakQueuedForSlot(t *testing.T) {
	f := newFixture(t, 3)
	ctx := context.Background()
	if ok, _, _ := f.store.ClaimSlot(ctx, store.Slot{Holder: "other", Host: "test"}, 1); !ok {
		t.Fatal("seeding the other run's slot failed")
	}
	// (The test environment stops retrying after 10 attempts, ~33 s; the
	// server retries a claim for as long as it takes.)
	f.env.RegisterDelayedCallback(func() { _ = f.store.ReleaseSlot(ctx, "other") }, 20*time.Second)
	res, err := f.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Completed || res.Windows != 3 {
		t.Errorf("result %+v, want completed with 3 windows", res)
	}
	want := "queued: " + QueuedReason + ",pending,running,completed"
	if got := strings.Join(f.store.Statuses, ","); got != want {
		t.Errorf("statuses\n%s\nwant\n%s", got, want)
	}
}

// TestSoakMovesOffAGoneHost: the drive of incarnation 1 is not picked up
// within HostWait (its host's worker is gone) after committing windows 0–2;
// the soak marks window 3 a gap, gives the host up, claims a slot again and
// drives 4–9 in incarnation 2. Every slot appears once.
func TestSoakMovesOffAGoneHost(t *testing.T) {
	f := newFixture(t, 10)
	f.in.HostWait = time.Minute
	f.env.OnActivity(f.acts.Drive, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.DriveInput) (activities.DriveResult, error) {
			if in.Incarnation > 1 {
				return f.acts.Drive(ctx, in)
			}
			for i := range 3 {
				w := window.Window{RunID: in.RunID, Incarnation: 1, Index: i, Requests: 100, OK: 100,
					Start: time.Unix(int64(i), 0), End: time.Unix(int64(i+1), 0)}
				if err := f.store.PutWindow(ctx, w); err != nil {
					return activities.DriveResult{}, err
				}
			}
			return activities.DriveResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
		})
	res, err := f.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Completed || res.Incarnations != 2 || res.Windows != 9 || res.Gaps != 1 {
		t.Errorf("result %+v, want completed, 2 incarnations, 9 windows and 1 gap", res)
	}
	keys, _ := f.slots(t)
	if got, want := strings.Join(keys, " "), "1/0 1/1 1/2 1/3gap 2/4 2/5 2/6 2/7 2/8 2/9"; got != want {
		t.Errorf("windows %s, want %s", got, want)
	}
	if after, _ := f.store.HostSlots(context.Background(), ""); len(after) != 0 {
		t.Errorf("slots after the soak: %+v, want none", after)
	}
}

// TestRoundClaimsNoSlot: a soak given its host (a comparison's round, the
// comparison holding the slot) claims and releases none.
func TestRoundClaimsNoSlot(t *testing.T) {
	f := newFixture(t, 2)
	f.in.HostQueue = "longhaul-host-test"
	if ok, _, _ := f.store.ClaimSlot(context.Background(), store.Slot{Holder: "cmp", Host: "test"}, 1); !ok {
		t.Fatal("seeding the comparison's slot failed")
	}
	if _, err := f.run(); err != nil {
		t.Fatal(err)
	}
	if held, _ := f.store.HostSlots(context.Background(), ""); len(held) != 1 || held[0].Holder != "cmp" {
		t.Errorf("slots %+v, want the comparison's, untouched", held)
	}
}
