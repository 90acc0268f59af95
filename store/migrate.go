package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// dialect holds what differs between the SQL backends.
type dialect struct {
	name string
	blob string // column type of byte strings
	// docSchedule is the expression reading "schedule" from the JSON in a
	// doc column (NULL when absent).
	docSchedule string
	// lock, run first in every migration transaction, serialises migrations
	// between processes. SQLite needs none: BEGIN IMMEDIATE already holds
	// the database's write lock.
	lock string
	// slotLock, run first in a slot claim's transaction, serialises the
	// claims of all processes (SQLite's BEGIN IMMEDIATE does it there).
	slotLock string
	// rebind turns the $1, $2 placeholders the queries are written with into
	// the backend's own.
	rebind func(string) string
}

var dollarN = regexp.MustCompile(`\$(\d+)`)

var (
	sqliteDialect = dialect{
		name:        "sqlite",
		blob:        "BLOB",
		docSchedule: `json_extract(doc, '$.schedule')`,
		rebind:      func(q string) string { return dollarN.ReplaceAllString(q, "?$1") },
	}
	postgresDialect = dialect{
		name:        "postgres",
		blob:        "BYTEA",
		docSchedule: `(doc::jsonb ->> 'schedule')`,
		lock:        "SELECT pg_advisory_xact_lock(7240712450111)", // any constant; "longhaul" in spirit
		slotLock:    "SELECT pg_advisory_xact_lock(7240712450112)",
		rebind:      func(q string) string { return q },
	}
)

// migration is one schema step. Steps are applied in order, each in its own
// transaction, and recorded in schema_migrations. Never edit a released
// step: append a new one.
type migration struct {
	version int
	name    string
	stmts   []string // {{BLOB}} is replaced by the dialect's byte-string type
}

