package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// sqlStore implements Store over database/sql for SQLite and PostgreSQL.
// w takes every write; r serves reads (the same pool on PostgreSQL, a
// read-only pool on SQLite so readers never queue behind the writer).
type sqlStore struct {
	name string
	d    dialect
	w, r *sql.DB

	putWindow *sql.Stmt
}

var _ Store = (*sqlStore)(nil)

const windowColumns = `run_id, incarnation, idx, start_ns, end_ns, gap, requests, ok, errors, dropped, rps,
	p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, vus,
	cpu_us_per_request, rss_bytes, heap_bytes, rows_read_per_request, doc, histogram, ops, op_histograms`

const upsertWindow = `INSERT INTO windows (` + windowColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, NULL)
ON CONFLICT (run_id, incarnation, idx) DO UPDATE SET
	start_ns = excluded.start_ns, end_ns = excluded.end_ns, gap = excluded.gap,
	requests = excluded.requests, ok = excluded.ok, errors = excluded.errors, dropped = excluded.dropped,
	rps = excluded.rps, p50_ms = excluded.p50_ms, p90_ms = excluded.p90_ms, p95_ms = excluded.p95_ms,
	p99_ms = excluded.p99_ms, p999_ms = excluded.p999_ms, max_ms = excluded.max_ms, vus = excluded.vus,
	cpu_us_per_request = excluded.cpu_us_per_request, rss_bytes = excluded.rss_bytes,
	heap_bytes = excluded.heap_bytes, rows_read_per_request = excluded.rows_read_per_request,
	doc = excluded.doc, histogram = excluded.histogram, ops = excluded.ops, op_histograms = NULL`

func (s *sqlStore) prepare(ctx context.Context) error {
	st, err := s.w.PrepareContext(ctx, s.d.rebind(upsertWindow))
	if err != nil {
		return fmt.Errorf("prepare window upsert: %w", err)
	}
	s.putWindow = st
	return nil
}

func (s *sqlStore) Close() error {
	var errs []error
	if s.putWindow != nil {
		errs = append(errs, s.putWindow.Close())
	}
	errs = append(errs, s.w.Close())
	if s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.name, err)
	}
	return nil
}

// --- runs

func (s *sqlStore) PutRun(ctx context.Context, r Run) error {
	if r.ID == "" {
		return errors.New("put run: empty id")
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now() // ListRuns orders by it; never leave it empty
	}
	var env any // NULL when absent
	if len(r.Environment) > 0 {
		env = string(r.Environment)
	}
	// ON CONFLICT ... DO UPDATE, not REPLACE: a REPLACE deletes the row first,
	// which would cascade to the run's windows.
	_, err := s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO runs
		(id, name, kind, status, reason, scenario, workflow_id, target_url, environment, incarnations, created_ns, started_ns, ended_ns, scenario_dir, fail_on, schedule, commit_sha)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		ON CONFLICT (id) DO UPDATE SET
			name = excluded.name, kind = excluded.kind, status = excluded.status, reason = excluded.reason,
			scenario = excluded.scenario, workflow_id = excluded.workflow_id, target_url = excluded.target_url,
			environment = excluded.environment, incarnations = excluded.incarnations,
			created_ns = excluded.created_ns, started_ns = excluded.started_ns, ended_ns = excluded.ended_ns,
			scenario_dir = excluded.scenario_dir, fail_on = excluded.fail_on,
			schedule = excluded.schedule, commit_sha = excluded.commit_sha`),
		r.ID, r.Name, r.Kind, string(r.Status), r.Reason, r.Scenario, r.WorkflowID, r.TargetURL, env,
		r.Incarnations, toNanos(r.CreatedAt), toNanos(r.StartedAt), toNanos(r.EndedAt), r.ScenarioDir, r.FailOn,
		r.Schedule, r.Commit)
	if err != nil {
		return fmt.Errorf("put run %s: %w", r.ID, err)
	}
	return nil
}

