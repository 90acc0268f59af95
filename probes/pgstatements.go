package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/longhaul-dev/longhaul/window"
)

// probeMarker begins every statement the database probe sends, so that its
// own entries in pg_stat_statements can be told from the target's and left
// out: pg_stat_statements keeps a statement's text as sent, leading comment
// included (only whitespace is trimmed), for each statement of a
// multi-statement query string too.
const probeMarker = "/* longhaul-probes */ "

// PGStatement is one statement's pg_stat_statements counters in the
// connected database (summed over the users that ran it), as read: Calls
// and Rows (rows retrieved or affected) since the statistics were reset.
// Query is its normalised text (constants as $1, …), cut to
// MaxStatementText bytes, or "<insufficient privilege>" for another user's
// statement the probe's user may not read.
type PGStatement struct {
	Query string
	Calls int64
	Rows  int64
}

// MaxStatementText bounds a statement's text as kept in a window.
const MaxStatementText = 300

// statementsSource is where the reader finds pg_stat_statements, decided
// once per connection (checkStatements).
type statementsSource struct {
	view        string // the qualified view, "" when unavailable
	unavailable string // why not, when view is ""
}

// checkStatements finds pg_stat_statements in the connected database: the
// extension must be created there and its library loaded
// (shared_preload_libraries), or its view errors. Each query is a
// transaction of the probe's own and counts in r.xacts.
func (r *PGStatsReader) checkStatements(ctx context.Context) (statementsSource, error) {
	var schema string
	r.xacts++
	err := r.conn.QueryRow(ctx, probeMarker+`SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
	WHERE e.extname = 'pg_stat_statements'`).Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return statementsSource{unavailable: "the pg_stat_statements extension is not created in the target's database (CREATE EXTENSION pg_stat_statements, with shared_preload_libraries = 'pg_stat_statements')"}, nil
	}
	if err != nil {
		return statementsSource{}, fmt.Errorf("look for pg_stat_statements: %w", err)
	}
	view := pgx.Identifier{schema, "pg_stat_statements"}.Sanitize()
	r.xacts++
	var n int64
	// The view's function errors unless the library is loaded; without
	// the texts, the call is cheap.
	err = r.conn.QueryRow(ctx, probeMarker+`SELECT count(*) FROM `+view+`(false)`).Scan(&n)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Not loaded (shared_preload_libraries), or no permission to call it.
		return statementsSource{unavailable: "pg_stat_statements: " + pgErr.Message}, nil
	}
	if err != nil {
		return statementsSource{}, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	return statementsSource{view: view}, nil
}

// statementsQuery reads the target's statements from view: those of the
// connected database, the probe's own left out, summed by query id (a
// statement run by two users, or both at top level and nested, has two
// entries).
func statementsQuery(view string) string {
	return probeMarker + `SELECT coalesce(queryid, 0), sum(calls)::int8, sum(rows)::int8, min(query) FROM ` + view + `
	WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND query NOT LIKE '` + strings.TrimSpace(probeMarker) + `%' GROUP BY 1`
}

// scanStatements reads statementsQuery's rows into st.
func scanStatements(rows pgx.Rows, st *PGStats) error {
	defer rows.Close()
	st.StatementCounts = map[int64]PGStatement{}
	for rows.Next() {
		var id int64
		var s PGStatement
		var text *string
		if err := rows.Scan(&id, &s.Calls, &s.Rows, &text); err != nil {
			return err
		}
		if text != nil {
			s.Query = cutText(*text, MaxStatementText)
		}
		st.StatementCounts[id] = s
		st.Statements += s.Calls
	}
	if err := rows.Err(); err != nil {
		return err
	}
	st.HasStatements = true
	return nil
}

// cutText collapses s's whitespace runs to one space and cuts it to at
// most n bytes at a rune boundary, marking the cut.
func cutText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// statementsDelta fills d's statement figures from two readings that both
// counted statements: the count, per request, and the window's busiest
// statements (window.MaxTopStatements by calls and by rows). The count is
// the sum of each statement's delta, not the delta of the sums: a
// statement evicted from pg_stat_statements (pg_stat_statements.max) takes
// its calls out of the sum without any reset, while each statement's
// counter only goes down when it was reset (or evicted and seen again),
// and then counts from zero.
func statementsDelta(d *window.Database, prev, cur PGStats, requests int64) {
	var all []window.Statement
	d.Statements = 0
	for id, c := range cur.StatementCounts {
		p := prev.StatementCounts[id] // a new statement counts from zero
		s := window.Statement{QueryID: id, Query: c.Query, Calls: counterDelta(p.Calls, c.Calls), Rows: counterDelta(p.Rows, c.Rows)}
		d.Statements += s.Calls
		if s.Calls > 0 || s.Rows > 0 {
			all = append(all, s)
		}
	}
	d.StatementsCounted = true
	if requests > 0 {
		d.StatementsPerRequest = float64(d.Statements) / float64(requests)
	}
	d.TopStatements = window.TopStatements(all, window.MaxTopStatements)
}
