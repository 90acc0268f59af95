package provision

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/client"

	"github.com/longhaul-dev/longhaul/internal/mysqlserver"
	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestLocalRestartDatabase: a local private database killed with SIGKILL is
// found stopped by Check (a database_exit, signal 9), and RestartDatabase
// starts it again on the same data directory and port: a committed row
// survives (crash recovery), the target's DSN is unchanged, Check passes,
// and only the new server carries the database's marker. Teardown removes
// everything.
func TestLocalRestartDatabase(t *testing.T) {
	for _, tc := range []struct {
		kind string
		skip func() error
	}{
		{kind: "postgres", skip: func() error { _, err := PostgresBinDir(); return err }},
		{kind: "mariadb", skip: func() error { _, err := mysqlserver.Find(); return err }},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if err := tc.skip(); err != nil {
				t.Skipf("no %s server binaries: %v", tc.kind, err)
			}
			l, _ := newTestLocal(t)
			ctx := testContext(t, 3*time.Minute)
			spec := localSpec(t, map[string]string{"DATABASE_URL": "{{.Database.URL}}"})
			spec.Database = scenarios.Database{Kind: tc.kind, Name: "shop", User: "app", Password: "pw"}
			env, err := l.Provision(ctx, Request{RunID: "local-dbrestart-" + tc.kind, Spec: spec})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Teardown(context.Background(), env) })
			db := env.Database
			exec := func(q string) (int, error) { return queryInt(ctx, tc.kind, db.URL, q) }
			if _, err := exec("CREATE TABLE kept (n INT)"); err != nil {
				t.Fatal(err)
			}
			if _, err := exec("INSERT INTO kept VALUES (42)"); err != nil {
				t.Fatal(err)
			}

			first := db.Process.PID
			if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var exit *ExitError
			if err := waitCheck(ctx, l, env); !errors.As(err, &exit) || exit.Event.Kind != window.EventDatabaseExit || exit.Event.Signal != int(syscall.SIGKILL) {
				t.Fatalf("Check after kill -9 of the database = %v, want its exit by signal 9", err)
			}

			env2, err := l.RestartDatabase(ctx, env)
			if err != nil {
				t.Fatalf("RestartDatabase: %v", err)
			}
			env = env2
			db2 := env2.Database
			if db2 == nil || db2.Process.PID == 0 || db2.Process.PID == first || db2.URL != db.URL || db2.Process.DataDir != db.Process.DataDir {
				t.Fatalf("restarted database = %+v, want a new process on the same URL and data directory (was %+v)", db2, db)
			}
			if err := l.Check(ctx, env2); err != nil {
				t.Errorf("Check after the restart: %v", err)
			}
			if n, err := queryInt(ctx, tc.kind, db2.URL, "SELECT n FROM kept"); err != nil || n != 42 {
				t.Errorf("the committed row after the restart: %d, %v; want 42", n, err)
			}
			if got := get(t, env2.TargetURL+"/env/DATABASE_URL"); got != db2.URL {
				t.Errorf("target DATABASE_URL = %q, want the database's unchanged %q", got, db2.URL)
			}
			if st, err := readState(env2.EnvDir); err != nil || st.Database.Process.PID != db2.Process.PID {
				t.Errorf("state on disk after the restart: %+v, %v; want the new database pid %d", st.Database, err, db2.Process.PID)
			}
			if pids := markedPIDs(markerFor(env2.ID, dbRole(tc.kind))); len(pids) == 0 || !slices.Contains(pids, db2.Process.PID) {
				t.Errorf("processes with the database's marker: %v, want the new server %d among them", pids, db2.Process.PID)
			}
			if err := l.Teardown(ctx, env2); err != nil {
				t.Fatal(err)
			}
			assertGone(t, env2)
			if alive(first) || alive(db2.Process.PID) {
				t.Errorf("a database process is alive after teardown")
			}
		})
	}
}

