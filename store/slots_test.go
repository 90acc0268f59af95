package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul/store"
)

func testSlots(t *testing.T, open backend) {
	ctx := context.Background()
	s := open.openNew(t)
	claim := func(holder, host string, n int) (bool, []store.Slot) {
		t.Helper()
		ok, held, err := s.ClaimSlot(ctx, store.Slot{Holder: holder, Host: host, WorkflowID: "wf-" + holder, ClaimedAt: t0}, n)
		if err != nil {
			t.Fatal(err)
		}
		return ok, held
	}
	if ok, held := claim("r1", "h1", 1); !ok || len(held) != 1 || held[0].Holder != "r1" {
		t.Fatalf("first claim on an idle host: %v %+v, want granted", ok, held)
	}
	if ok, held := claim("r2", "h1", 1); ok || len(held) != 1 || held[0].Holder != "r1" {
		t.Fatalf("second claim on a full host: %v %+v, want refused naming r1", ok, held)
	}
	if ok, _ := claim("r1", "h1", 1); !ok {
		t.Fatal("the holder's own claim again (a resumed run): refused, want granted")
	}
	if ok, _ := claim("r2", "h1", 2); !ok {
		t.Fatal("a second slot on a host with two: refused")
	}
	if ok, _ := claim("r3", "h2", 1); !ok {
		t.Fatal("a claim on another host: refused")
	}
	// r3 moves to h1 where both slots are busy: refused, and it keeps h2.
	if ok, _ := claim("r3", "h1", 2); ok {
		t.Fatal("a claim on a full host by a holder of another host: granted")
	}
	if err := s.ReleaseSlot(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseSlot(ctx, "never-held"); err != nil {
		t.Fatalf("releasing no slot: %v", err)
	}
	// Now r3 can move to h1 and gives up h2.
	if ok, _ := claim("r3", "h1", 2); !ok {
		t.Fatal("moving to a host with a free slot: refused")
	}
	all, err := s.HostSlots(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(len(all))
	for _, sl := range all {
		got += " " + sl.Holder + "@" + sl.Host + "/" + sl.WorkflowID
	}
	if want := "2 r2@h1/wf-r2 r3@h1/wf-r3"; got != want {
		t.Errorf("slots %q, want %q", got, want)
	}
	if h2, _ := s.HostSlots(ctx, "h2"); len(h2) != 0 {
		t.Errorf("h2 still has %+v after its holder moved", h2)
	}
}

// Concurrent claims from several openers (several worker processes of one
// host share the results database) never exceed the host's slots.
func testSlotsConcurrentClaims(t *testing.T, open backend) {
	dsn := open(t)
	const openers, perOpener, slots = 3, 6, 2
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		granted []string
	)
	for i := range openers {
		s, err := store.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		for j := range perOpener {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holder := fmt.Sprintf("r%d-%d", i, j)
				ok, _, err := s.ClaimSlot(context.Background(), store.Slot{Holder: holder, Host: "h", ClaimedAt: t0}, slots)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					granted = append(granted, holder)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if len(granted) != slots {
		t.Errorf("%d claims granted (%v), want exactly %d", len(granted), granted, slots)
	}
}
