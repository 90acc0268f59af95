package activities_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// dbProvisioner is a fake provisioner whose environment's database can be
// stopped: Check then fails with a database_exit event, as package
// provision's ExitError does, until RestartDatabase starts it again (or,
// with stayDown, never: a database that stops again at once).
//
// With pid set, the database is that process: an environment that names
// another one (the one before a restart) finds it stopped too, as package
// provision's Check does.
type dbProvisioner struct {
	*activitiestest.Provisioner
	mu       sync.Mutex
	down     bool
	stayDown bool
	restarts int
	pid      int
}

type dbExit struct{}

func (dbExit) Error() string { return "the database (postgres) process 7 exited (signal 9: killed)" }
func (dbExit) FaultEvent() window.Event {
	return window.Event{Kind: window.EventDatabaseExit, PID: 7, Signal: 9, Detail: "the database (postgres) process 7 exited (signal 9: killed)"}
}

func (p *dbProvisioner) Check(ctx context.Context, env activities.Environment) error {
	p.mu.Lock()
	down := p.down || (p.pid != 0 && env.DatabasePID != p.pid)
	p.mu.Unlock()
	if down {
		return dbExit{}
	}
	return p.Provisioner.Check(ctx, env)
}

func (p *dbProvisioner) RestartDatabase(_ context.Context, env activities.Environment) (activities.Environment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restarts++
	p.down = p.stayDown
	env.DatabasePID = 100 + p.restarts
	if p.pid != 0 {
		p.pid = env.DatabasePID
	}
	return env, nil
}

var _ activities.DatabaseRestarter = (*dbProvisioner)(nil)

func dbKillDrive(t *testing.T, prov *dbProvisioner, total int) (*activitiestest.Store, error) {
	t.Helper()
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	drv := &activitiestest.Driver{Before: func(_ context.Context, _ int, index int) error {
		if index == 2 {
			prov.mu.Lock()
			prov.down = true
			prov.mu.Unlock()
		}
		return nil
	}}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv}
	env := newEnv(a)
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, Total: total,
		Overrides: activities.Overrides{Duration: time.Duration(total) * time.Second, Window: 1e9}, Env: envDesc}
	_, err := env.ExecuteActivity(a.Drive, in)
	return st, err
}

func databaseEvents(t *testing.T, st store.Store) (evs []window.Event, at []int) {
	t.Helper()
	ws, err := st.Windows(context.Background(), "r1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		for _, ev := range w.Events {
			if ev.Kind == window.EventDatabaseExit {
				evs, at = append(evs, ev), append(at, w.Index)
			}
		}
	}
	return evs, at
}

// The drive's check finds the database stopped: it is restarted at once,
// the window records the stop (restarted, with how long it was down), and
// the drive goes on to the end.
func TestDriveRestartsAStoppedDatabase(t *testing.T) {
	prov := &dbProvisioner{Provisioner: &activitiestest.Provisioner{}}
	st, err := dbKillDrive(t, prov, 6)
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	if prov.restarts != 1 {
		t.Errorf("%d database restarts, want 1", prov.restarts)
	}
	evs, at := databaseEvents(t, st)
	if len(evs) != 1 || at[0] != 2 || !evs[0].Restarted || !strings.Contains(evs[0].Detail, "longhaul restarted it in place, down for") {
		t.Errorf("database events %+v in windows %v, want one in window 2, restarted", evs, at)
	}
}

// A database that stops again each time is restarted MaxDatabaseRestarts
// times, each stop recorded; the next stop is recorded unrestarted and the
// drive ends as for any environment that stopped answering.
func TestDriveGivesUpOnADatabaseThatKeepsStopping(t *testing.T) {
	prov := &dbProvisioner{Provisioner: &activitiestest.Provisioner{}, stayDown: true}
	st, err := dbKillDrive(t, prov, 12)
	if err == nil || !strings.Contains(err.Error(), "target stopped answering") {
		t.Fatalf("drive: %v, want it to end: the database does not stay up", err)
	}
	if prov.restarts != activities.MaxDatabaseRestarts {
		t.Errorf("%d database restarts, want %d", prov.restarts, activities.MaxDatabaseRestarts)
	}
	evs, at := databaseEvents(t, st)
	restarted := 0
	for _, ev := range evs {
		if ev.Restarted {
			restarted++
		}
	}
	if restarted != activities.MaxDatabaseRestarts || len(evs) != activities.MaxDatabaseRestarts+1 {
		t.Errorf("database events in windows %v: %d, %d restarted; want %d restarted and one more that was not", at, len(evs), restarted, activities.MaxDatabaseRestarts)
	}
}

