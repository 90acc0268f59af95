package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlStore keeps the API's data in MySQL or MariaDB (InnoDB). Neither
// MySQL 8.4 nor MariaDB's UPDATE has RETURNING, so writes read their row
// back by id in the same transaction (a primary-key lookup). The payload is
// kept as text, byte for byte: MySQL's JSON type would reformat it.
type mysqlStore struct {
	db *sql.DB
}

var _ store = (*mysqlStore)(nil)

func (s *mysqlStore) sleep(ctx context.Context, d time.Duration) error {
	_, err := s.db.ExecContext(ctx, `SELECT SLEEP(?)`, d.Seconds())
	return err
}

var mysqlSchema = []string{`
CREATE TABLE IF NOT EXISTS users (
	id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	username      VARCHAR(255) NOT NULL UNIQUE,
	password_hash VARBINARY(255) NOT NULL,
	created_at    DATETIME(6) NOT NULL
) ENGINE=InnoDB`, `
CREATE TABLE IF NOT EXISTS sessions (
	token      VARCHAR(255) NOT NULL PRIMARY KEY,
	user_id    BIGINT NOT NULL,
	created_at DATETIME(6) NOT NULL,
	FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB`, `
CREATE TABLE IF NOT EXISTS items (
	id         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	bucket     BIGINT NOT NULL,
	title      TEXT NOT NULL,
	owner      BIGINT NOT NULL,
	payload    LONGTEXT NOT NULL,
	created_at DATETIME(6) NOT NULL,
	updated_at DATETIME(6) NOT NULL,
	FOREIGN KEY (owner) REFERENCES users (id)
) ENGINE=InnoDB`,
}

// isMySQLURL reports whether DATABASE_URL names a MySQL-protocol server:
// mysql:// or mariadb:// (as longhaul's providers give it), or the Go
// driver's user:password@tcp(host:port)/name form.
func isMySQLURL(s string) bool {
	return strings.HasPrefix(s, "mysql://") || strings.HasPrefix(s, "mariadb://") || strings.Contains(s, "@tcp(")
}

// mysqlDriverDSN turns a mysql:// or mariadb:// URL into the driver's DSN.
func mysqlDriverDSN(raw string) (string, error) {
	var c *mysql.Config
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", err
		}
		c = mysql.NewConfig()
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
		c.Net = "tcp"
		c.Addr = u.Host
		c.DBName = strings.TrimPrefix(u.Path, "/")
	} else {
		var err error
		if c, err = mysql.ParseDSN(raw); err != nil {
			return "", err
		}
	}
	c.ParseTime = true
	c.Loc = time.UTC
	// RowsAffected counts the rows an UPDATE matched, not only those it
	// changed: updateItem tells "no such item" by it.
	c.ClientFoundRows = true
	return c.FormatDSN(), nil
}

// openMySQL connects to databaseURL and creates the schema; indexBucket
// decides whether the list indexes exist (see listIndexes).
func openMySQL(ctx context.Context, databaseURL string, indexBucket bool, log *slog.Logger) (*mysqlStore, error) {
	dsn, err := mysqlDriverDSN(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to MySQL: %w", err)
	}
	db.SetMaxOpenConns(defaultPoolConns)
	db.SetMaxIdleConns(defaultPoolConns)
	s := &mysqlStore{db: db}
	if err := s.migrate(ctx, indexBucket); err != nil {
		db.Close()
		return nil, fmt.Errorf("create MySQL schema: %w", err)
	}
	log.Info("schema ready", "store", "mysql", "list_indexes", indexBucket)
	return s, nil
}

