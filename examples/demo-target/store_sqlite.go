package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteStore keeps the API's data in an embedded SQLite file in WAL mode.
// SQLite has one writer at a time, so writes go through a one-connection pool
// (they queue in Go instead of spinning on SQLITE_BUSY) and reads through a
// read-only pool that WAL lets run beside the writer. Every statement is
// prepared once at start.
type sqliteStore struct {
	w, r  *sql.DB
	stmts struct {
		createUser, userByName, createSession, sessionUser        *sql.Stmt
		createItem, insertItemID, getItem, updateItem, deleteItem *sql.Stmt
		listByBucket, listAll                                     *sql.Stmt
	}
}

var _ store = (*sqliteStore)(nil)

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS users (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	username      TEXT NOT NULL UNIQUE,
	password_hash BLOB NOT NULL,
	created_at    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
	token      TEXT PRIMARY KEY,
	user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS items (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	bucket     INTEGER NOT NULL,
	title      TEXT NOT NULL,
	owner      INTEGER NOT NULL REFERENCES users (id),
	payload    TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);`

// sqliteDSN is the modernc.org/sqlite connection string for path; readOnly
// connections refuse writes (query_only) so a bug cannot bypass the writer pool.
func sqliteDSN(path string, readOnly bool) string {
	q := url.Values{}
	// busy_timeout first: the pragmas run in this order on every new
	// connection, and the switch to WAL of a new file needs an exclusive lock,
	// so without a timeout in force it fails at once ("database is locked")
	// when a reader — longhaul's SQLite probe — holds the file for a moment.
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

// openSQLite opens (creating if needed) the database file at path and creates
// the schema; indexBucket decides whether the list indexes exist.
func openSQLite(ctx context.Context, path string, indexBucket bool, log *slog.Logger) (*sqliteStore, error) {
	w, err := sql.Open("sqlite", sqliteDSN(path, false))
	if err != nil {
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	s := &sqliteStore{w: w}
	if err := s.migrate(ctx, indexBucket); err != nil {
		w.Close()
		return nil, fmt.Errorf("create SQLite schema in %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", sqliteDSN(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	readers := 2 * runtime.GOMAXPROCS(0)
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	if err := s.prepare(ctx); err != nil {
		s.close()
		return nil, fmt.Errorf("prepare SQLite statements: %w", err)
	}
	log.Info("schema ready", "store", "sqlite", "path", path, "list_indexes", indexBucket)
	return s, nil
}

func (s *sqliteStore) migrate(ctx context.Context, indexBucket bool) error {
	if _, err := s.w.ExecContext(ctx, sqliteSchema); err != nil {
		return err
	}
	for _, ix := range listIndexes {
		q := `DROP INDEX IF EXISTS ` + ix.name
		if indexBucket {
			q = `CREATE INDEX IF NOT EXISTS ` + ix.name + ` ON ` + ix.columns
		}
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

const sqliteItemColumns = `id, bucket, title, owner, payload, created_at, updated_at`

func (s *sqliteStore) prepare(ctx context.Context) error {
	for _, p := range []struct {
		dst *(*sql.Stmt)
		db  *sql.DB
		sql string
	}{
		{&s.stmts.createUser, s.w, `INSERT INTO users (username, password_hash, created_at) VALUES ($1, $2, $3)
ON CONFLICT (username) DO NOTHING RETURNING id`},
		{&s.stmts.userByName, s.r, `SELECT id, password_hash FROM users WHERE username = $1`},
		{&s.stmts.createSession, s.w, `INSERT INTO sessions (token, user_id, created_at) VALUES ($1, $2, $3)`},
		{&s.stmts.sessionUser, s.r, `SELECT user_id FROM sessions WHERE token = $1`},
		{&s.stmts.createItem, s.w, `INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $5) RETURNING ` + sqliteItemColumns},
		{&s.stmts.insertItemID, s.w, `INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $5) RETURNING id`},
		{&s.stmts.getItem, s.r, `SELECT ` + sqliteItemColumns + ` FROM items WHERE id = $1`},
		{&s.stmts.updateItem, s.w, `UPDATE items SET title = COALESCE($2, title), payload = COALESCE($3, payload),
