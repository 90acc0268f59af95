package activities_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// flakyStore refuses windows while down, as a PostgreSQL store that
// restarts does, and records the order windows reach it in.
type flakyStore struct {
	*activitiestest.Store
	down    atomic.Bool
	mu      sync.Mutex
	written []int
}

func (s *flakyStore) PutWindow(ctx context.Context, w window.Window) error {
	if s.down.Load() {
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	s.mu.Lock()
	s.written = append(s.written, w.Index)
	s.mu.Unlock()
	return s.Store.PutWindow(ctx, w)
}

func flakyDrive(t *testing.T, limit time.Duration, before func(ctx context.Context, st *flakyStore, index int) error) (*flakyStore, activities.DriveResult, error) {
	t.Helper()
	st := &flakyStore{Store: &activitiestest.Store{}}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	drv := &activitiestest.Driver{Before: func(ctx context.Context, _ int, index int) error { return before(ctx, st, index) }}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv, StoreBehindLimit: limit}
	env := newEnv(a)
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, FirstIndex: 2, Total: 7,
		Overrides: activities.Overrides{Duration: 7e9, Window: 1e9}, Env: envDesc}
	v, err := env.ExecuteActivity(a.Drive, in)
	var got activities.DriveResult
	if err == nil {
		err = v.Get(&got)
	}
	return st, got, err
}

// The store does not answer while windows 3 and 4 close: they wait, the
// load goes on, and when it is back they are written in order before 5,
// the first one saying how long the store was behind. Nothing is lost.
func TestDriveKeepsWindowsWhileTheStoreIsDown(t *testing.T) {
	st, got, err := flakyDrive(t, 0, func(_ context.Context, st *flakyStore, index int) error {
		switch index {
		case 3:
			st.down.Store(true)
		case 5:
			st.down.Store(false)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (activities.DriveResult{NextIndex: 7, Windows: 5}); got != want {
		t.Errorf("result = %+v, want %+v", got, want)
	}
	if want := []int{2, 3, 4, 5, 6}; !equalInts(st.written, want) {
		t.Errorf("windows reached the store in the order %v, want %v", st.written, want)
	}
	ws, _ := st.Windows(context.Background(), "r1", store.AllWindows)
	for _, w := range ws {
		var behind []window.Event
		for _, ev := range w.Events {
			if ev.Kind == window.EventStoreBehind {
				behind = append(behind, ev)
			}
		}
		switch {
		case w.Index == 3 && (len(behind) != 1 || !strings.Contains(behind[0].Detail, "windows 3–5") || !strings.Contains(behind[0].Detail, "connection refused")):
			t.Errorf("window 3 (the first written late): events %+v, want one store_behind naming windows 3–5 and the cause", w.Events)
		case w.Index != 3 && len(behind) != 0:
			t.Errorf("window %d carries %+v; only the first window written late should", w.Index, behind)
		}
	}
}

// A store down at the drive's end is waited for before the drive reports.
func TestDriveWaitsForTheStoreAtTheEnd(t *testing.T) {
	st, got, err := flakyDrive(t, 0, func(_ context.Context, st *flakyStore, index int) error {
		if index == 6 {
			st.down.Store(true)
			time.AfterFunc(1500*time.Millisecond, func() { st.down.Store(false) })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (activities.DriveResult{NextIndex: 7, Windows: 5}); got != want || !equalInts(st.written, []int{2, 3, 4, 5, 6}) {
		t.Errorf("result %+v, written %v; want %+v and all of 2–6", got, st.written, want)
	}
}

// A store that stays away longer than the limit fails the drive (to be
// retried from the last window written), saying which windows wait.
func TestDriveGivesUpOnAStoreGoneTooLong(t *testing.T) {
	_, _, err := flakyDrive(t, time.Nanosecond, func(_ context.Context, st *flakyStore, index int) error {
		if index == 3 {
			st.down.Store(true)
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "has not taken a window") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error = %v, want the store named as behind with its cause", err)
	}
}
