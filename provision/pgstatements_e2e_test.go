package provision_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// TestStatementsDemo: the local provider's PostgreSQL loads
// pg_stat_statements and creates it in the target's database, so the real
// server probes count the demo target's statements in its windows:
// GET /items is one statement per request (the probe's own are left out),
// and the run's report names it as the most called.
func TestStatementsDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo target and PostgreSQL for ~15 s")
	}
	if _, err := provision.PostgresBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	bin, l := demoTargetLocal(t)
	spec := scenarios.Environment{Provider: "local",
		Target:   scenarios.Target{Command: []string{bin}, Health: "/health", HealthTimeout: scenarios.Duration(60 * time.Second), Env: map[string]string{"DATABASE_URL": "{{.Database.URL}}"}},
		Database: scenarios.Database{Kind: "postgres"},
	}
	// 2 s windows, as the wall ramps: a window's probes have a quarter of
	// it, and the database's reading waits for PostgreSQL to publish its
	// statistics first; with 1 s windows that leaves under 100 ms, which
	// a machine shared with other work (load 20) misses.
	load := scenarios.Load{VUs: 2, Window: scenarios.Duration(2 * time.Second), Timeout: scenarios.Duration(10 * time.Second), Duration: scenarios.Duration(10 * time.Second)}
	ws := driveProbed(t, l, spec, "/items", load, func(ctx context.Context, env provision.Environment) {
		// 30 items, so that the list returns its 20 rows.
		conn, err := pgx.Connect(ctx, env.Database.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err = conn.Exec(ctx, `INSERT INTO users (username, password_hash, created_at) VALUES ('seed', '\x00', now());
		INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
		SELECT g % 10, 'item ' || g, (SELECT id FROM users LIMIT 1), '{}', now(), now() FROM generate_series(1, 30) g`); err != nil {
			t.Fatalf("seed items: %v", err)
		}
	})
	counted := 0
	for _, w := range ws {
		d := w.Probes.Database
		if d == nil {
			t.Logf("window %d: no database reading (failures %v)", w.Index, w.ProbeFailures)
			continue
		}
		if d.StatementsUnavailable != "" {
			t.Fatalf("window %d: statements unavailable: %s", w.Index, d.StatementsUnavailable)
		}
		t.Logf("window %d: %d requests, %d statements (%.3f per request), %d listed, %.1f rows read per request",
			w.Index, w.Requests, d.Statements, d.StatementsPerRequest, len(d.TopStatements), d.RowsReadPerRequest)
		if !d.StatementsCounted || w.Requests < 50 || w.Partial {
			continue
		}
		counted++
		// One statement per request. The probe reads a moment after the
		// driver closes the window (a third of a second here, later on a
		// loaded machine), so a window's statements are those of a span
		// shifted by that much: at thousands of requests a second, one
		// window reads 0.76 and the next 1.1 (rows read per request swing
		// alike).
		if d.StatementsPerRequest < 0.5 || d.StatementsPerRequest > 1.5 {
			t.Errorf("window %d: %.3f statements per request, want 1 (GET /items is one SELECT)", w.Index, d.StatementsPerRequest)
		}
		for _, st := range d.TopStatements {
			if strings.Contains(st.Query, "longhaul-probes") || strings.Contains(st.Query, "pg_stat_") {
				t.Errorf("window %d: the probe's own statement counted: %+v", w.Index, st)
			}
		}
	}
	if counted < 2 {
		t.Fatalf("%d windows counted statements over load, want at least 2", counted)
	}
	rep := report.RunStatements(ws, report.TopStatementsShown)
	if rep == nil || len(rep.ByCalls) == 0 {
		t.Fatalf("no statements in the run's report: %+v", rep)
	}
	top := rep.ByCalls[0]
	t.Logf("%s; most called: %.3f calls, %.2f rows per request: %s", rep.Headline(), top.CallsPerRequest, top.RowsPerRequest, top.Query)
	// Over consecutive windows the shifts cancel; a window whose reading
	// missed the probes' budget on a loaded machine leaves one uncancelled.
	if rep.StatementsPerRequest < 0.8 || rep.StatementsPerRequest > 1.25 {
		t.Errorf("%.3f statements per request over the run, want 1", rep.StatementsPerRequest)
	}
	// Rows per call are exact whatever the window's edges: the list's 20.
	if !strings.Contains(top.Query, "FROM items") || top.CallsPerRequest < 0.8 || top.CallsPerRequest > 1.25 || top.Rows != 20*top.Calls {
		t.Errorf("most called %+v, want the items list at one call per request, 20 rows each", top)
	}
}
