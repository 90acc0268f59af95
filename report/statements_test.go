package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// statementWindows are four windows of 100 requests over PostgreSQL: a
// list (1 call, 20 rows per request), a session lookup (1 call, 1 row) and,
// in the last two windows only, a slow report (0.1 call, 500 rows); one
// gap.
func statementWindows() []window.Window {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	var ws []window.Window
	for i := range 5 {
		w := window.Window{Index: i, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second), Requests: 100}
		if i == 2 {
			w.Gap, w.Requests = true, 0
			ws = append(ws, w)
			continue
		}
		x := int64(200)
		d := &window.Database{RowsReadPerRequest: 25, Transactions: &x, StatementsCounted: true, TopStatements: []window.Statement{
			{QueryID: 1, Query: "SELECT * FROM items LIMIT $1", Calls: 100, Rows: 2000},
			{QueryID: 2, Query: "SELECT user_id FROM sessions WHERE token = $1", Calls: 100, Rows: 100}}}
		if i >= 3 {
			d.TopStatements = append(d.TopStatements, window.Statement{QueryID: 3, Query: "SELECT sum(n) FROM report", Calls: 10, Rows: 5000})
		}
		for _, s := range d.TopStatements {
			d.Statements += s.Calls
		}
		w.Probes.Database = d
		ws = append(ws, w)
	}
	return ws
}

func TestRunStatements(t *testing.T) {
	s := RunStatements(statementWindows(), 2)
	if s == nil {
		t.Fatal("no statements")
	}
	if s.Windows != 4 || s.Requests != 400 || s.Statements != 820 || s.StatementsPerRequest != 2.05 || s.RowsReadPerRequest != 25 || s.XactPerRequest == nil || *s.XactPerRequest != 2 {
		t.Errorf("totals %+v, want 4 windows, 400 requests, 820 statements (2.05 per request), 25 rows read and 2 transactions per request", s)
	}
	ids := func(cs []StatementCost) (out []int64) {
		for _, c := range cs {
			out = append(out, c.QueryID)
		}
		return out
	}
	if got := ids(s.ByCalls); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("by calls %v, want [1 2] (equal calls: by id)", got)
	}
	if got := ids(s.ByRows); len(got) != 2 || got[0] != 3 || got[1] != 1 {
		t.Errorf("by rows %v, want [3 1]", got)
	}
	if r := s.ByRows[0]; r.Rows != 10000 || r.RowsPerRequest != 25 || r.CallsPerRequest != 0.05 {
		t.Errorf("the report statement %+v, want 10,000 rows = 25 per request, 0.05 calls per request", r)
	}
	if RunStatements(statementWindows()[2:3], 5) != nil {
		t.Error("statements from a gap alone")
	}
	noStmts := statementWindows()
	for i := range noStmts {
		if d := noStmts[i].Probes.Database; d != nil {
			d.StatementsCounted, d.StatementsUnavailable = false, "not loaded"
		}
	}
	if RunStatements(noStmts, 5) != nil {
		t.Error("statements from windows that did not count them")
	}
}

// TestRunReportStatements: the text report prints the round trips after
// the summary; the JSON report has one {"type":"statements"} object.
func TestRunReportStatements(t *testing.T) {
	rep, err := NewRunReport(store.Run{ID: "r1", Name: "pg", Kind: "soak", Status: store.Completed}, statementWindows(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := WriteRunText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"database round trips: 2.05 statements, 2 transactions, 25 rows read per request (pg_stat_statements, 4 windows, 400 requests)\n",
		"  most called       1.000     20.000  SELECT * FROM items LIMIT $1\n",
		"  most rows         0.050     25.000  SELECT sum(n) FROM report\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteRunJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(js.String()), "\n") {
		var o struct {
			Type    string          `json:"type"`
			ByCalls []StatementCost `json:"by_calls"`
			ByRows  []StatementCost `json:"by_rows"`
			PerReq  float64         `json:"statements_per_request"`
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if o.Type == "statements" {
			found = true
			if o.PerReq != 2.05 || len(o.ByCalls) != 3 || len(o.ByRows) != 3 || o.ByRows[0].Query != "SELECT sum(n) FROM report" {
				t.Errorf("statements object %s", line)
			}
		}
	}
	if !found {
		t.Errorf("no statements object in\n%s", js.String())
	}
}
