package activities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
)

// resumeRig is run r1 on a dbProvisioner whose database is process 7.
func resumeRig(t *testing.T, prov *dbProvisioner, drv *activitiestest.Driver, total int) (*activities.Activities, activities.DriveInput, *activitiestest.Store) {
	t.Helper()
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	envDesc.DatabasePID, prov.pid = 7, 7
	// The fake driver's windows start at 2026-01-01 00:00, a second each;
	// the clock reads half a minute later.
	now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv, Now: func() time.Time { return now }}
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, Total: total,
		Overrides: activities.Overrides{Duration: time.Duration(total) * time.Second, Window: 1e9}, Env: envDesc}
	return a, in, st
}

// The database stops while the drive's worker is gone (it died in window
// 2): the resumed drive starts it again in place, records the stop in the
// lost window's gap (restarted, down for how long) and goes on driving the
// same incarnation. The worker dies again in window 5: the next attempt
// checks the environment the restart left (the database's new process),
// so it finds nothing stopped and restarts nothing.
func TestResumedDriveRestartsAStoppedDatabase(t *testing.T) {
	prov := &dbProvisioner{Provisioner: &activitiestest.Provisioner{}}
	drv := &activitiestest.Driver{}
	drv.Before = func(_ context.Context, call, index int) error {
		switch {
		case call == 1 && index == 2:
			prov.mu.Lock()
			prov.down = true
			prov.mu.Unlock()
			return errors.New("worker died")
		case call == 2 && index == 5:
			return errors.New("worker died")
		}
		return nil
	}
	a, in, st := resumeRig(t, prov, drv, 9)
	now := a.Now()
	res, err := activitiestest.DriveRetried(t, a, in, 5)
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	if res.NextIndex != 9 || res.Windows != 7 || res.Gaps != 2 {
		t.Errorf("result %+v, want all 9 slots: 7 windows and the 2 gaps the lost workers left", res)
	}
	if prov.restarts != 1 {
		t.Errorf("%d database restarts, want 1", prov.restarts)
	}
	evs, at := databaseEvents(t, st)
	// Window 1, the last committed before, ended at 0:00:02: the database
	// stopped in the 28 s between then and the resume.
	want := "the database (postgres) process 7 exited (signal 9: killed); longhaul restarted it in place, down for 0.0 s from when it was found; it stopped in the 28 s before, while no worker watched it"
	if len(evs) != 1 || at[0] != 2 || !evs[0].Restarted || evs[0].Detail != want {
		t.Fatalf("database events %+v in windows %v, want one, restarted, in window 2: %q", evs, at, want)
	}
	ws, _ := st.Windows(context.Background(), "r1", store.AllWindows)
	for _, w := range ws {
		if w.Incarnation != 1 {
			t.Errorf("window %d of incarnation %d: the drive should have stayed in incarnation 1", w.Index, w.Incarnation)
		}
		if w.Index == 2 && (!w.Gap || !w.Start.Equal(now.Add(-28*time.Second)) || !w.End.Equal(now)) {
			t.Errorf("window 2 = %+v, want the gap from the end of window 1 to the resume", w)
		}
	}
	if got := len(drv.Calls); got != 3 {
		t.Errorf("%d drive calls, want 3 (two lost workers)", got)
	}
}

// The bound of MaxDatabaseRestarts holds per drive, not per attempt: a
// database found stopped on each of four resumes is restarted three
// times, and the fourth time the drive ends: the environment is lost.
func TestResumedDriveDatabaseRestartsAreBounded(t *testing.T) {
	prov := &dbProvisioner{Provisioner: &activitiestest.Provisioner{}}
	drv := &activitiestest.Driver{}
	firstOf := map[int]bool{}
	drv.Before = func(_ context.Context, call, index int) error {
		// Each attempt's worker dies in its first window, and the
		// database stops with it: from window 2 on.
		if index < 2 || firstOf[call] {
			return nil
		}
		firstOf[call] = true
		prov.mu.Lock()
		prov.down = true
		prov.mu.Unlock()
		return errors.New("worker died")
	}
	a, in, st := resumeRig(t, prov, drv, 12)
	_, err := activitiestest.DriveRetried(t, a, in, 8)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeEnvironmentLost {
		t.Fatalf("drive: %v, want the environment lost after %d restarts", err, activities.MaxDatabaseRestarts)
	}
	if prov.restarts != activities.MaxDatabaseRestarts {
		t.Errorf("%d database restarts, want %d", prov.restarts, activities.MaxDatabaseRestarts)
	}
	evs, at := databaseEvents(t, st)
	var restarted []int
	for i, ev := range evs {
		if ev.Restarted {
			restarted = append(restarted, at[i])
		}
	}
	if !equalInts(restarted, []int{2, 3, 4}) || len(evs) != 4 || at[3] != 5 || evs[3].Restarted {
		t.Errorf("database events in windows %v (restarted in %v), want restarted in 2, 3, 4 and found stopped, not restarted, in 5", at, restarted)
	}
}