// dbRestartedElsewhere is the check's error for a database someone else
// restarted between two checks, as package provision's RestartedError.
type dbRestartedElsewhere struct{}

func (dbRestartedElsewhere) Error() string {
	return "the database container 0123456789ab was restarted, not by longhaul (down for 1.1 s)"
}
func (dbRestartedElsewhere) FaultEvent() window.Event {
	return window.Event{Kind: window.EventDatabaseExit, Container: "0123456789ab", Detail: "the database container 0123456789ab was restarted, not by longhaul (down for 1.1 s)"}
}
func (dbRestartedElsewhere) RestartedElsewhere() bool { return true }

// elsewhereProvisioner's database is restarted by someone else before
// every window from 2 on: each check finds it, and RestartDatabase finds
// its new port.
type elsewhereProvisioner struct {
	*activitiestest.Provisioner
	mu       sync.Mutex
	pending  bool
	restarts int
}

func (p *elsewhereProvisioner) Check(ctx context.Context, env activities.Environment) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending {
		return dbRestartedElsewhere{}
	}
	return p.Provisioner.Check(ctx, env)
}

func (p *elsewhereProvisioner) RestartDatabase(_ context.Context, env activities.Environment) (activities.Environment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restarts++
	p.pending = false
	env.DatabaseURL = fmt.Sprintf("postgres://app:pw@127.0.0.1:%d/shop", 40000+p.restarts)
	return env, nil
}

// followingProber records what it was asked to follow.
type followingProber struct {
	mu      sync.Mutex
	follows []string
}

func (p *followingProber) Sample(context.Context, *window.Window) {}
func (p *followingProber) Close() error                           { return nil }
func (p *followingProber) FollowDatabase(_ context.Context, before, after activities.Environment) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.follows = append(p.follows, before.DatabaseURL+" -> "+after.DatabaseURL)
	return nil
}

// A database restarted by someone else (never seen stopped) is recorded in
// the window its check found it, as a database_exit that longhaul did not
// restart ("not by longhaul", where the probes follow it now), the prober
// follows it to its new address each time, and such restarts do not count
// against MaxDatabaseRestarts: longhaul restarted nothing, and the drive
// goes on to the end.
func TestDriveFollowsADatabaseRestartedElsewhere(t *testing.T) {
	prov := &elsewhereProvisioner{Provisioner: &activitiestest.Provisioner{}}
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	envDesc.DatabaseURL = "postgres://app:pw@127.0.0.1:40000/shop"
	drv := &activitiestest.Driver{Before: func(_ context.Context, _ int, index int) error {
		if index >= 2 {
			prov.mu.Lock()
			prov.pending = true
			prov.mu.Unlock()
		}
		return nil
	}}
	prober := &followingProber{}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv,
		Probes: func(context.Context, activities.Environment, scenarios.Probes) (activities.Prober, error) {
			return prober, nil
		}}
	const total = 8
	_, err := newEnv(a).ExecuteActivity(a.Drive, activities.DriveInput{RunID: "r1", Incarnation: 1, Total: total,
		Overrides: activities.Overrides{Duration: total * time.Second, Window: 1e9}, Env: envDesc})
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	// Windows 2..6 are checked (the last window is not).
	const want = total - 3
	if want <= activities.MaxDatabaseRestarts {
		t.Fatalf("the test needs more foreign restarts than MaxDatabaseRestarts")
	}
	evs, at := databaseEvents(t, st)
	if len(evs) != want || prov.restarts != want {
		t.Fatalf("database events in windows %v (%d), provider asked %d times; want %d each", at, len(evs), prov.restarts, want)
	}
	for i, ev := range evs {
		if ev.Restarted || !strings.Contains(ev.Detail, "not by longhaul") || !strings.Contains(ev.Detail, fmt.Sprintf("; the probes follow it at 127.0.0.1:%d", 40001+i)) {
			t.Errorf("event in window %d = %+v, want a restart not by longhaul, followed at its new port", at[i], ev)
		}
	}
	if len(prober.follows) != want || prober.follows[0] != "postgres://app:pw@127.0.0.1:40000/shop -> postgres://app:pw@127.0.0.1:40001/shop" {
		t.Errorf("the prober followed %v, want %d moves from one port to the next", prober.follows, want)
	}
}
