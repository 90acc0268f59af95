package probes

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/window"
)

// PGStats is one reading of PostgreSQL's cumulative statistics for the
// connected database: counters since the statistics were last reset. The
// other databases' readers (MySQLStatsReader) fill the
// same shape, each field's doc saying what it holds there.
type PGStats struct {
	TuplesReturned int64 // pg_stat_database.tup_returned; MySQL: Handler_read_rnd_next
	Commits        int64 // pg_stat_database.xact_commit; MySQL: Handler_commit
	// Statements the clients sent, less the probe's own (MySQL: Questions);
	// 0 where not counted.
	Statements int64
	// Transactions committed or rolled back, less the probe's own
	// (pg_stat_database.xact_commit + xact_rollback); HasTransactions is
	// false where not counted (MySQL: see MySQLStatsReader).
	Transactions    int64
	HasTransactions bool
	// HasStatements says Statements and StatementCounts were read from
	// pg_stat_statements (the target's statements in the connected
	// database, keyed by query id); StatementsUnavailable says why not,
	// when the reader found it absent. MySQL: neither (Statements is
	// Questions).
	HasStatements         bool
	StatementsUnavailable string
	StatementCounts       map[int64]PGStatement
	Tables                map[uint32]PGTable
}

// PGTable is one pg_stat_user_tables row. Name is relname, qualified with
// its schema unless the schema is public.
type PGTable struct {
	Name               string
	LiveRows           int64 // n_live_tup (an estimate, not a counter)
	SeqScans           int64
	SeqTuplesRead      int64
	IndexScans         int64 // 0 for a table without indexes
	IndexTuplesFetched int64
}

// PGStatsReader reads pg_stat_database and pg_stat_user_tables over one
// connection, opened on first use and reopened after it breaks, and the
// target's statements from pg_stat_statements when the database has it
// (looked for on each new connection). It is safe for concurrent use
// (calls are serialised).
//
// Its own queries count in pg_stat_database (one transaction and the
// catalog rows it reads, per reading) but not in pg_stat_user_tables. It
// takes its own transactions out of PGStats.Transactions: a reading sees
// those of the readings before it. A backend publishes its statistics when
// it goes idle, at most once a second (else ten seconds later, or with its
// next transaction), so one of them can land a window late: right after
// the connection opens, or with windows under a second. The total over a
// run is exact.
type PGStatsReader struct {
	dsn string

	mu       sync.Mutex
	conn     *pgx.Conn
	connects int   // connections opened, for tests
	xacts    int64 // transactions this reader ran (each reading is one, committed or not)
	stmts    statementsSource
}

// NewPGStatsReader returns a reader for the database at dsn (a PostgreSQL
// URL or key=value string). It does not connect.
func NewPGStatsReader(dsn string) (*PGStatsReader, error) {
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return nil, fmt.Errorf("database probe: parse dsn: %w", err)
	}
	return &PGStatsReader{dsn: dsn}, nil
}

// The reader's queries begin with probeMarker, which keeps them out of the
// target's statements.
const (
	pgTablesQuery = probeMarker + `SELECT relid::int8, schemaname::text, relname::text, n_live_tup, seq_scan, seq_tup_read,
	coalesce(idx_scan, 0), coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables`
	pgDatabaseQuery = probeMarker + `SELECT tup_returned, xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()`
)

// Read takes one reading, in one round trip. pg_stat_clear_snapshot() comes
// first, so statistics cached by stats_fetch_consistency are never reused.
func (r *PGStatsReader) Read(ctx context.Context) (PGStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A connection that was open before this call may have been closed by
	// the server since (a restart, pg_terminate_backend): then reconnect and
	// try once more, so one dropped connection does not cost a window.
	for attempt := 0; ; attempt++ {
		reused := r.conn != nil && !r.conn.IsClosed()
		if !reused {
			cfg, err := pgx.ParseConfig(r.dsn)
			if err != nil {
				return PGStats{}, fmt.Errorf("database probe: parse dsn: %w", err)
			}
			cfg.RuntimeParams["application_name"] = ApplicationName
			// One simple-protocol query string per reading: one implicit
			// transaction, and no statement preparation (which is a
			// transaction of its own on a new connection) to count.
			cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				return PGStats{}, fmt.Errorf("database probe: connect: %w", err)
			}
			r.conn = conn
			r.connects++
			r.stmts = statementsSource{} // looked for again: the server may have restarted with other settings
		}
		st, err := r.read(ctx)
		if err == nil && !reused {
			err = r.checkStatements(ctx, &st)
		}
		if err == nil {
			return st, nil
		}
		// The connection may be mid-protocol after a failed read: start afresh.
		closeCtx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		r.conn.Close(closeCtx)
		cancel()
		r.conn = nil
		if !reused || attempt > 0 || ctx.Err() != nil {
			return PGStats{}, fmt.Errorf("database probe: %w", err)
		}
	}
}

// ApplicationName is the application_name of the probe's connection.
const ApplicationName = "longhaul-probes"

