package devserver

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"go.temporal.io/sdk/client"
	pgschema "go.temporal.io/server/schema/postgresql/v12"

	"github.com/longhaul-dev/longhaul/internal/pgtest"
)

// withDatabase is dsn pointing at database db instead.
func withDatabase(t *testing.T, dsn, db string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	return u.String()
}

func queryString(t *testing.T, dsn, q string, args ...any) string {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// TestPreparePostgresConcurrently: four servers preparing one new database
// at once (creating both databases, migrating both schemas from nothing,
// creating the namespace) all succeed, and leave the schema at this server's
// version with one namespace row; preparing again changes nothing.
func TestPreparePostgresConcurrently(t *testing.T) {
	dsn := withDatabase(t, pgtest.Start(t), "temporal")
	p, err := postgresPersistence(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = preparePostgres(ctx, dsn, p, "default") })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("preparer %d: %v", i, err)
		}
	}
	if t.Failed() {
		return
	}
	if err := preparePostgres(ctx, dsn, p, "default"); err != nil {
		t.Fatalf("prepare again: %v", err)
	}
	if got := queryString(t, dsn, "SELECT curr_version FROM schema_version WHERE db_name = 'temporal'"); got != pgschema.Version {
		t.Errorf("temporal schema version %s, want %s", got, pgschema.Version)
	}
	vis := withDatabase(t, dsn, VisibilityDatabase("temporal"))
	if got := queryString(t, vis, "SELECT curr_version FROM schema_version WHERE db_name = $1", VisibilityDatabase("temporal")); got != pgschema.VisibilityVersion {
		t.Errorf("visibility schema version %s, want %s", got, pgschema.VisibilityVersion)
	}
	if got := queryString(t, dsn, "SELECT count(*)::text FROM namespaces WHERE name = 'default'"); got != "1" {
		t.Errorf("%s namespace rows named default, want 1", got)
	}
}

func TestPostgresPersistenceErrors(t *testing.T) {
	for _, dsn := range []string{"mysql://x/y", "postgres://u:secret@h:5432/", "postgres:///db", "postgres://u:secret@h/a/b"} {
		_, err := postgresPersistence(dsn)
		if err == nil {
			t.Errorf("postgresPersistence(%q) succeeded, want an error", dsn)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

// TestPostgresRunStopRestart: a server on PostgreSQL runs a workflow, stops
// while another waits on a timer, and a server started again on the same
// database (its schema already there) finishes it.
func TestPostgresRunStopRestart(t *testing.T) {
	dsn := withDatabase(t, pgtest.Start(t), "temporal")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := Options{Postgres: dsn, Port: testPort(t), Logger: quietLogger()}
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if strings.Contains(s.Persistence(), "@") && !strings.Contains(s.Persistence(), "postgres@") {
		t.Errorf("Persistence() = %q", s.Persistence())
	}
	c := dial(t, s)
	w := startWorker(t, c, "q")
	var got string
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "quick", TaskQueue: "q"}, greet, "quick", time.Duration(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &got); err != nil || got != "hello quick" {
		t.Fatalf("quick workflow = %q, %v", got, err)
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "durable", TaskQueue: "q"}, greet, "durable", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	c.Close()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	s2, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("restart on the same database: %v", err)
	}
	defer s2.Stop()
	c2 := dial(t, s2)
	defer c2.Close()
	w2 := startWorker(t, c2, "q")
	defer w2.Stop()
	if err := c2.GetWorkflow(ctx, "durable", "").Get(ctx, &got); err != nil || got != "hello durable" {
		t.Fatalf("durable workflow after restart = %q, %v", got, err)
	}
}
