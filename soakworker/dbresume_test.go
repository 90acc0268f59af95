package soakworker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/internal/testbin"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// TestResumedDriveRestartsTheLocalDatabase: a real local environment (the
// provision tests' target beside a private PostgreSQL cluster). The
// drive's worker dies in window 2 and, while no drive runs, the cluster's
// postmaster is killed with SIGKILL. The retried drive finds the database
// stopped, starts the cluster again in place (the same data directory and
// port: a committed row survives), records the stop in window 2's gap and
// drives on in the same incarnation. The worker dies again in window 4:
// the next attempt checks the new postmaster (the heartbeat carries it),
// finds nothing stopped, and the drive ends with every slot stored.
func TestResumedDriveRestartsTheLocalDatabase(t *testing.T) {
	if _, err := provision.PostgresBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	local := provision.NewLocal(provision.Options{DataDir: t.TempDir(), StopGrace: 2 * time.Second, Logger: logger})
	t.Cleanup(local.Wait)
	pa := provisionAdapter{local}
	bin := testbin.Build(t, filepath.Join("..", "provision", "testdata", "target"), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	spec := scenarios.Environment{
		Provider: "local",
		Target:   scenarios.Target{Command: []string{bin}, Health: "/health", HealthTimeout: scenarios.Duration(10 * time.Second)},
		Database: scenarios.Database{Kind: "postgres", Name: "shop", User: "app", Password: "pw"},
	}
	env, err := pa.Provision(ctx, activities.ProvisionRequest{RunID: "dbresume", Incarnation: 1, Spec: spec})
	t.Cleanup(func() { _ = pa.Teardown(context.Background(), env) })
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string) error { return pgExec(ctx, env.DatabaseURL, q) }
	if err := exec("CREATE TABLE kept (n INT); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}

	st := &activitiestest.Store{}
	_ = st.PutRun(ctx, store.Run{ID: "dbresume", Name: "hello", Scenario: activitiestest.Hello})
	first := env.DatabasePID
	drv := &activitiestest.Driver{Before: func(ctx context.Context, call, index int) error {
		if call == 2 && index == 4 {
			return errors.New("worker died") // again, the database up
		}
		if call != 1 || index != 2 {
			return nil
		}
		// The worker dies; then, with no drive running, the database.
		if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
			return err
		}
		for syscall.Kill(first, 0) == nil && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		return errors.New("worker died")
	}}
	a := &activities.Activities{Store: st, Provisioner: pa, Driver: drv, Logger: logger}
	in := activities.DriveInput{RunID: "dbresume", Incarnation: 1, Total: 7,
		Overrides: activities.Overrides{Duration: 7 * time.Second, Window: time.Second}, Env: env}
	res, err := activitiestest.DriveRetried(t, a, in, 4)
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	if res.NextIndex != 7 || res.Windows != 5 || res.Gaps != 2 || len(drv.Calls) != 3 {
		t.Errorf("result %+v after %d drive calls, want all 7 slots driven by 3 calls: 5 windows and the gaps of windows 2 and 4", res, len(drv.Calls))
	}
	ws, _ := st.Windows(ctx, "dbresume", store.AllWindows)
	var events []window.Event
	for _, w := range ws {
		if w.Incarnation != 1 {
			t.Errorf("window %d is incarnation %d's, want 1's: the database restarts in place", w.Index, w.Incarnation)
		}
		for _, ev := range w.Events {
			if w.Index != 2 || !w.Gap {
				t.Errorf("window %d has event %+v, want events only in window 2's gap", w.Index, ev)
			}
			events = append(events, ev)
		}
	}
	if len(events) != 1 || events[0].Kind != window.EventDatabaseExit || events[0].Signal != int(syscall.SIGKILL) || !events[0].Restarted {
		t.Fatalf("events %+v, want the database's exit by signal 9, restarted", events)
	}
	t.Logf("window 2's gap: %s", events[0].Detail)

	// The cluster runs again on its data directory: the row survived.
	conn, err := pgx.Connect(ctx, env.DatabaseURL)
	if err != nil {
		t.Fatalf("connect to the restarted database: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT n FROM kept").Scan(&n); err != nil || n != 42 {
		t.Errorf("the committed row after the restart: %d, %v; want 42", n, err)
	}
}