updated_at = $4 WHERE id = $1 RETURNING ` + sqliteItemColumns},
		{&s.stmts.deleteItem, s.w, `DELETE FROM items WHERE id = $1`},
		{&s.stmts.listByBucket, s.r, listByBucketSQL},
		{&s.stmts.listAll, s.r, listAllSQL},
	} {
		st, err := p.db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("%s: %w", p.sql, err)
		}
		*p.dst = st
	}
	return nil
}

func (s *sqliteStore) close() {
	if s.r != nil {
		s.r.Close()
	}
	s.w.Close()
}

// SQLite stores times as integer microseconds since the epoch (PostgreSQL's
// precision, and they sort as numbers).
func toMicros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// writeRow runs a write statement with RETURNING and scans its one row
// (sql.ErrNoRows when there is none).
//
// Subtleness ahead: it steps the statement to its end, where QueryRow
// stops after the row and resets it. SQLite commits at the reset all the
// same, but it runs its WAL hook — the auto-checkpoint — only when a
// statement steps to its end: with QueryRow no write ever checkpointed, the
// WAL grew by ~18 KB per write without end (770 MB in a 20 s soak), every
// read searched a longer log and the CPU per request doubled within 15 s.
func writeRow(ctx context.Context, st *sql.Stmt, scan func(sqlRow) error, args ...any) error {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := scan(rows); err != nil {
		return err
	}
	for rows.Next() {
	}
	return rows.Err()
}

func scanInt(dst *int64) func(sqlRow) error {
	return func(r sqlRow) error { return r.Scan(dst) }
}

func scanInto(it *item) func(sqlRow) error {
	return func(r sqlRow) error { return scanSQLiteItem(r, it) }
}

func (s *sqliteStore) createUser(ctx context.Context, username string, hash []byte, now time.Time) (int64, error) {
	var id int64
	err := writeRow(ctx, s.stmts.createUser, scanInt(&id), username, hash, toMicros(now))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errTaken
	}
	return id, err
}

func (s *sqliteStore) userByName(ctx context.Context, username string) (int64, []byte, error) {
	var id int64
	var hash []byte
	err := s.stmts.userByName.QueryRowContext(ctx, username).Scan(&id, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, errNotFound
	}
	return id, hash, err
}

func (s *sqliteStore) createSession(ctx context.Context, token string, userID int64, now time.Time) error {
	_, err := s.stmts.createSession.ExecContext(ctx, token, userID, toMicros(now))
	return err
}

func (s *sqliteStore) sessionUser(ctx context.Context, token string) (int64, error) {
	var id int64
	err := s.stmts.sessionUser.QueryRowContext(ctx, token).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errNotFound
	}
	return id, err
}

type sqlRow interface{ Scan(dst ...any) error }

func scanSQLiteItem(row sqlRow, it *item) error {
	var created, updated int64
	if err := row.Scan(&it.ID, &it.Bucket, &it.Title, &it.Owner, &it.Payload, &created, &updated); err != nil {
		return err
	}
	it.CreatedAt, it.UpdatedAt = fromMicros(created), fromMicros(updated)
	return nil
}

func (s *sqliteStore) createItem(ctx context.Context, owner int64, in newItem, now time.Time) (item, error) {
	var it item
	err := writeRow(ctx, s.stmts.createItem, scanInto(&it), in.Bucket, in.Title, owner, in.Payload, toMicros(now))
	return it, err
}

func (s *sqliteStore) createItems(ctx context.Context, owner int64, in []newItem, now time.Time) ([]int64, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	st := tx.StmtContext(ctx, s.stmts.insertItemID)
	ids := make([]int64, len(in))
	us := toMicros(now)
	for i, n := range in {
		if err := st.QueryRowContext(ctx, n.Bucket, n.Title, owner, n.Payload, us).Scan(&ids[i]); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return ids, nil
}

func (s *sqliteStore) getItem(ctx context.Context, id int64) (item, error) {
	var it item
	err := scanSQLiteItem(s.stmts.getItem.QueryRowContext(ctx, id), &it)
	if errors.Is(err, sql.ErrNoRows) {
		return it, errNotFound
	}
	return it, err
}

func (s *sqliteStore) updateItem(ctx context.Context, id int64, p itemPatch, now time.Time) (item, error) {
	var it item
	var payload any // nil keeps the stored payload
	if p.Payload != nil {
		payload = p.Payload
	}
	var title any
	if p.Title != nil {
		title = *p.Title
	}
	err := writeRow(ctx, s.stmts.updateItem, scanInto(&it), id, title, payload, toMicros(now))
	if errors.Is(err, sql.ErrNoRows) {
		return it, errNotFound
	}
	return it, err
}

func (s *sqliteStore) deleteItem(ctx context.Context, id int64) error {
	return affectedOne(s.stmts.deleteItem.ExecContext(ctx, id))
}

// affectedOne turns the result of a statement on one item by id into
// errNotFound when it touched no row.
func affectedOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return errNotFound
	}
	return nil
}

func (s *sqliteStore) listItems(ctx context.Context, bucket int64, hasBucket bool, limit int, dst []item) ([]item, error) {
	var rows *sql.Rows
	var err error
	if hasBucket {
		rows, err = s.stmts.listByBucket.QueryContext(ctx, bucket, limit)
	} else {
		rows, err = s.stmts.listAll.QueryContext(ctx, limit)
	}
	return scanItems(rows, err, scanSQLiteItem, dst)
}

// scanItems appends to dst the items of a list query's rows (and its
// error), each read by scan: the database/sql stores' (SQLite, MySQL) loop.
func scanItems(rows *sql.Rows, err error, scan func(sqlRow, *item) error, dst []item) ([]item, error) {
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	for rows.Next() {
		var it item
		if err := scan(rows, &it); err != nil {
			return dst, err
		}
		dst = append(dst, it)
	}
	return dst, rows.Err()
}