func (r *PGStatsReader) read(ctx context.Context) (PGStats, error) {
	var b pgx.Batch
	b.Queue(probeMarker + `SELECT pg_stat_clear_snapshot()`)
	b.Queue(pgTablesQuery)
	b.Queue(pgDatabaseQuery)
	if r.stmts.view != "" {
		b.Queue(statementsQuery(r.stmts.view))
	}
	br := r.conn.SendBatch(ctx, &b)
	defer br.Close()
	own := r.xacts // the transactions before this one: this one is not counted yet
	// The batch is one implicit transaction, counted (committed or rolled
	// back) once it reached the server; a batch that never did makes the
	// count one too high, which only moves one transaction between windows.
	r.xacts++
	if _, err := br.Exec(); err != nil {
		return PGStats{}, fmt.Errorf("pg_stat_clear_snapshot: %w", err)
	}
	st := PGStats{Tables: map[uint32]PGTable{}}
	rows, err := br.Query()
	if err != nil {
		return PGStats{}, fmt.Errorf("read pg_stat_user_tables: %w", err)
	}
	for rows.Next() {
		var relid int64
		var schema string
		var t PGTable
		if err := rows.Scan(&relid, &schema, &t.Name, &t.LiveRows, &t.SeqScans, &t.SeqTuplesRead, &t.IndexScans, &t.IndexTuplesFetched); err != nil {
			rows.Close()
			return PGStats{}, fmt.Errorf("read pg_stat_user_tables: %w", err)
		}
		if schema != "public" {
			t.Name = schema + "." + t.Name
		}
		st.Tables[uint32(relid)] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return PGStats{}, fmt.Errorf("read pg_stat_user_tables: %w", err)
	}
	var rollbacks int64
	if err := br.QueryRow().Scan(&st.TuplesReturned, &st.Commits, &rollbacks); err != nil {
		return PGStats{}, fmt.Errorf("read pg_stat_database: %w", err)
	}
	st.Transactions, st.HasTransactions = st.Commits+rollbacks-own, true
	if r.stmts.view == "" {
		st.StatementsUnavailable = r.stmts.unavailable
		return st, nil
	}
	rows, err = br.Query()
	if err == nil {
		err = scanStatements(rows, &st)
	}
	if err != nil {
		return PGStats{}, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	return st, nil
}

// Close closes the connection.
func (r *PGStatsReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn == nil {
		return nil
	}
	err := r.conn.Close(context.Background())
	r.conn = nil
	return err
}

// MaxTables bounds the tables listed in one window's reading: the busiest
// (most rows read in the window, then most live rows). The window's totals
// count every table.
const MaxTables = 50

// DatabaseDelta turns two readings into one window's figures: counter
// deltas (a counter that went down was reset, so its delta is its new
// value), live rows at cur, and rows read per request, where rows read are
// seq_tup_read + idx_tup_fetch, and transactions per request where both
// readings count transactions. With requests ≤ 0 the per-request figures
// are 0 (nil for transactions). Tables are sorted by name. Statements come
// from pg_stat_statements where both readings had it (statementsDelta);
// else a reading that found it unavailable says why.
func DatabaseDelta(prev, cur PGStats, requests int64) *window.Database {
	d := &window.Database{
		TuplesReturned: counterDelta(prev.TuplesReturned, cur.TuplesReturned),
		Commits:        counterDelta(prev.Commits, cur.Commits),
		Statements:     counterDelta(prev.Statements, cur.Statements),
		Tables:         make([]window.Table, 0, len(cur.Tables)),
	}
	var rowsRead int64
	for relid, c := range cur.Tables {
		p := prev.Tables[relid] // a new table counts from zero
		t := window.Table{
			Name:               c.Name,
			LiveRows:           c.LiveRows,
			SeqScans:           counterDelta(p.SeqScans, c.SeqScans),
			SeqTuplesRead:      counterDelta(p.SeqTuplesRead, c.SeqTuplesRead),
			IndexScans:         counterDelta(p.IndexScans, c.IndexScans),
			IndexTuplesFetched: counterDelta(p.IndexTuplesFetched, c.IndexTuplesFetched),
		}
		read := t.SeqTuplesRead + t.IndexTuplesFetched
		rowsRead += read
		if requests > 0 {
			t.RowsReadPerRequest = float64(read) / float64(requests)
		}
		d.Tables = append(d.Tables, t)
	}
	if prev.HasTransactions && cur.HasTransactions {
		x := cur.Transactions - prev.Transactions
		if cur.Commits < prev.Commits { // the statistics were reset
			x = cur.Transactions
		}
		// Below zero only when the probe's previous transaction is not
		// published yet: it will count in the next window.
		x = max(x, 0)
		d.Transactions = &x
		if requests > 0 {
			v := float64(x) / float64(requests)
			d.XactPerRequest = &v
		}
	}
	if requests > 0 {
		d.RowsReadPerRequest = float64(rowsRead) / float64(requests)
		d.StatementsPerRequest = float64(d.Statements) / float64(requests)
	}
	switch {
	case prev.HasStatements && cur.HasStatements:
		statementsDelta(d, prev, cur, requests)
	case cur.HasStatements:
		// The first reading since pg_stat_statements appeared: no delta
		// yet; nothing is missing either.
		d.Statements, d.StatementsPerRequest = 0, 0
	default:
		d.StatementsUnavailable = cur.StatementsUnavailable
	}
	if len(d.Tables) > MaxTables {
		slices.SortFunc(d.Tables, func(a, b window.Table) int {
			if c := cmp.Compare(b.SeqTuplesRead+b.IndexTuplesFetched, a.SeqTuplesRead+a.IndexTuplesFetched); c != 0 {
				return c
			}
			return cmp.Compare(b.LiveRows, a.LiveRows)
		})
		d.Tables = d.Tables[:MaxTables]
	}
	slices.SortFunc(d.Tables, func(a, b window.Table) int { return cmp.Compare(a.Name, b.Name) })
	return d
}

func counterDelta(prev, cur int64) int64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}
