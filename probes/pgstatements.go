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
// multi-statement query string too. The text is the one first seen for a
// query id, and the id ignores comments, so each of the probe's statements
// is one a target would not send as it is (catalog reads, a function
// called in FROM).
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
	view        string // the qualified view, "" when unavailable or not looked for yet
	unavailable string // why not, when view is ""
}

// checkStatements looks for pg_stat_statements in the connected database
// right after the connection's first reading, st, and adds the target's
// statements to it when they can be read: the extension must be created
// there and its library loaded (shared_preload_libraries), or its view
// errors. Later readings read them in their own batch.
//
// It comes after the first reading, not before, because its queries are
// transactions of the probe's own (counted in r.xacts) that a new backend
// publishes up to a second late: before the first reading, they would make
// that baseline's count of the target's transactions short, and the run's
// total too high. After it they could only move between windows, and on
// PostgreSQL 15 and later not even that: the check ends by asking the
// backend to publish its statistics as soon as it is idle
// (pg_stat_force_next_flush).
func (r *PGStatsReader) checkStatements(ctx context.Context, st *PGStats) (err error) {
	defer func() {
		if err == nil && serverMajor(r.conn) >= 15 {
			r.xacts++
			// In FROM, so that its query id differs from a target's own
			// SELECT pg_stat_force_next_flush() (the id ignores comments).
			_, err = r.conn.Exec(ctx, probeMarker+`SELECT 1 FROM pg_stat_force_next_flush()`)
		}
	}()
	unavailable := func(why string) error {
		r.stmts = statementsSource{unavailable: why}
		st.StatementsUnavailable = why
		return nil
	}
	var schema string
	r.xacts++
	err = r.conn.QueryRow(ctx, probeMarker+`SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
	WHERE e.extname = 'pg_stat_statements'`).Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return unavailable("the pg_stat_statements extension is not created in the target's database (CREATE EXTENSION pg_stat_statements, with shared_preload_libraries = 'pg_stat_statements')")
	}
	if err != nil {
		return fmt.Errorf("look for pg_stat_statements: %w", err)
	}
	view := pgx.Identifier{schema, "pg_stat_statements"}.Sanitize()
	r.xacts++
	rows, err := r.conn.Query(ctx, statementsQuery(view))
	if err == nil {
		err = scanStatements(rows, st)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Not loaded (shared_preload_libraries), or no permission.
		return unavailable("pg_stat_statements: " + pgErr.Message)
	}
	if err != nil {
		return fmt.Errorf("read pg_stat_statements: %w", err)
	}
	r.stmts = statementsSource{view: view}
	return nil
}

// serverMajor is the connected server's major version (0 when unknown).
func serverMajor(conn *pgx.Conn) int {
	v := conn.PgConn().ParameterStatus("server_version")
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
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