func (s *mysqlStore) migrate(ctx context.Context, indexBucket bool) error {
	// Replicas of the target may start together against one database: a
	// named lock serialises their schema changes.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT GET_LOCK('demo-target-schema', 30)`); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT RELEASE_LOCK('demo-target-schema')`)
	for _, q := range mysqlSchema {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	for _, ix := range listIndexes {
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'items' AND INDEX_NAME = ?`, ix.name).Scan(&n); err != nil {
			return err
		}
		// MySQL has no CREATE/DROP INDEX IF [NOT] EXISTS (MariaDB does).
		var q string
		switch {
		case indexBucket && n == 0:
			q = `CREATE INDEX ` + ix.name + ` ON ` + ix.columns
		case !indexBucket && n > 0:
			q = `DROP INDEX ` + ix.name + ` ON items`
		}
		if q == "" {
			continue
		}
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (s *mysqlStore) close() { s.db.Close() }

func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062 // ER_DUP_ENTRY
}

func (s *mysqlStore) createUser(ctx context.Context, username string, hash []byte, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO users (username, password_hash, created_at) VALUES (?, ?, ?)`, username, hash, now)
	if isDuplicate(err) {
		return 0, errTaken
	}
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func (s *mysqlStore) userByName(ctx context.Context, username string) (int64, []byte, error) {
	var id int64
	var hash []byte
	err := s.db.QueryRowContext(ctx, `SELECT id, password_hash FROM users WHERE username = ?`, username).Scan(&id, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, errNotFound
	}
	return id, hash, err
}

func (s *mysqlStore) createSession(ctx context.Context, token string, userID int64, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO sessions (token, user_id, created_at) VALUES (?, ?, ?)`, token, userID, now)
	return err
}

func (s *mysqlStore) sessionUser(ctx context.Context, token string) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `SELECT user_id FROM sessions WHERE token = ?`, token).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errNotFound
	}
	return id, err
}

const mysqlItemByID = `SELECT id, bucket, title, owner, payload, created_at, updated_at FROM items WHERE id = ?`

func scanMySQLItem(row sqlRow, it *item) error {
	var payload string
	if err := row.Scan(&it.ID, &it.Bucket, &it.Title, &it.Owner, &payload, &it.CreatedAt, &it.UpdatedAt); err != nil {
		return err
	}
	it.Payload = []byte(payload)
	return nil
}

func (s *mysqlStore) createItem(ctx context.Context, owner int64, in newItem, now time.Time) (item, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?)`, in.Bucket, in.Title, owner, string(in.Payload), now, now)
	if err != nil {
		return item{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return item{}, err
	}
	// The row as written, without a read back: the store returns what it stored.
	return item{ID: id, Bucket: in.Bucket, Title: in.Title, Owner: owner, Payload: in.Payload, CreatedAt: now, UpdatedAt: now}, nil
}

func (s *mysqlStore) createItems(ctx context.Context, owner int64, in []newItem, now time.Time) ([]int64, error) {
	if len(in) == 0 {
		return nil, nil
	}
	// One multi-row INSERT: InnoDB gives consecutive ids to its rows
	// (innodb_autoinc_lock_mode 1 or 2 with a simple insert), the first being
	// LastInsertId.
	var b strings.Builder
	b.WriteString(`INSERT INTO items (bucket, title, owner, payload, created_at, updated_at) VALUES `)
	args := make([]any, 0, 6*len(in))
	for i, n := range in {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?)")
		args = append(args, n.Bucket, n.Title, owner, string(n.Payload), now, now)
	}
	res, err := s.db.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return nil, err
	}
	first, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(in))
	for i := range ids {
		ids[i] = first + int64(i)
	}
	return ids, nil
}

func (s *mysqlStore) getItem(ctx context.Context, id int64) (item, error) {
	var it item
	err := scanMySQLItem(s.db.QueryRowContext(ctx, mysqlItemByID, id), &it)
	if errors.Is(err, sql.ErrNoRows) {
		return it, errNotFound
	}
	return it, err
}

func (s *mysqlStore) updateItem(ctx context.Context, id int64, p itemPatch, now time.Time) (item, error) {
	var it item
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return it, err
	}
	defer tx.Rollback()
	var payload any
	if p.Payload != nil {
		payload = string(p.Payload)
	}
	res, err := tx.ExecContext(ctx, `UPDATE items SET title = COALESCE(?, title), payload = COALESCE(?, payload), updated_at = ? WHERE id = ?`,
		p.Title, payload, now, id)
	if err != nil {
		return it, err
	}
	// The DSN sets clientFoundRows: 0 rows affected means no such item.
	if n, err := res.RowsAffected(); err != nil {
		return it, err
	} else if n == 0 {
		return it, errNotFound
	}
	if err := scanMySQLItem(tx.QueryRowContext(ctx, mysqlItemByID, id), &it); err != nil {
		return it, err
	}
	return it, tx.Commit()
}

func (s *mysqlStore) deleteItem(ctx context.Context, id int64) error {
	return affectedOne(s.db.ExecContext(ctx, `DELETE FROM items WHERE id = ?`, id))
}

// The list queries with MySQL's ? placeholders.
var (
	mysqlListByBucket = strings.Replace(strings.Replace(listByBucketSQL, "$1", "?", 1), "$2", "?", 1)
	mysqlListAll      = strings.Replace(listAllSQL, "$1", "?", 1)
)

func (s *mysqlStore) listItems(ctx context.Context, bucket int64, hasBucket bool, limit int, dst []item) ([]item, error) {
	var rows *sql.Rows
	var err error
	if hasBucket {
		rows, err = s.db.QueryContext(ctx, mysqlListByBucket, bucket, limit)
	} else {
		rows, err = s.db.QueryContext(ctx, mysqlListAll, limit)
	}
	return scanItems(rows, err, scanMySQLItem, dst)
}