// queryInt runs q on the database at rawURL (postgres://, mysql:// or
// mariadb://) and returns the first column of its first row, 0 for a
// statement without rows.
func queryInt(ctx context.Context, kind, rawURL, q string) (int, error) {
	var n int
	if kind == "postgres" {
		conn, err := pgx.Connect(ctx, rawURL)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		if !strings.HasPrefix(q, "SELECT") {
			_, err = conn.Exec(ctx, q)
			return 0, err
		}
		return n, conn.QueryRow(ctx, q).Scan(&n)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, err
	}
	db, err := sql.Open("mysql", mysqlDriverDSN(u))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if !strings.HasPrefix(q, "SELECT") {
		_, err = db.ExecContext(ctx, q)
		return 0, err
	}
	return n, db.QueryRowContext(ctx, q).Scan(&n)
}

// TestDockerRestartDatabase: a database container killed with SIGKILL is
// found stopped by Check (exit code 137), and RestartDatabase starts the
// same container again: its URL follows the port it is published on now, a
// committed row survives on its volume, the target still reaches it as
// db:5432, and Check passes.
func TestDockerRestartDatabase(t *testing.T) {
	d, ctx, env := dockerWithDatabase(t, "dbrestart", "postgres", DefaultPostgresImage, OfflinePostgresImage)
	db := env.Database
	for _, q := range []string{"CREATE TABLE kept (n INT)", "INSERT INTO kept VALUES (42)"} {
		if _, err := queryInt(ctx, "postgres", db.URL, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.cli.ContainerKill(ctx, db.Process.ContainerID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	var exit *ExitError
	if err := waitCheck(ctx, d, env); !errors.As(err, &exit) || exit.Event.Kind != window.EventDatabaseExit || exit.Event.ExitCode == nil || *exit.Event.ExitCode != 137 {
		t.Fatalf("Check after the database container's kill = %v, want its exit with code 137", err)
	}

	env2, err := d.RestartDatabase(ctx, env)
	if err != nil {
		t.Fatalf("RestartDatabase: %v", err)
	}
	env = env2
	db2 := env2.Database
	if db2.Process.ContainerID != db.Process.ContainerID || db2.TargetURL != db.TargetURL || !strings.Contains(db2.URL, "@127.0.0.1:") {
		t.Fatalf("restarted database = %+v, want the same container and target URL, published on 127.0.0.1 (was %+v)", db2, db)
	}
	if err := d.Check(ctx, env2); err != nil {
		t.Errorf("Check after the restart: %v", err)
	}
	if n, err := queryInt(ctx, "postgres", db2.URL, "SELECT n FROM kept"); err != nil || n != 42 {
		t.Errorf("the committed row after the restart: %d, %v; want 42", n, err)
	}
	if got := get(t, env2.TargetURL+"/dial?addr=db:5432"); got != "ok\n" {
		t.Errorf("target cannot reach db:5432 after the restart: %q", got)
	}
	if err := d.Teardown(ctx, env2); err != nil {
		t.Fatal(err)
	}
	assertNoLabelled(t, d, LabelEnv, env2.ID)
}

// TestDockerDatabaseRestartedElsewhere: someone restarts the database
// container (docker restart -t 1) between two checks, fast enough that no
// check sees it stopped. The next Check says so (a RestartedError: a
// database_exit, restarted not by longhaul, down for as long as the
// engine says); the database probe, still at the old published port,
// fails; RestartDatabase starts nothing but finds the new port and records
// the new start, so the Check after passes; and the probe, following the
// new URL (Sampler.FollowDatabase), reads the table again in the next
// window.
func TestDockerDatabaseRestartedElsewhere(t *testing.T) {
	for _, tc := range []struct{ kind, def, offline, port string }{
		{"postgres", DefaultPostgresImage, OfflinePostgresImage, "5432"},
		{"mysql", DefaultMySQLImage, OfflineMySQLImage, "3306"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			testDockerDatabaseRestartedElsewhere(t, tc.kind, tc.def, tc.offline, tc.port)
		})
	}
}

func testDockerDatabaseRestartedElsewhere(t *testing.T, kind, def, offline, port string) {
	d, ctx, env := dockerWithDatabase(t, "dbelsewhere-"+kind, kind, def, offline)
	db := env.Database
	if db.Process.StartedAt.IsZero() {
		t.Fatalf("the provisioned database's start is not recorded: %+v", db.Process)
	}
	for _, q := range []string{"CREATE TABLE items (n INT)", "INSERT INTO items VALUES (1), (2), (3)"} {
		if _, err := queryInt(ctx, kind, db.URL, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := probes.New(probes.Config{DatabaseURL: db.URL, DatabaseDelay: -1, MaxSampleTime: 3 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Start(ctx)
	t0 := time.Now()
	sample := func(i int) window.Window {
		w := window.Window{Index: i, Start: t0.Add(time.Duration(i) * 4 * time.Second), End: t0.Add(time.Duration(i+1) * 4 * time.Second), Requests: 10}
		s.Sample(ctx, &w)
		return w
	}
	if w := sample(0); w.Probes.Database == nil {
		t.Fatalf("no database reading before the restart: %+v", s.Problems())
	}
	if err := d.Check(ctx, env); err != nil {
		t.Fatalf("Check before the restart: %v", err)
	}

	grace := 1
	if _, err := d.cli.ContainerRestart(ctx, db.Process.ContainerID, client.ContainerRestartOptions{Timeout: &grace}); err != nil {
		t.Fatal(err)
	}
	err = d.Check(ctx, env)
	var re *RestartedError
	if !errors.As(err, &re) || re.Event.Kind != window.EventDatabaseExit || re.Event.Restarted || re.Event.At.IsZero() ||
		!strings.Contains(re.Event.Detail, "was restarted, not by longhaul (down for ") {
		t.Fatalf("Check after docker restart = %v, want a RestartedError saying how long it was down", err)
	}
	t.Logf("check: %s (%d lines of output)", re.Event.Detail, len(re.Event.Output))
	if w := sample(1); w.Probes.Database != nil {
		t.Errorf("the probe read the database at its old port %s after the restart", db.URL)
	}

	env2, err := d.RestartDatabase(ctx, env)
	if err != nil {
		t.Fatalf("RestartDatabase: %v", err)
	}
	env = env2
	db2 := env2.Database
	if db2.URL == db.URL || !db2.Process.StartedAt.After(db.Process.StartedAt) || db2.Process.ContainerID != db.Process.ContainerID {
		t.Errorf("after RestartDatabase: url %s (was %s), started %v (was %v); want a new port and the later start", db2.URL, db.URL, db2.Process.StartedAt, db.Process.StartedAt)
	}
	if err := d.Check(ctx, env2); err != nil {
		t.Errorf("Check after RestartDatabase: %v", err)
	}
	if err := s.FollowDatabase(ctx, db2.URL); err != nil {
		t.Fatalf("FollowDatabase: %v", err)
	}
	if _, err := queryInt(ctx, kind, db2.URL, "SELECT count(*) FROM items"); err != nil {
		t.Fatal(err)
	}
	w := sample(2)
	if w.Probes.Database == nil {
		t.Fatalf("no database reading in the window after following the restart: %+v", s.Problems())
	}
	found := false
	for _, tb := range w.Probes.Database.Tables {
		found = found || strings.HasSuffix(tb.Name, "items")
	}
	if !found {
		t.Errorf("the reading after the restart lists no items table: %+v", w.Probes.Database.Tables)
	}
	if got := get(t, env2.TargetURL+"/dial?addr=db:"+port); got != "ok\n" {
		t.Errorf("target cannot reach db:%s after the restart: %q", port, got)
	}
}

// TestLocalRestartDatabaseAfterPgCtlRestart: an operator restarts the
// private cluster with pg_ctl restart -m fast. Check finds longhaul's
// server gone (it exited, code 0); RestartDatabase stops the server pg_ctl
// started on the data directory and starts it again as longhaul's own (the
// marker on it, so Check passes and teardown finds it), the data kept.
func TestLocalRestartDatabaseAfterPgCtlRestart(t *testing.T) {
	bin, err := PostgresBinDir()
	if err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	l, _ := newTestLocal(t)
	ctx := testContext(t, 3*time.Minute)
	spec := localSpec(t, nil)
	spec.Database = scenarios.Database{Kind: "postgres"}
	env, err := l.Provision(ctx, Request{RunID: "local-pgctl", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })
	db := env.Database
	for _, q := range []string{"CREATE TABLE kept (n INT)", "INSERT INTO kept VALUES (42)"} {
		if _, err := queryInt(ctx, "postgres", db.URL, q); err != nil {
			t.Fatal(err)
		}
	}
	argv := []string{filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(db.Process.DataDir, "data"), "-l", os.DevNull, "-m", "fast", "-w", "restart"}
	if os.Geteuid() == 0 {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// Stdout and stderr stay nil (/dev/null): no pipe for the server
	// pg_ctl leaves running to hold open.
	if err := cmd.Run(); err != nil {
		t.Fatalf("pg_ctl restart: %v", err)
	}
	var exit *ExitError
	if err := waitCheck(ctx, l, env); !errors.As(err, &exit) || exit.Event.Kind != window.EventDatabaseExit || exit.Event.ExitCode == nil || *exit.Event.ExitCode != 0 {
		t.Fatalf("Check after pg_ctl restart = %v, want the database's exit with code 0", err)
	}
	env2, err := l.RestartDatabase(ctx, env)
	if err != nil {
		t.Fatalf("RestartDatabase: %v", err)
	}
	env = env2
	if err := l.Check(ctx, env2); err != nil {
		t.Errorf("Check after the restart: %v", err)
	}
	if !hasMarker(env2.Database.Process.PID, markerFor(env2.ID, "postgres")) {
		t.Errorf("the database process %d does not carry the environment's marker", env2.Database.Process.PID)
	}
	if n, err := queryInt(ctx, "postgres", env2.Database.URL, "SELECT n FROM kept"); err != nil || n != 42 {
		t.Errorf("the committed row after the restart: %d, %v; want 42", n, err)
	}
	if err := l.Teardown(ctx, env2); err != nil {
		t.Fatal(err)
	}
	assertGone(t, env2)
}

// dockerWithDatabase provisions the test target (image tag name) beside a
// database of kind on the docker provider (run docker-NAME), torn down
// when t ends; it skips when neither the database's image def nor its
// offline build offline is present.
func dockerWithDatabase(t *testing.T, name, kind, def, offline string) (*Docker, context.Context, Environment) {
	t.Helper()
	d := dockerForTest(t)
	ctx := testContext(t, 4*time.Minute)
	if !d.imagePresent(ctx, def) && !d.imagePresent(ctx, offline) {
		t.Skipf("neither %s nor %s is present and no registry answers here: run scripts/offline-images.sh", def, offline)
	}
	img := testTag(name)
	buildTestImage(t, d, img)
	spec := scenarios.Environment{
		Provider: "docker",
		Target: scenarios.Target{Image: img, Health: "/health", HealthTimeout: scenarios.Duration(30 * time.Second),
			Env: map[string]string{"DATABASE_URL": "{{.Database.URL}}"}},
		Database: scenarios.Database{Kind: kind, Name: "shop", User: "app", Password: "secret"},
	}
	env, err := d.Provision(ctx, Request{RunID: "docker-" + name, Incarnation: 1, Spec: spec})
	t.Cleanup(func() { d.Teardown(context.Background(), env) })
	if err != nil {
		t.Fatal(err)
	}
	return d, ctx, env
}