var migrations = []migration{
	{1, "runs, windows, findings", []string{
		`CREATE TABLE runs (
			id           TEXT PRIMARY KEY,
			name         TEXT NOT NULL,
			kind         TEXT NOT NULL,
			status       TEXT NOT NULL,
			reason       TEXT NOT NULL DEFAULT '',
			scenario     TEXT NOT NULL DEFAULT '',
			workflow_id  TEXT NOT NULL DEFAULT '',
			target_url   TEXT NOT NULL DEFAULT '',
			environment  TEXT,
			incarnations BIGINT NOT NULL DEFAULT 0,
			created_ns   BIGINT NOT NULL,
			started_ns   BIGINT NOT NULL DEFAULT 0,
			ended_ns     BIGINT NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX runs_by_created ON runs (created_ns DESC, id DESC)`,
		`CREATE INDEX runs_by_name ON runs (name, created_ns DESC)`,
		// One row per window. The scalar columns serve listings and charts
		// without decoding doc (the whole window as JSON, histograms
		// excluded); histogram holds the encoded HDR snapshot.
		// op_histograms (the ops' histograms) is superseded by ops in
		// version 2 and only read for rows written before it.
		`CREATE TABLE windows (
			run_id        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			incarnation   BIGINT NOT NULL,
			idx           BIGINT NOT NULL,
			start_ns      BIGINT NOT NULL,
			end_ns        BIGINT NOT NULL,
			gap           BIGINT NOT NULL DEFAULT 0,
			requests      BIGINT NOT NULL,
			ok            BIGINT NOT NULL,
			errors        BIGINT NOT NULL,
			dropped       BIGINT NOT NULL,
			rps           DOUBLE PRECISION NOT NULL,
			p50_ms        DOUBLE PRECISION NOT NULL,
			p90_ms        DOUBLE PRECISION NOT NULL,
			p95_ms        DOUBLE PRECISION NOT NULL,
			p99_ms        DOUBLE PRECISION NOT NULL,
			p999_ms       DOUBLE PRECISION NOT NULL,
			max_ms        DOUBLE PRECISION NOT NULL,
			vus           BIGINT NOT NULL,
			cpu_us_per_request    DOUBLE PRECISION,
			rss_bytes             BIGINT,
			heap_bytes            BIGINT,
			rows_read_per_request DOUBLE PRECISION,
			doc           TEXT NOT NULL,
			histogram     {{BLOB}},
			op_histograms {{BLOB}},
			PRIMARY KEY (run_id, incarnation, idx)
		)`,
		`CREATE TABLE findings (
			run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			seq         BIGINT NOT NULL,
			kind        TEXT NOT NULL,
			severity    TEXT NOT NULL,
			incarnation BIGINT NOT NULL,
			summary     TEXT NOT NULL,
			evidence    TEXT NOT NULL,
			PRIMARY KEY (run_id, seq)
		)`,
	}},
	{2, "windows.ops: op figures and histograms in one blob", []string{
		// Reading the ops from a binary blob instead of the JSON document
		// makes Windows about twice as fast (see BenchmarkWindows1440).
		`ALTER TABLE windows ADD COLUMN ops {{BLOB}}`,
	}},
	{3, "runs.scenario_dir: the scenario file's directory", []string{
		// Workers resolve the scenario's relative paths (target.dir,
		// build.dir, a local build.repo) against it, not their own cwd.
		`ALTER TABLE runs ADD COLUMN scenario_dir TEXT NOT NULL DEFAULT ''`,
	}},
	{4, "comparisons and their rounds", []string{
		// The columns serve listings and status updates; doc holds the
		// rest (sides, settings, equivalence, verdicts) as JSON, so fields
		// added to Comparison need no migration.
		`CREATE TABLE comparisons (
			id          TEXT PRIMARY KEY,
			name        TEXT NOT NULL,
			status      TEXT NOT NULL,
			reason      TEXT NOT NULL DEFAULT '',
			scenario    TEXT NOT NULL DEFAULT '',
			workflow_id TEXT NOT NULL DEFAULT '',
			doc         TEXT NOT NULL,
			created_ns  BIGINT NOT NULL,
			started_ns  BIGINT NOT NULL DEFAULT 0,
			ended_ns    BIGINT NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX comparisons_by_created ON comparisons (created_ns DESC, id DESC)`,
		// A round's run is an ordinary run; it is not a foreign key so that
		// a round can be recorded before its run row exists.
		`CREATE TABLE comparison_rounds (
			comparison_id TEXT NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
			idx           BIGINT NOT NULL,
			pair_idx      BIGINT NOT NULL,
			side          TEXT NOT NULL,
			run_id        TEXT NOT NULL DEFAULT '',
			status        TEXT NOT NULL,
			disturbed     BIGINT NOT NULL DEFAULT 0,
			doc           TEXT NOT NULL,
			PRIMARY KEY (comparison_id, idx)
		)`,
		`CREATE INDEX comparison_rounds_by_run ON comparison_rounds (run_id)`,
	}},
	{5, "thresholds: the run's judged thresholds; runs.fail_on", []string{
		// One row per threshold, in the scenario's order; result is the
		// whole thresholds.Result as JSON (metric and ok are columns for
		// queries such as "runs that failed a p99 gate").
		`CREATE TABLE thresholds (
			run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			seq    BIGINT NOT NULL,
			metric TEXT NOT NULL,
			ok     BIGINT NOT NULL,
			result TEXT NOT NULL,
			PRIMARY KEY (run_id, seq)
		)`,
		// The --fail-on severity the run was started with, so that a later
		// report judges the gate as the run did.
		`ALTER TABLE runs ADD COLUMN fail_on TEXT NOT NULL DEFAULT ''`,
	}},
	{6, "window_rollups: pre-merged spans of windows for charts", []string{
		// A rollup of level L and bucket b merges the windows with index in
		// [b*8^L, (b+1)*8^L) exactly (window.Combine: histograms merged,
		// counts summed); PutWindow writes it when the bucket is complete,
		// so a chart of a week-long run reads ~1,000 rows, not 60,000.
		`CREATE TABLE window_rollups (
			run_id           TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			level            BIGINT NOT NULL,
			bucket           BIGINT NOT NULL,
			first_idx        BIGINT NOT NULL,
			last_idx         BIGINT NOT NULL,
			last_incarnation BIGINT NOT NULL,
			windows          BIGINT NOT NULL,
			gaps             BIGINT NOT NULL,
			start_ns         BIGINT NOT NULL,
			end_ns           BIGINT NOT NULL,
			doc              TEXT NOT NULL,
			histogram        {{BLOB}},
			ops              {{BLOB}},
			PRIMARY KEY (run_id, level, bucket)
		)`,
		// Window indexes are unique per run across incarnations; rollups
		// and range reads select by index alone.
		`CREATE INDEX windows_by_idx ON windows (run_id, idx)`,
	}},
	{7, "runs.schedule, runs.commit_sha, notifications", []string{
		// The Temporal Schedule that started the run ("" for a run started
		// by hand) and the commit its git ref resolved to when it started:
		// longhaul history reads a schedule's runs in time order.
		`ALTER TABLE runs ADD COLUMN schedule TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE runs ADD COLUMN commit_sha TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX runs_by_schedule ON runs (schedule, created_ns DESC)`,
		// One row per notification a scheduled run sent, or failed to send.
		`CREATE TABLE notifications (
			run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			seq      BIGINT NOT NULL,
			url      TEXT NOT NULL,
			events   TEXT NOT NULL,
			ok       BIGINT NOT NULL,
			attempts BIGINT NOT NULL,
			error    TEXT NOT NULL DEFAULT '',
			at_ns    BIGINT NOT NULL,
			PRIMARY KEY (run_id, seq)
		)`,
	}},
	{8, "slots: measurement slots held on worker hosts", []string{
		// One row per held slot (Slot): a soak's or a comparison's, from its
		// claim until its final status is recorded.
		`CREATE TABLE slots (
			holder      TEXT PRIMARY KEY,
			host        TEXT NOT NULL,
			workflow_id TEXT NOT NULL DEFAULT '',
			claimed_ns  BIGINT NOT NULL
		)`,
		`CREATE INDEX slots_by_host ON slots (host, claimed_ns)`,
	}},
	{9, "comparisons.schedule", []string{
		// The schedule that started the comparison was only in doc: a
		// column, so that a compare schedule's history (and
		// `comparisons --schedule`) is one indexed query. Rows written
		// before are filled from doc ({{DOC_SCHEDULE}} reads it as JSON).
		`ALTER TABLE comparisons ADD COLUMN schedule TEXT NOT NULL DEFAULT ''`,
		`UPDATE comparisons SET schedule = COALESCE({{DOC_SCHEDULE}}, '')`,
		`CREATE INDEX comparisons_by_schedule ON comparisons (schedule, created_ns DESC)`,
	}},
	{10, "comparison_notifications", []string{
		// One row per notification a scheduled comparison sent, or failed
		// to send: notifications are keyed by a run (its foreign key), and
		// a comparison is not one.
		`CREATE TABLE comparison_notifications (
			comparison_id TEXT NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
			seq           BIGINT NOT NULL,
			url           TEXT NOT NULL,
			events        TEXT NOT NULL,
			ok            BIGINT NOT NULL,
			attempts      BIGINT NOT NULL,
			error         TEXT NOT NULL DEFAULT '',
			at_ns         BIGINT NOT NULL,
			PRIMARY KEY (comparison_id, seq)
		)`,
	}},
	{11, "profiles: CPU and heap profiles of a run's target", []string{
		// One row per profile (pprof format, gzipped), taken every few
		// windows; requests lets a CPU profile be read per request.
		`CREATE TABLE profiles (
			run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			kind        TEXT NOT NULL,
			incarnation BIGINT NOT NULL,
			idx         BIGINT NOT NULL,
			start_ns    BIGINT NOT NULL,
			duration_ns BIGINT NOT NULL,
			requests    DOUBLE PRECISION NOT NULL,
			data        {{BLOB}} NOT NULL,
			PRIMARY KEY (run_id, kind, incarnation, idx)
		)`,
	}},
	{12, "logs: what a run's target and database printed", []string{
		// One row per process and incarnation: the end of its output,
		// gzipped, kept when the environment is torn down.
		`CREATE TABLE logs (
			run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			incarnation BIGINT NOT NULL,
			source      TEXT NOT NULL,
			bytes       BIGINT NOT NULL,
			truncated   BIGINT NOT NULL,
			data        {{BLOB}} NOT NULL,
			PRIMARY KEY (run_id, incarnation, source)
		)`,
	}},
	{13, "logs by window: which lines each window printed, where the output was read to", []string{
		// windows: JSON [{"index":N,"from":B,"to":E}] byte ranges of the
		// text; read_to: where the next incarnation's database output starts.
		`ALTER TABLE logs ADD COLUMN windows TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE logs ADD COLUMN read_to TEXT NOT NULL DEFAULT ''`,
	}},
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

const createMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_ns BIGINT NOT NULL
)`

// migrate brings the schema to SchemaVersion. Each step runs in its own
// transaction that first takes the migration lock and re-reads the applied
// versions, so concurrent openers apply every step exactly once.
func (s *sqlStore) migrate(ctx context.Context) error {
	if err := s.inMigrationTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, createMigrations)
		return err
	}); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range migrations {
		err := s.inMigrationTx(ctx, func(tx *sql.Tx) error {
			var newest sql.NullInt64
			if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&newest); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			if newest.Valid && int(newest.Int64) > SchemaVersion() {
				return fmt.Errorf("schema version %d is newer than this longhaul understands (%d): upgrade longhaul", newest.Int64, SchemaVersion())
			}
			var n int
			if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM schema_migrations WHERE version = $1`), m.version).Scan(&n); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			if n > 0 {
				return nil
			}
			for _, stmt := range m.stmts {
				if _, err := tx.ExecContext(ctx, strings.NewReplacer("{{BLOB}}", s.d.blob, "{{DOC_SCHEDULE}}", s.d.docSchedule).Replace(stmt)); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO schema_migrations (version, name, applied_ns) VALUES ($1, $2, $3)`),
				m.version, m.name, time.Now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to version %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func (s *sqlStore) inMigrationTx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if s.d.lock != "" {
		if _, err := tx.ExecContext(ctx, s.d.lock); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
	}
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}
