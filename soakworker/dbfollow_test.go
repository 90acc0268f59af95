package soakworker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/testsuite"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// dbFollowScenario: a local target (Python's HTTP server: any process
// that listens will do) beside a private PostgreSQL cluster, 6 windows of
// 4 s (the windows of the test driver take no time; their length gives
// the probes their budget of 1 s).
const dbFollowScenario = `name: dbfollow
environment:
  provider: local
  target:
    command: [python3, -m, http.server, "{{.Port}}", --bind, 127.0.0.1]
  database: {kind: postgres, name: shop, user: app, password: pw}
load: {duration: 24s, window: 4s}
ops:
  - {name: get, weight: 1, request: {path: /}}
`

// TestDriveProbesFollowRestartedDatabase: a real drive (the real
// provisioner through this worker's adapter, the real probes) on a local
// PostgreSQL cluster killed with SIGKILL before window 2 closes. The check
// at window 2's close finds it stopped, longhaul starts it again in place
// (a new postmaster PID), and the probes follow it: every window after
// has its database reading again (the items table and the rows read from
// it) and the database's thread CPU, read from the new process tree.
// Before the fix the thread probe kept the dead PID (no database CPU in
// any later window) and the windows' database deltas came back a window
// late.
func TestDriveProbesFollowRestartedDatabase(t *testing.T) {
	if _, err := provision.PostgresBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var logs lockedbuf.Buffer
	log := slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testWriter{t}), nil))
	local := provision.NewLocal(provision.Options{DataDir: t.TempDir(), StopGrace: 2 * time.Second, Logger: log})
	t.Cleanup(local.Wait)
	prov := provisionAdapter{local}

	st := &activitiestest.Store{}
	if err := st.PutRun(ctx, store.Run{ID: "dbf", Name: "dbfollow", Scenario: dbFollowScenario}); err != nil {
		t.Fatal(err)
	}
	var env activities.Environment
	query := func(q string) error { return pgExec(ctx, env.DatabaseURL, q) }
	a, tenv, drv := provisionWithItems(t, prov, st, log, "dbf", &env, query)
	first := env.DatabasePID
	if first <= 0 {
		t.Fatalf("provisioned environment has no database pid: %+v", env)
	}
	drv.Before = func(ctx context.Context, _ int, index int) error {
		if index == 2 {
			if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
				return err
			}
			for deadline := time.Now().Add(10 * time.Second); syscall.Kill(first, 0) == nil; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					return fmt.Errorf("postmaster %d still alive 10 s after kill -9", first)
				}
			}
			return nil
		}
		// Each window reads the table (the restarted server's first
		// windows too: the check of window 2 started it again).
		return query("SELECT count(*) FROM items")
	}
	_, err := tenv.ExecuteActivity(a.Drive, activities.DriveInput{RunID: "dbf", Incarnation: 1, Total: 6,
		Overrides: activities.Overrides{Duration: 24 * time.Second, Window: 4 * time.Second}, Env: env})
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	ws, err := st.Windows(ctx, "dbf", store.AllWindows)
	if err != nil || len(ws) != 6 {
		t.Fatalf("windows: %d, %v; want 6", len(ws), err)
	}
	for _, w := range ws {
		var evs []string
		for _, ev := range w.Events {
			evs = append(evs, ev.Kind+": "+ev.Detail)
		}
		var tables []string
		if d := w.Probes.Database; d != nil {
			for _, tb := range d.Tables {
				tables = append(tables, fmt.Sprintf("%s live %d seq_read %d", tb.Name, tb.LiveRows, tb.SeqTuplesRead))
			}
		}
		t.Logf("window %d: database %v (tables %v), database cores %v, failures %+v, events %v",
			w.Index, w.Probes.Database != nil, tables, ptr(w.Probes.DatabaseCores), w.ProbeFailures, evs)
	}
	if evs := ws[2].Events; len(evs) != 1 || evs[0].Kind != window.EventDatabaseExit || !evs[0].Restarted {
		t.Errorf("window 2's events = %+v, want the database's exit, restarted", evs)
	}
	for _, w := range ws[3:] {
		d := w.Probes.Database
		if d == nil {
			t.Errorf("window %d after the restart has no database reading (failures %+v)", w.Index, w.ProbeFailures)
			continue
		}
		if !slices.ContainsFunc(d.Tables, func(tb window.Table) bool { return tb.Name == "items" || strings.HasSuffix(tb.Name, ".items") }) {
			t.Errorf("window %d's database reading lists no items table: %+v", w.Index, d.Tables)
		}
		if w.Probes.DatabaseCores == nil {
			t.Errorf("window %d after the restart has no database thread CPU: the new postmaster was not followed", w.Index)
		}
	}
	read := int64(0)
	for _, w := range ws[3:] {
		if d := w.Probes.Database; d != nil {
			for _, tb := range d.Tables {
				read += tb.SeqTuplesRead
			}
		}
	}
	if read == 0 {
		t.Errorf("no rows read from items in the windows after the restart: the reading is not of the restarted server")
	}
	if strings.Contains(logs.String(), "the probes could not read the restarted database") {
		t.Errorf("the baseline after the restart failed:\n%s", logs.String())
	}
}