const runColumns = `id, name, kind, status, reason, scenario, workflow_id, target_url, environment, incarnations, created_ns, started_ns, ended_ns, scenario_dir, fail_on, schedule, commit_sha`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var (
		r                       Run
		status                  string
		env                     sql.NullString
		created, started, ended int64
	)
	err := sc.Scan(&r.ID, &r.Name, &r.Kind, &status, &r.Reason, &r.Scenario, &r.WorkflowID, &r.TargetURL,
		&env, &r.Incarnations, &created, &started, &ended, &r.ScenarioDir, &r.FailOn, &r.Schedule, &r.Commit)
	if err != nil {
		return r, err
	}
	r.Status = Status(status)
	if env.Valid && env.String != "" {
		r.Environment = json.RawMessage(env.String)
	}
	r.CreatedAt, r.StartedAt, r.EndedAt = fromNanos(created), fromNanos(started), fromNanos(ended)
	return r, nil
}

func (s *sqlStore) GetRun(ctx context.Context, id string) (Run, error) {
	row := s.r.QueryRowContext(ctx, s.d.rebind(`SELECT `+runColumns+` FROM runs WHERE id = $1`), id)
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("get run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// runFilter is the WHERE clause of ListRuns and CountRuns, with its
// arguments as $1..$5.
const runFilter = ` WHERE ($1 = '' OR status = $1) AND ($2 = '' OR name = $2) AND ($3 = '' OR kind = $3)
	AND ($4 = '' OR LOWER(name) LIKE $4 ESCAPE '\') AND ($5 = '' OR schedule = $5)`

func runFilterArgs(opts ListOptions) []any {
	like := ""
	if opts.NameContains != "" {
		like = "%" + likeEscaper.Replace(strings.ToLower(opts.NameContains)) + "%"
	}
	return []any{string(opts.Status), opts.Name, opts.Kind, like, opts.Schedule}
}

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

func (s *sqlStore) ListRuns(ctx context.Context, opts ListOptions) ([]Run, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + runColumns + ` FROM runs` + runFilter + ` ORDER BY created_ns DESC, id DESC LIMIT $6 OFFSET $7`
	rows, err := s.r.QueryContext(ctx, s.d.rebind(q), append(runFilterArgs(opts), limit, max(opts.Offset, 0))...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

func (s *sqlStore) CountRuns(ctx context.Context, opts ListOptions) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM runs`+runFilter), runFilterArgs(opts)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	return n, nil
}

func (s *sqlStore) Counts(ctx context.Context, ids []string) (map[string]RunCounts, error) {
	out := map[string]RunCounts{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT run_id, COUNT(*), SUM(gap) FROM windows WHERE run_id IN (`+in+`) GROUP BY run_id`), args...)
	if err != nil {
		return nil, fmt.Errorf("count windows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      string
			n, gaps int
		)
		if err := rows.Scan(&id, &n, &gaps); err != nil {
			return nil, fmt.Errorf("count windows: %w", err)
		}
		out[id] = RunCounts{Windows: n, Gaps: gaps}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count windows: %w", err)
	}
	rows.Close()
	frows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT run_id, severity, COUNT(*) FROM findings WHERE run_id IN (`+in+`) GROUP BY run_id, severity`), args...)
	if err != nil {
		return nil, fmt.Errorf("count findings: %w", err)
	}
	defer frows.Close()
	for frows.Next() {
		var (
			id, sev string
			n       int
		)
		if err := frows.Scan(&id, &sev, &n); err != nil {
			return nil, fmt.Errorf("count findings: %w", err)
		}
		c := out[id]
		if c.Findings == nil {
			c.Findings = map[analysis.Severity]int{}
		}
		c.Findings[analysis.Severity(sev)] = n
		out[id] = c
	}
	if err := frows.Err(); err != nil {
		return nil, fmt.Errorf("count findings: %w", err)
	}
	return out, nil
}

// inList returns "$1, $2, ..." for ids and the ids as arguments.
func inList(ids []string) (string, []any) {
	var b strings.Builder
	args := make([]any, len(ids))
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", i+1)
		args[i] = id
	}
	return b.String(), args
}

func (s *sqlStore) SetStatus(ctx context.Context, id string, st Status, reason string, at time.Time) error {
	return s.setStatus(ctx, "runs", "run", id, st, reason, at)
}

// setStatus sets the status of a run or a comparison (table runs or
// comparisons, what names it in errors): a first Running sets started_ns,
// an end sets ended_ns.
func (s *sqlStore) setStatus(ctx context.Context, table, what, id string, st Status, reason string, at time.Time) error {
	ns := toNanos(at)
	var (
		res sql.Result
		err error
	)
	switch {
	case st.Done():
		res, err = s.w.ExecContext(ctx, s.d.rebind(`UPDATE `+table+` SET status = $1, reason = $2, ended_ns = $3 WHERE id = $4`),
			string(st), reason, ns, id)
	case st == Running:
		res, err = s.w.ExecContext(ctx, s.d.rebind(`UPDATE `+table+` SET status = $1, reason = $2,
			started_ns = CASE WHEN started_ns = 0 THEN $3 ELSE started_ns END WHERE id = $4`),
			string(st), reason, ns, id)
	default:
		res, err = s.w.ExecContext(ctx, s.d.rebind(`UPDATE `+table+` SET status = $1, reason = $2 WHERE id = $3`),
			string(st), reason, id)
	}
	if err != nil {
		return fmt.Errorf("set status of %s %s to %s: %w", what, id, st, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("set status of %s %s to %s: %w", what, id, st, ErrNotFound)
	}
	return nil
}

// --- windows

func (s *sqlStore) PutWindow(ctx context.Context, w window.Window) error {
	if w.RunID == "" {
		return errors.New("put window: empty run id")
	}
	if w.Incarnation < 0 || w.Index < 0 {
		return fmt.Errorf("put window %s/%d/%d: negative incarnation or index", w.RunID, w.Incarnation, w.Index)
	}
	// The ops go in their own blob (encodeOps); the document leaves them
	// out, so reading a window's figures without its ops (charts) decodes a
	// few hundred bytes of JSON instead of several kilobytes.
	bare := w
	bare.Ops = nil
	doc, err := json.Marshal(bare)
	if err != nil {
		return fmt.Errorf("put window %s/%d/%d: encode: %w", w.RunID, w.Incarnation, w.Index, err)
	}
	var gap int64
	if w.Gap {
		gap = 1
	}
	p := w.Probes
	var rowsRead any
	if p.Database != nil {
		rowsRead = p.Database.RowsReadPerRequest
	}
	l := w.LatencyMs
	// One statement is one transaction: the row is written whole or not at all.
	_, err = s.putWindow.ExecContext(ctx,
		w.RunID, w.Incarnation, w.Index, toNanos(w.Start), toNanos(w.End), gap,
		w.Requests, w.OK, w.Errors.Total(), w.Dropped, w.RPS,
		l.P50, l.P90, l.P95, l.P99, l.P999, l.Max, w.VUs,
		nullable(p.CPUMicrosPerRequest), nullable(p.RSSBytes), nullable(p.HeapBytes), rowsRead,
		string(doc), nullBytes(w.Histogram), encodeOps(w.Ops))
	if err != nil {
		if isForeignKeyViolation(err) {
			return fmt.Errorf("put window %s/%d/%d: run %w (PutRun first)", w.RunID, w.Incarnation, w.Index, ErrNotFound)
		}
		// The store is named: on a full disk the error is SQLite's
		// "database or disk is full", which says nothing of where.
		return fmt.Errorf("put window %s/%d/%d in %s: %w", w.RunID, w.Incarnation, w.Index, s.name, err)
	}
	// The window is committed; its rollups are derived data. One that
	// fails to be written is merged from finer rows when read, so its
	// error must not fail the commit (and make the caller retry a
	// window that is safely stored).
	_ = s.rollUp(ctx, w.RunID, w.Index)
	return nil
}

func (s *sqlStore) Windows(ctx context.Context, runID string, q WindowQuery) ([]window.Window, error) {
	query := `SELECT start_ns, end_ns, doc, histogram, ops, op_histograms FROM windows WHERE run_id = $1 AND idx >= $2`
	args := []any{runID, q.FromIndex}
	if q.Incarnation >= 0 {
		query += ` AND incarnation = $3`
		args = append(args, q.Incarnation)
	}
	query += ` ORDER BY incarnation, idx`
	rows, err := s.r.QueryContext(ctx, s.d.rebind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
	}
	defer rows.Close()
	var ws []window.Window
	for rows.Next() {
		var (
			start, end int64
			doc        []byte
			hist, ops  []byte
			opsV1      []byte
		)
		if err := rows.Scan(&start, &end, &doc, &hist, &ops, &opsV1); err != nil {
			return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
		}
		// The ops come from the binary blob; the document's copy of them
		// is only skipped over, which is most of the decoding saved.
		w, err := decodeWindow(doc, ops, opsV1)
		if err != nil {
			return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
		}
		w.Start, w.End = fromNanos(start), fromNanos(end)
		if len(hist) > 0 {
			w.Histogram = hist
		}
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
	}
	return ws, nil
}

// windowDoc reads a window's JSON document without its ops: the Ops field
// here shadows the embedded Window.Ops, so encoding/json only scans them.
type windowDoc struct {
	window.Window
	Ops json.RawMessage `json:"ops"`
}

// decodeWindow rebuilds a window from its row: the document, and the ops
// blob (schema 2) or, for rows written under schema 1, the ops in the
// document plus the op_histograms blob.
func decodeWindow(doc, ops, opsV1 []byte) (window.Window, error) {
	if len(ops) == 0 {
		var w window.Window
		if err := json.Unmarshal(doc, &w); err != nil {
			return w, fmt.Errorf("decode window: %w", err)
		}
		var err error
		if w.Ops, err = decodeOpHistograms(opsV1, w.Ops); err != nil {
			return w, fmt.Errorf("window %d/%d: %w", w.Incarnation, w.Index, err)
		}
		return w, nil
	}
	var d windowDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return d.Window, fmt.Errorf("decode window: %w", err)
	}
	w := d.Window
	var err error
	if w.Ops, err = decodeOps(ops); err != nil {
		return w, fmt.Errorf("window %d/%d: %w", w.Incarnation, w.Index, err)
	}
	return w, nil
}

// --- findings

func (s *sqlStore) PutFindings(ctx context.Context, runID string, fs []analysis.Finding) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put findings of run %s: %w", runID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM findings WHERE run_id = $1`), runID); err != nil {
		return fmt.Errorf("put findings of run %s: %w", runID, err)
	}
	for i, f := range fs {
		ev, err := json.Marshal(f.Evidence)
		if err != nil {
			return fmt.Errorf("put findings of run %s: encode evidence: %w", runID, err)
		}
		_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO findings (run_id, seq, kind, severity, incarnation, summary, evidence)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`),
			runID, i, f.Kind, string(f.Severity), f.Incarnation, f.Summary, string(ev))
		if err != nil {
			if isForeignKeyViolation(err) {
				return fmt.Errorf("put findings of run %s: run %w", runID, ErrNotFound)
			}
			return fmt.Errorf("put findings of run %s: %w", runID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put findings of run %s: %w", runID, err)
	}
	return nil
}

func (s *sqlStore) Findings(ctx context.Context, runID string) ([]analysis.Finding, error) {
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT kind, severity, incarnation, summary, evidence
		FROM findings WHERE run_id = $1 ORDER BY seq`), runID)
	if err != nil {
		return nil, fmt.Errorf("read findings of run %s: %w", runID, err)
	}
	defer rows.Close()
	var fs []analysis.Finding
	for rows.Next() {
		var (
			f        analysis.Finding
			severity string
			ev       []byte
		)
		if err := rows.Scan(&f.Kind, &severity, &f.Incarnation, &f.Summary, &ev); err != nil {
			return nil, fmt.Errorf("read findings of run %s: %w", runID, err)
		}
		f.Severity = analysis.Severity(severity)
		if err := json.Unmarshal(ev, &f.Evidence); err != nil {
			return nil, fmt.Errorf("read findings of run %s: decode evidence: %w", runID, err)
		}
		fs = append(fs, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read findings of run %s: %w", runID, err)
	}
	return fs, nil
}

