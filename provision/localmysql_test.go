package provision

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/mysqlserver"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// TestLocalWithMariaDB: database.kind mariadb on the local provider starts a
// private MariaDB on a loopback port, renders {{.Database.URL}} (mariadb://)
// and {{.Database.DSN}} (the Go driver's form) for the target, lets the app
// user in, and is gone after Teardown.
func TestLocalWithMariaDB(t *testing.T) {
	if _, err := mysqlserver.Find(); err != nil {
		t.Skipf("%v", err)
	}
	l, _ := newTestLocal(t)
	ctx := testContext(t, 3*time.Minute)
	spec := localSpec(t, map[string]string{"DATABASE_URL": "{{.Database.URL}}", "DATABASE_DSN": "{{.Database.DSN}}"})
	spec.Database = scenarios.Database{Kind: "mariadb", Name: "shop", User: "app", Password: "p'w"}
	env, err := l.Provision(ctx, Request{RunID: "local-mariadb", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })

	db := env.Database
	if db == nil || db.Kind != "mariadb" || db.Process.PID == 0 || db.Process.DataDir == "" || db.URL != db.TargetURL {
		t.Fatalf("env.Database = %+v, want a local mariadb with PID, data dir and one URL", db)
	}
	u, err := url.Parse(db.URL)
	if err != nil || u.Scheme != "mariadb" || u.Path != "/shop" || u.User.Username() != "app" || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("URL %q (%v): want mariadb://app:…@127.0.0.1:PORT/shop", db.URL, err)
	}
	if got := get(t, env.TargetURL+"/env/DATABASE_URL"); got != db.URL {
		t.Errorf("target DATABASE_URL = %q, want %q", got, db.URL)
	}
	dsn := get(t, env.TargetURL+"/env/DATABASE_DSN")
	if !strings.HasPrefix(dsn, "app:p'w@tcp(127.0.0.1:") {
		t.Errorf("target DATABASE_DSN = %q, want the driver's app:p'w@tcp(127.0.0.1:PORT)/shop", dsn)
	}
	conn, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	var name, usr string
	err = conn.QueryRowContext(ctx, "SELECT DATABASE(), CURRENT_USER()").Scan(&name, &usr)
	if err == nil {
		_, err = conn.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)")
	}
	conn.Close()
	if err != nil || name != "shop" || usr != "app@%" {
		t.Errorf("connected to %q as %q (%v), want shop as app@%%, able to create a table", name, usr, err)
	}
	if err := l.Check(ctx, env); err != nil {
		t.Errorf("Check: %v", err)
	}
	tearDownGone(t, ctx, l, env)
}

// TestLocalMariaDBSurvivesOwnerDeath: a worker killed right after it
// provisioned a MariaDB leaves an environment another worker can check and
// tear down completely (the database process found by its marker).
func TestLocalMariaDBSurvivesOwnerDeath(t *testing.T) {
	if _, err := mysqlserver.Find(); err != nil {
		t.Skipf("%v", err)
	}
	testDatabaseSurvivesOwnerDeath(t, "mariadb")
}

// testDatabaseSurvivesOwnerDeath provisions a target with a database of
// kind in a worker that is killed as soon as Provision returns, then checks
// and tears the environment down from another Local.
func testDatabaseSurvivesOwnerDeath(t *testing.T, kind string) {
	t.Helper()
	data := t.TempDir()
	spec := localSpec(t, map[string]string{"DATABASE_URL": "{{.Database.URL}}"})
	spec.Database = scenarios.Database{Kind: kind}
	env := provisionInHelper(t, "local", data, Request{RunID: "orphan-" + kind, Spec: spec})
	l := NewLocal(Options{DataDir: data, StopGrace: 5 * time.Second, Logger: testLogger(t)})
	t.Cleanup(func() { l.Teardown(context.Background(), env) })
	ctx := testContext(t, time.Minute)
	if err := l.Check(ctx, env); err != nil {
		t.Fatalf("Check after the owner died: %v", err)
	}
	tearDownGone(t, ctx, l, env)
}