func ptr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%.3f", *p)
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// dbFollowDockerScenario: the same on docker. The target is the offline
// PostgreSQL image too, for want of another image on a machine without a
// registry: any container that listens will do (the test driver sends no
// requests).
const dbFollowDockerScenario = `name: dbfollow-docker
environment:
  provider: docker
  target:
    image: longhaul/postgres:15-offline
    port: 5432
    env: {POSTGRES_PASSWORD: pw}
    health_timeout: 60s
  database: {kind: postgres, name: shop, user: app, password: pw}
load: {duration: 28s, window: 4s}
ops:
  - {name: get, weight: 1, request: {path: /}}
`

// TestDriveProbesFollowRestartedDockerDatabase: a real drive on a docker
// environment whose database container is restarted by someone else
// before window 2 closes (docker restart -t 1: never seen stopped) and
// killed before window 4 closes. Window 2 records the restart, not by
// longhaul; window 4 the kill, and longhaul's docker start; each time the
// container is published at a new port, and the database probe follows
// it: every later window has its database reading (the items table).
// Before, the probe kept dialling the first port and had no reading after
// the first restart, and the restart of window 2 was not seen at all.
func TestDriveProbesFollowRestartedDockerDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs containers")
	}
	if out, err := exec.Command("docker", "image", "inspect", provision.OfflinePostgresImage).CombinedOutput(); err != nil {
		t.Skipf("no %s image (scripts/offline-images.sh postgres): %s", provision.OfflinePostgresImage, bytes.TrimSpace(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var logs lockedbuf.Buffer
	log := slog.New(slog.NewTextHandler(io.MultiWriter(&logs, testWriter{t}), nil))
	d, err := provision.NewDocker(ctx, provision.Options{DataDir: t.TempDir(), StopGrace: time.Second, Logger: log})
	if err != nil {
		t.Skipf("no docker engine: %v", err)
	}
	prov := provisionAdapter{d}
	st := &activitiestest.Store{}
	if err := st.PutRun(ctx, store.Run{ID: "dbfd", Name: "dbfollow-docker", Scenario: dbFollowDockerScenario}); err != nil {
		t.Fatal(err)
	}
	var env activities.Environment
	// url is where the database is published now: the probe's DSN as the
	// environment has it after each restart, read again from the engine.
	dbURL := func() (string, error) {
		out, err := exec.CommandContext(ctx, "docker", "port", env.DatabaseContainerID, "5432/tcp").Output()
		if err != nil {
			return "", fmt.Errorf("docker port: %w", err)
		}
		addr, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return "postgres://app:pw@" + addr + "/shop?sslmode=disable", nil
	}
	query := func(q string) error {
		var err error
		for range 50 { // just after a restart the server may not take connections yet
			var u string
			if u, err = dbURL(); err == nil {
				var conn *pgx.Conn
				if conn, err = pgx.Connect(ctx, u); err == nil {
					_, err = conn.Exec(ctx, q)
					conn.Close(ctx)
					if err == nil {
						return nil
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		return err
	}
	docker := func(args ...string) error {
		if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	a, tenv, drv := provisionWithItems(t, prov, st, log, "dbfd", &env, query)
	drv.Before = func(ctx context.Context, _ int, index int) error {
		switch index {
		case 2:
			return docker("restart", "-t", "1", env.DatabaseContainerID)
		case 4:
			return docker("kill", env.DatabaseContainerID)
		}
		return query("SELECT count(*) FROM items")
	}
	_, err = tenv.ExecuteActivity(a.Drive, activities.DriveInput{RunID: "dbfd", Incarnation: 1, Total: 7,
		Overrides: activities.Overrides{Duration: 28 * time.Second, Window: 4 * time.Second}, Env: env})
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	ws, err := st.Windows(ctx, "dbfd", store.AllWindows)
	if err != nil || len(ws) != 7 {
		t.Fatalf("windows: %d, %v; want 7", len(ws), err)
	}
	for _, w := range ws {
		var evs []string
		for _, ev := range w.Events {
			evs = append(evs, fmt.Sprintf("%s (restarted %v): %s", ev.Kind, ev.Restarted, ev.Detail))
		}
		t.Logf("window %d: database %v, failures %+v, events %v", w.Index, w.Probes.Database != nil, w.ProbeFailures, evs)
	}
	if evs := ws[2].Events; len(evs) != 1 || evs[0].Kind != window.EventDatabaseExit || evs[0].Restarted || !strings.Contains(evs[0].Detail, "not by longhaul") {
		t.Errorf("window 2's events = %+v, want the database restarted, not by longhaul", evs)
	}
	if evs := ws[4].Events; len(evs) != 1 || evs[0].Kind != window.EventDatabaseExit || !evs[0].Restarted {
		t.Errorf("window 4's events = %+v, want the database's exit, restarted by longhaul", evs)
	}
	for _, i := range []int{0, 1, 3, 5, 6} {
		d := ws[i].Probes.Database
		if d == nil || !slices.ContainsFunc(d.Tables, func(tb window.Table) bool { return strings.HasSuffix(tb.Name, "items") }) {
			t.Errorf("window %d has no database reading of the items table (failures %+v)", i, ws[i].ProbeFailures)
		}
	}
}

// provisionWithItems provisions run runID through the Provision activity
// (prov under a test activity environment, the real server probes, a fake
// driver), sets *env to the environment, and fills a 500-row items table
// with query, which reads *env.
func provisionWithItems(t *testing.T, prov provisionAdapter, st *activitiestest.Store, log *slog.Logger, runID string, env *activities.Environment, query func(string) error) (*activities.Activities, *testsuite.TestActivityEnvironment, *activitiestest.Driver) {
	t.Helper()
	drv := &activitiestest.Driver{}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv, Probes: activities.ServerProbes(log), Logger: log}
	var suite testsuite.WorkflowTestSuite
	tenv := suite.NewTestActivityEnvironment()
	activities.Register(tenv, a)
	val, err := tenv.ExecuteActivity(a.Provision, activities.ProvisionInput{RunID: runID, Incarnation: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := val.Get(env); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prov.Teardown(context.Background(), *env) })
	if err := query("CREATE TABLE items (n INT); INSERT INTO items SELECT generate_series(1, 500)"); err != nil {
		t.Fatal(err)
	}
	return a, tenv, drv
}

// pgExec runs q on a connection of its own to dsn.
func pgExec(ctx context.Context, dsn, q string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, q)
	return err
}