// --- thresholds

func (s *sqlStore) PutThresholds(ctx context.Context, runID string, rs []thresholds.Result) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put thresholds of run %s: %w", runID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM thresholds WHERE run_id = $1`), runID); err != nil {
		return fmt.Errorf("put thresholds of run %s: %w", runID, err)
	}
	for i, r := range rs {
		doc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("put thresholds of run %s: encode: %w", runID, err)
		}
		var ok int64
		if r.OK {
			ok = 1
		}
		_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO thresholds (run_id, seq, metric, ok, result) VALUES ($1, $2, $3, $4, $5)`),
			runID, i, r.Metric, ok, string(doc))
		if err != nil {
			if isForeignKeyViolation(err) {
				return fmt.Errorf("put thresholds of run %s: run %w", runID, ErrNotFound)
			}
			return fmt.Errorf("put thresholds of run %s: %w", runID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put thresholds of run %s: %w", runID, err)
	}
	return nil
}

func (s *sqlStore) Thresholds(ctx context.Context, runID string) ([]thresholds.Result, error) {
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT result FROM thresholds WHERE run_id = $1 ORDER BY seq`), runID)
	if err != nil {
		return nil, fmt.Errorf("read thresholds of run %s: %w", runID, err)
	}
	defer rows.Close()
	var rs []thresholds.Result
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("read thresholds of run %s: %w", runID, err)
		}
		var r thresholds.Result
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("read thresholds of run %s: decode: %w", runID, err)
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read thresholds of run %s: %w", runID, err)
	}
	return rs, nil
}

