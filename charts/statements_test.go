package charts

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// TestRunPageStatements: a run whose windows counted statements
// (pg_stat_statements) gets the database round-trips section with its
// costliest statements; a run without them does not.
func TestRunPageStatements(t *testing.T) {
	u := probedRunUI(t, fixture{ID: "run-s", Name: "pg-api", Windows: 12, Window: 10 * time.Second}, 0, func(w *window.Window) {
		x := w.Requests
		w.Probes.Database = &window.Database{RowsReadPerRequest: 20, Transactions: &x, StatementsCounted: true,
			Statements: 2 * w.Requests, StatementsPerRequest: 2, TopStatements: []window.Statement{
				{QueryID: 7, Query: "SELECT id, title FROM items WHERE bucket = $1 LIMIT $2", Calls: w.Requests, Rows: 20 * w.Requests},
				{QueryID: 9, Query: "SELECT user_id FROM sessions WHERE token = $1", Calls: w.Requests, Rows: w.Requests}}}
	})
	body := u.mustGet("/runs/run-s", "text/html")
	checkCSPClean(t, "run", body)
	for _, want := range []string{"<h2>Database round trips</h2>", "2 statements, 1 transactions, 20 rows read per request (pg_stat_statements, 11 windows",
		"most called per request", "most rows per request", `<td class="mono">SELECT id, title FROM items WHERE bucket = $1 LIMIT $2</td><td class="r">1.00</td><td class="r">20.0</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	plain := newTestUI(t, Options{})
	if body := plain.mustGet("/runs/run-1", "text/html"); strings.Contains(body, "Database round trips") {
		t.Error("a run without statements shows the round-trips section")
	}
}
