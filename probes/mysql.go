package probes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQLStatsReader reads a MySQL or MariaDB database's statistics into the
// shape PostgreSQL's take (PGStats), so the windows, the collapse rule and
// the reports treat every kind alike:
//
//   - rows per table: information_schema.TABLES.TABLE_ROWS. For InnoDB that
//     is the row count the engine keeps in memory as rows are inserted and
//     deleted (exact for a table only this server writes, until a restart
//     or ANALYZE replaces it with a sampled estimate) — read without touching
//     the table, so the probe adds nothing to the counters below;
//   - rows read per table: performance_schema.table_io_waits_summary_by_index_usage,
//     COUNT_FETCH of the rows with no index (INDEX_NAME IS NULL: rows read
//     by full table scans, as seq_tup_read) and of each index (as
//     idx_tup_fetch). The performance schema must be on (the local and
//     docker providers start the server with it);
//   - the server's statement and commit counters (SHOW GLOBAL STATUS:
//     Questions less the probe's own statements, Handler_commit) and
//     Handler_read_rnd_next, the rows full scans stepped through. There is
//     no transaction count: Com_commit and Com_rollback count only explicit
//     COMMIT and ROLLBACK statements, not autocommit transactions, and
//     Handler_commit counts storage-engine commits (several per
//     transaction with the binary log on), so PGStats.HasTransactions stays
//     false rather than holding a number that means something else.
//
// It is safe for concurrent use (calls are serialised) and reconnects after
// a lost connection, as PGStatsReader does.
type MySQLStatsReader struct {
	dsn string

	mu  sync.Mutex
	db  *sql.DB
	ids map[string]uint32 // table name → the key it has in PGStats.Tables
	// sent counts the statements this reader sent, which the server counts
	// in Questions too.
	sent int64
}

// NewMySQLStatsReader returns a reader for the database at rawURL: a
// mysql:// or mariadb:// URL (as the providers give it) or a Go MySQL
// driver DSN (user:password@tcp(host:port)/name). It does not connect.
func NewMySQLStatsReader(rawURL string) (*MySQLStatsReader, error) {
	dsn, err := MySQLDSN(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database probe: %w", err)
	}
	return &MySQLStatsReader{dsn: dsn, ids: map[string]uint32{}}, nil
}

// MySQLDSN turns a mysql:// or mariadb:// URL into the Go MySQL driver's DSN;
// a DSN is returned as it is (once it parses).
func MySQLDSN(raw string) (string, error) {
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "mysql" || u.Scheme == "mariadb") {
		c := mysql.NewConfig()
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
		c.Net = "tcp"
		c.Addr = u.Host
		c.DBName = strings.TrimPrefix(u.Path, "/")
		if c.DBName == "" {
			return "", fmt.Errorf("%s URL %q names no database", u.Scheme, u.Redacted())
		}
		c.Timeout = 5 * time.Second
		return c.FormatDSN(), nil
	}
	c, err := mysql.ParseDSN(raw)
	if err != nil {
		return "", fmt.Errorf("parse MySQL DSN: %w", err)
	}
	if c.DBName == "" {
		return "", errors.New("the MySQL DSN names no database")
	}
	return c.FormatDSN(), nil
}

const (
	mysqlTablesQuery = `SELECT TABLE_NAME, COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'`
	mysqlReadsQuery = `SELECT OBJECT_NAME, INDEX_NAME IS NULL, SUM(COUNT_FETCH)
FROM performance_schema.table_io_waits_summary_by_index_usage
WHERE OBJECT_SCHEMA = DATABASE() GROUP BY OBJECT_NAME, INDEX_NAME IS NULL`
	mysqlStatusQuery = `SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Handler_commit', 'Handler_read_rnd_next')`
)

// Read takes one reading: three statements on one connection.
func (r *MySQLStatsReader) Read(ctx context.Context) (PGStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		db, err := sql.Open("mysql", r.dsn)
		if err != nil {
			return PGStats{}, fmt.Errorf("database probe: %w", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		r.db = db
	}
	st, err := r.read(ctx)
	if err != nil {
		return PGStats{}, fmt.Errorf("database probe: %w", err)
	}
	return st, nil
}

func (r *MySQLStatsReader) read(ctx context.Context) (PGStats, error) {
	st := PGStats{Tables: map[uint32]PGTable{}}
	byName := map[string]PGTable{}
	r.sent++
	rows, err := r.db.QueryContext(ctx, mysqlTablesQuery)
	if err != nil {
		return st, fmt.Errorf("read information_schema.TABLES: %w", err)
	}
	for rows.Next() {
		var t PGTable
		if err := rows.Scan(&t.Name, &t.LiveRows); err != nil {
			rows.Close()
			return st, fmt.Errorf("read information_schema.TABLES: %w", err)
		}
		byName[t.Name] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("read information_schema.TABLES: %w", err)
	}

	r.sent++
	rows, err = r.db.QueryContext(ctx, mysqlReadsQuery)
	if err != nil {
		return st, fmt.Errorf("read performance_schema (is it on? start the server with --performance-schema=ON): %w", err)
	}
	for rows.Next() {
		var name string
		var fullScan bool
		var fetched sql.NullInt64
		if err := rows.Scan(&name, &fullScan, &fetched); err != nil {
			rows.Close()
			return st, fmt.Errorf("read performance_schema: %w", err)
		}
		t, ok := byName[name]
		if !ok {
			continue // a view, or a table dropped since the first query
		}
		if fullScan {
			t.SeqTuplesRead += fetched.Int64
		} else {
			t.IndexTuplesFetched += fetched.Int64
		}
		byName[name] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("read performance_schema: %w", err)
	}

	r.sent++
	rows, err = r.db.QueryContext(ctx, mysqlStatusQuery)
	if err != nil {
		return st, fmt.Errorf("read global status: %w", err)
	}
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			rows.Close()
			return st, fmt.Errorf("read global status: %w", err)
		}
		switch strings.ToLower(name) {
		case "questions":
			// Questions counts this reader's statements too, including the
			// SHOW STATUS that reads it.
			st.Statements = v - r.sent
		case "handler_commit":
			st.Commits = v
		case "handler_read_rnd_next":
			st.TuplesReturned = v
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("read global status: %w", err)
	}
	for name, t := range byName {
		id, ok := r.ids[name]
		if !ok {
			id = uint32(len(r.ids) + 1)
			r.ids[name] = id
		}
		st.Tables[id] = t
	}
	return st, nil
}

// Close closes the connection.
func (r *MySQLStatsReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db == nil {
		return nil
	}
	err := r.db.Close()
	r.db = nil
	return err
}
