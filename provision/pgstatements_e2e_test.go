package provision_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestStatementsDemo: the local provider's PostgreSQL loads
// pg_stat_statements and creates it in the target's database, so the real
// server probes count the demo target's statements in every 1 s window:
// GET /items is one statement per request (the probe's own are left out),
// and the run's report names it as the most called.
func TestStatementsDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo target and PostgreSQL for ~10 s")
	}
	if _, err := provision.PostgresBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	bin, l := demoTargetLocal(t)
	spec := scenarios.Environment{Provider: "local",
		Target:   scenarios.Target{Command: []string{bin}, Health: "/health", HealthTimeout: scenarios.Duration(60 * time.Second), Env: map[string]string{"DATABASE_URL": "{{.Database.URL}}"}},
		Database: scenarios.Database{Kind: "postgres"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := l.Provision(ctx, provision.Request{RunID: "statements-e2e", Spec: spec})
	defer func() {
		if err := l.Teardown(context.WithoutCancel(ctx), env); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}()
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	// 30 items, so that the list returns its 20 rows.
	conn, err := pgx.Connect(ctx, env.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO users (username, password_hash, created_at) VALUES ('seed', '\x00', now());
	INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
	SELECT g % 10, 'item ' || g, (SELECT id FROM users LIMIT 1), '{}', now(), now() FROM generate_series(1, 30) g`)
	conn.Close(ctx)
	if err != nil {
		t.Fatalf("seed items: %v", err)
	}
	aenv := activities.Environment{ID: env.ID, Provider: env.Provider, TargetURL: env.TargetURL, PID: env.Target.PID,
		DatabaseURL: env.Database.URL, DatabasePID: env.Database.Process.PID}
	logger := slog.New(slog.DiscardHandler)
	prober, err := activities.ServerProbes(logger)(ctx, aenv, scenarios.Probes{})
	if err != nil {
		t.Fatalf("probes: %v", err)
	}
	defer prober.Close()

	s := &scenarios.Scenario{Name: "statements", Ops: []scenarios.Op{{Weight: 1, Step: scenarios.Step{Name: "list",
		Request: scenarios.Request{Method: "GET", Path: "/items"}, Expect: scenarios.Expect{Status: []int{200}}}}}}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	load := scenarios.Load{VUs: 2, Window: scenarios.Duration(time.Second), Timeout: scenarios.Duration(10 * time.Second), Duration: scenarios.Duration(5 * time.Second)}
	u, err := url.Parse(env.TargetURL)
	if err != nil {
		t.Fatal(err)
	}
	var ws []window.Window
	_, err = driver.Run(ctx, driver.Options{Target: u, Plan: plan, Load: load, Seed: 1, Logger: logger}, func(w window.Window) error {
		prober.Sample(ctx, &w)
		ws = append(ws, w)
		return nil
	})
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	counted := 0
	for _, w := range ws {
		d := w.Probes.Database
		if d == nil {
			t.Errorf("window %d: no database reading (failures %v)", w.Index, w.ProbeFailures)
			continue
		}
		if d.StatementsUnavailable != "" {
			t.Fatalf("window %d: statements unavailable: %s", w.Index, d.StatementsUnavailable)
		}
		t.Logf("window %d: %d requests, %d statements (%.3f per request), %d listed, %.1f rows read per request",
			w.Index, w.Requests, d.Statements, d.StatementsPerRequest, len(d.TopStatements), d.RowsReadPerRequest)
		if !d.StatementsCounted || w.Requests < 50 {
			continue
		}
		counted++
		// One statement per request; the window's edges can move one or
		// two requests' statements between neighbours (the driver closes
		// the window, the probe reads a moment later).
		if d.StatementsPerRequest < 0.95 || d.StatementsPerRequest > 1.05 {
			t.Errorf("window %d: %.3f statements per request, want 1 (GET /items is one SELECT)", w.Index, d.StatementsPerRequest)
		}
		for _, st := range d.TopStatements {
			if strings.Contains(st.Query, "longhaul-probes") || strings.Contains(st.Query, "pg_stat_") {
				t.Errorf("window %d: the probe's own statement counted: %+v", w.Index, st)
			}
		}
	}
	if counted < 3 {
		t.Fatalf("%d windows counted statements over load, want at least 3", counted)
	}
	rep := report.RunStatements(ws, report.TopStatementsShown)
	if rep == nil || len(rep.ByCalls) == 0 {
		t.Fatalf("no statements in the run's report: %+v", rep)
	}
	top := rep.ByCalls[0]
	t.Logf("%s; most called: %.3f calls, %.2f rows per request: %s", rep.Headline(), top.CallsPerRequest, top.RowsPerRequest, top.Query)
	if !strings.Contains(top.Query, "FROM items") || top.CallsPerRequest < 0.95 || top.RowsPerRequest < 19 || top.RowsPerRequest > 21 {
		t.Errorf("most called %+v, want the items list at one call and 20 rows per request", top)
	}
}