// --- notifications

// notificationTable says where n is kept: the table, its key column, the
// key, and what the key names in errors.
func notificationTable(n Notification) (table, column, key, what string, err error) {
	switch {
	case n.RunID != "" && n.ComparisonID != "":
		return "", "", "", "", fmt.Errorf("put notification: of run %s or of comparison %s, not both", n.RunID, n.ComparisonID)
	case n.ComparisonID != "":
		return "comparison_notifications", "comparison_id", n.ComparisonID, "comparison", nil
	}
	return "notifications", "run_id", n.RunID, "run", nil
}

func (s *sqlStore) PutNotification(ctx context.Context, n Notification) error {
	table, column, key, what, err := notificationTable(n)
	if err != nil {
		return err
	}
	ok := int64(0)
	if n.OK {
		ok = 1
	}
	if n.At.IsZero() {
		n.At = time.Now()
	}
	// seq is the next free one; the write connection serialises writers.
	_, err = s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO `+table+` (`+column+`, seq, url, events, ok, attempts, error, at_ns)
		SELECT $1, COALESCE(MAX(seq), -1) + 1, $2, $3, $4, $5, $6, $7 FROM `+table+` WHERE `+column+` = $1`),
		key, n.URL, strings.Join(n.Events, ","), ok, n.Attempts, n.Error, toNanos(n.At))
	if err != nil {
		if isForeignKeyViolation(err) {
			return fmt.Errorf("put notification of %s %s: %s %w", what, key, what, ErrNotFound)
		}
		return fmt.Errorf("put notification of %s %s: %w", what, key, err)
	}
	return nil
}

func (s *sqlStore) Notifications(ctx context.Context, runID string) ([]Notification, error) {
	return s.notifications(ctx, Notification{RunID: runID})
}

func (s *sqlStore) ComparisonNotifications(ctx context.Context, comparisonID string) ([]Notification, error) {
	return s.notifications(ctx, Notification{ComparisonID: comparisonID})
}

// notifications reads those of the run or comparison that key names.
func (s *sqlStore) notifications(ctx context.Context, key Notification) ([]Notification, error) {
	table, column, id, what, err := notificationTable(key)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT url, events, ok, attempts, error, at_ns FROM `+table+` WHERE `+column+` = $1 ORDER BY seq`), id)
	if err != nil {
		return nil, fmt.Errorf("read notifications of %s %s: %w", what, id, err)
	}
	defer rows.Close()
	var out []Notification
	for rows.Next() {
		n := key
		var events string
		var ok, at int64
		if err := rows.Scan(&n.URL, &events, &ok, &n.Attempts, &n.Error, &at); err != nil {
			return nil, fmt.Errorf("read notifications of %s %s: %w", what, id, err)
		}
		n.OK, n.At = ok == 1, fromNanos(at)
		if events != "" {
			n.Events = strings.Split(events, ",")
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read notifications of %s %s: %w", what, id, err)
	}
	return out, nil
}
