package provision

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// TestDockerTargetWithMySQL: database.kind mysql on the docker provider runs
// mysql:8.4 or, with no registry, the offline MariaDB image (noted), on the
// run's network as db:3306 and on 127.0.0.1 only; the target gets the URL
// and the driver's DSN; the probe's URL (root) reads the performance schema;
// teardown leaves nothing labelled.
func TestDockerTargetWithMySQL(t *testing.T) {
	d := dockerForTest(t)
	ctx := testContext(t, 5*time.Minute)
	img := targetBesideDatabase(ctx, t, d, DefaultMySQLImage, OfflineMySQLImage, "scripts/offline-images.sh mariadb")
	spec := scenarios.Environment{
		Provider: "docker",
		Target: scenarios.Target{
			Image:         img,
			Env:           map[string]string{"DATABASE_URL": "{{.Database.URL}}", "DATABASE_DSN": "{{.Database.DSN}}"},
			Health:        "/health",
			HealthTimeout: scenarios.Duration(30 * time.Second),
		},
		Database: scenarios.Database{Kind: "mysql", Name: "shop", User: "app", Password: "secret"},
	}
	env, err := d.Provision(ctx, Request{RunID: "docker-mysql", Incarnation: 1, Spec: spec})
	t.Cleanup(func() { d.Teardown(context.Background(), env) })
	if err != nil {
		t.Fatal(err)
	}
	db := env.Database
	if db == nil || db.Kind != "mysql" || db.Process.ContainerID == "" || db.TargetURL != "mysql://app:secret@db:3306/shop" || !strings.HasPrefix(db.URL, "mysql://root:secret@127.0.0.1:") {
		t.Fatalf("env.Database = %+v, want a mysql container as db:3306, and root on 127.0.0.1 for the probe", db)
	}
	if !d.imagePresent(ctx, DefaultMySQLImage) && (db.Image != OfflineMySQLImage || len(env.Notes) == 0) {
		t.Errorf("database image %q, notes %q: want the offline fallback noted", db.Image, env.Notes)
	}
	if got := get(t, env.TargetURL+"/env/DATABASE_URL"); got != db.TargetURL {
		t.Errorf("target DATABASE_URL = %q, want %q", got, db.TargetURL)
	}
	if got := get(t, env.TargetURL+"/env/DATABASE_DSN"); !strings.HasPrefix(got, "app:secret@tcp(db:3306)/shop") {
		t.Errorf("target DATABASE_DSN = %q, want app:secret@tcp(db:3306)/shop…", got)
	}
	if got := get(t, env.TargetURL+"/dial?addr=db:3306"); got != "ok\n" {
		t.Errorf("target cannot reach db:3306 on the run's network: %q", got)
	}
	// The app user works from the host too (same password, published port).
	dsn, err := probes.MySQLDSN(strings.Replace(db.URL, "root:", "app:", 1))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, "CREATE TABLE items (id INT PRIMARY KEY, v INT)")
	if err == nil {
		_, err = conn.ExecContext(ctx, "INSERT INTO items VALUES (1, 1), (2, 2)")
	}
	conn.Close()
	if err != nil {
		t.Fatalf("as the app user: %v", err)
	}
	r, err := probes.NewMySQLStatsReader(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Read(ctx)
	r.Close()
	if err != nil {
		t.Fatalf("probe reading: %v", err)
	}
	found := false
	for _, tb := range st.Tables {
		found = found || (tb.Name == "items" && tb.LiveRows == 2)
	}
	if !found {
		t.Errorf("probe tables = %+v, want items with 2 rows", st.Tables)
	}
	ins, err := d.cli.ContainerInspect(ctx, db.Process.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for port, bs := range ins.Container.HostConfig.PortBindings {
		for _, b := range bs {
			if b.HostIP.String() != "127.0.0.1" {
				t.Errorf("database port %s published on %q, want 127.0.0.1 only", port, b.HostIP)
			}
		}
	}
	if err := d.Check(ctx, env); err != nil {
		t.Errorf("Check: %v", err)
	}
	tearDownUnlabelled(t, ctx, d, env)
}
