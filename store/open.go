package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteBusyTimeoutMs is how long a SQLite connection waits for another
// process's write lock before failing with "database is locked".
const SQLiteBusyTimeoutMs = 10_000

// IsPostgres reports whether dsn names a PostgreSQL database
// (postgres:// or postgresql://); anything else is a SQLite file path.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens the store named by dsn and migrates its schema to the current
// version. A postgres:// or postgresql:// URL opens PostgreSQL; anything else
// is a SQLite file path, whose parent directory is created if needed. Two
// processes may open the same store at once: migrations are serialised and
// applied exactly once. The caller must Close the store.
func Open(ctx context.Context, dsn string) (Store, error) {
	if dsn == "" {
		return nil, errors.New("open store: empty DSN")
	}
	var (
		s   *sqlStore
		err error
	)
	for attempt := 0; ; attempt++ {
		if IsPostgres(dsn) {
			s, err = openPostgres(dsn)
		} else {
			s, err = openSQLite(dsn)
		}
		if err != nil {
			return nil, err
		}
		err = s.migrate(ctx)
		if err == nil {
			break
		}
		s.Close()
		// A new SQLite file opened by several processes at once: the first
		// connection's switch to WAL takes an exclusive lock that SQLite may
		// answer with "database is locked" at once, without waiting out the
		// busy timeout (seen with 4 openers of a new file). Opening again
		// finds the file in WAL mode.
		if !isBusy(err) || attempt >= 5 || ctx.Err() != nil {
			return nil, fmt.Errorf("open store %s: %w", s.name, err)
		}
		time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
	}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", s.name, err)
	}
	return s, nil
}

func openSQLite(path string) (*sqlStore, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("open store: SQLite path %q must not contain '?' or '#'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open store: create directory for %s: %w", path, err)
		}
	}
	params := url.Values{}
	params.Set("_busy_timeout", fmt.Sprint(SQLiteBusyTimeoutMs))
	params.Set("_journal_mode", "WAL")
	params.Set("_foreign_keys", "1")
	// FULL: a committed window survives a power cut too; at one commit per
	// window the fsync is free.
	params.Set("_synchronous", "FULL")
	// IMMEDIATE takes the write lock at BEGIN, so two processes never
	// deadlock upgrading a read lock (the busy timeout then applies).
	params.Set("_txlock", "immediate")
	writer, err := sql.Open("sqlite", path+"?"+params.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// SQLite has one writer at a time anyway; one connection avoids
	// in-process lock contention entirely.
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)

	rp := url.Values{}
	rp.Set("_busy_timeout", fmt.Sprint(SQLiteBusyTimeoutMs))
	rp.Set("_foreign_keys", "1")
	rp.Set("_query_only", "1")
	reader, err := sql.Open("sqlite", path+"?"+rp.Encode())
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	reader.SetMaxOpenConns(4)
	reader.SetMaxIdleConns(4)
	return &sqlStore{name: path, d: sqliteDialect, w: writer, r: reader}, nil
}

func openPostgres(dsn string) (*sqlStore, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", redact(dsn), err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(4)
	return &sqlStore{name: redact(dsn), d: postgresDialect, w: db, r: db}, nil
}

// redact removes a password from a DSN so it can appear in errors and logs.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable DSN)"
	}
	return u.Redacted()
}

// isBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY
// or one of its extended codes).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// isForeignKeyViolation reports whether err is a foreign-key failure of
// either backend (a window or finding for a run that does not exist).
func isForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23503"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	return false
}
