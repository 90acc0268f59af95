package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/longhaul-dev/longhaul/window"
)

// DatabaseStatements is a run's database round trips: the statements its
// target sent (pg_stat_statements, the probe's own left out) per request,
// beside its transactions and rows read per request over the same windows,
// and the statements that cost most per request. Per request means over
// every request of the run's windows that counted statements: a
// statement's calls are not apportioned to the ops that made them.
type DatabaseStatements struct {
	// Windows is how many windows counted statements, Requests their
	// requests.
	Windows  int   `json:"windows"`
	Requests int64 `json:"requests"`

	Statements           int64   `json:"statements"`
	StatementsPerRequest float64 `json:"statements_per_request"`
	// XactPerRequest and RowsReadPerRequest are over the same windows
	// (XactPerRequest where they counted transactions).
	XactPerRequest     *float64 `json:"xact_per_request,omitempty"`
	RowsReadPerRequest float64  `json:"rows_read_per_request"`

	// ByCalls are the most called statements, ByRows those with the most
	// rows (retrieved or affected) per request, most first. A window lists
	// its busiest statements only (window.MaxTopStatements by calls and by
	// rows), so a statement's figures leave out the windows where it was
	// not among them.
	ByCalls []StatementCost `json:"by_calls"`
	ByRows  []StatementCost `json:"by_rows"`
}

// StatementCost is one statement's calls and rows over a run, and per
// request.
type StatementCost struct {
	QueryID         int64   `json:"query_id"`
	Query           string  `json:"query"`
	Calls           int64   `json:"calls"`
	Rows            int64   `json:"rows"`
	CallsPerRequest float64 `json:"calls_per_request"`
	RowsPerRequest  float64 `json:"rows_per_request"`
}

// TopStatementsShown is how many statements a report lists in each order.
const TopStatementsShown = 5

// RunStatements sums up the statements of ws (gaps left out), listing n in
// each order; nil when no window counted statements.
func RunStatements(ws []window.Window, n int) *DatabaseStatements {
	var s DatabaseStatements
	var xacts, xactRequests int64
	var rowsRead float64
	sums := window.StatementSums{}
	for _, w := range ws {
		d := w.Probes.Database
		if w.Gap || d == nil || !d.StatementsCounted {
			continue
		}
		s.Windows++
		s.Requests += w.Requests
		s.Statements += d.Statements
		rowsRead += d.RowsReadPerRequest * float64(w.Requests)
		if d.Transactions != nil {
			xacts += *d.Transactions
			xactRequests += w.Requests
		}
		sums.Add(d.TopStatements)
	}
	if s.Windows == 0 {
		return nil
	}
	all := make([]StatementCost, 0, len(sums))
	for _, st := range sums.List() {
		c := StatementCost{QueryID: st.QueryID, Query: st.Query, Calls: st.Calls, Rows: st.Rows}
		if s.Requests > 0 {
			c.CallsPerRequest = float64(c.Calls) / float64(s.Requests)
			c.RowsPerRequest = float64(c.Rows) / float64(s.Requests)
		}
		all = append(all, c)
	}
	if s.Requests > 0 {
		s.StatementsPerRequest = float64(s.Statements) / float64(s.Requests)
		s.RowsReadPerRequest = rowsRead / float64(s.Requests)
	}
	if xactRequests > 0 {
		v := float64(xacts) / float64(xactRequests)
		s.XactPerRequest = &v
	}
	top := func(key func(StatementCost) int64) []StatementCost {
		slices.SortFunc(all, func(a, b StatementCost) int {
			if c := cmp.Compare(key(b), key(a)); c != 0 {
				return c
			}
			return cmp.Compare(a.QueryID, b.QueryID)
		})
		out := slices.Clone(all[:min(n, len(all))])
		return slices.DeleteFunc(out, func(c StatementCost) bool { return key(c) == 0 })
	}
	s.ByCalls = top(func(c StatementCost) int64 { return c.Calls })
	s.ByRows = top(func(c StatementCost) int64 { return c.Rows })
	return &s
}

// Headline is the section's first line: "1.02 statements, 1.00
// transactions, 20.4 rows read per request (pg_stat_statements, 28
// windows, 12,345 requests)".
func (s DatabaseStatements) Headline() string {
	xact := ""
	if s.XactPerRequest != nil {
		xact = num(*s.XactPerRequest) + " transactions, "
	}
	return fmt.Sprintf("%s statements, %s%s rows read per request (pg_stat_statements, %d windows, %d requests)",
		num(s.StatementsPerRequest), xact, num(s.RowsReadPerRequest), s.Windows, s.Requests)
}

// writeStatements prints the section, or nothing for nil:
//
//	database round trips: 1.02 statements, 1 transactions, 20.4 rows read per request (…)
//	  most called   calls/req  rows/req  statement
//	                    1.000    20.000  SELECT … FROM items …
//	  most rows     …
func writeStatements(out io.Writer, s *DatabaseStatements) {
	if s == nil {
		return
	}
	fmt.Fprintf(out, "database round trips: %s\n", s.Headline())
	list := func(title string, cs []StatementCost) {
		for i, c := range cs {
			label := ""
			if i == 0 {
				label = title
			}
			fmt.Fprintf(out, "  %-12s %10.3f %10.3f  %s\n", label, c.CallsPerRequest, c.RowsPerRequest, shortName(c.Query, 100))
		}
	}
	if len(s.ByCalls) > 0 || len(s.ByRows) > 0 {
		fmt.Fprintf(out, "  %-12s %10s %10s  %s\n", "", "calls/req", "rows/req", "statement")
	}
	list("most called", s.ByCalls)
	list("most rows", s.ByRows)
	fmt.Fprintln(out)
}
