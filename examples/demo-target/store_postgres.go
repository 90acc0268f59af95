package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultPoolConns is the pool size when DATABASE_URL sets no pool_max_conns:
// pgxpool's default (max(4, CPUs)) would queue a 16-VU closed loop behind 4
// connections and make the pool, not the database, shape the results.
const defaultPoolConns = 16

// pgStore keeps the API's data in PostgreSQL. pgx prepares each statement once
// per connection and caches it (QueryExecModeCacheStatement, the default), so
// every query below runs as a prepared statement.
type pgStore struct {
	pool *pgxpool.Pool
}

var _ store = (*pgStore)(nil)

func (s *pgStore) sleep(ctx context.Context, d time.Duration) error {
	_, err := s.pool.Exec(ctx, `SELECT pg_sleep($1)`, d.Seconds())
	return err
}

const pgSchema = `
CREATE TABLE IF NOT EXISTS users (
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	username      text NOT NULL UNIQUE,
	password_hash bytea NOT NULL,
	created_at    timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
	token      text PRIMARY KEY,
	user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
	created_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	bucket     bigint NOT NULL,
	title      text NOT NULL,
	owner      bigint NOT NULL REFERENCES users (id),
	payload    jsonb NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL
);`

// openPostgres connects to databaseURL and creates the schema; indexBucket
// decides whether the list indexes exist (see listIndexes).
func openPostgres(ctx context.Context, databaseURL string, indexBucket bool, log *slog.Logger) (*pgStore, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = defaultPoolConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	s := &pgStore{pool: pool}
	if err := s.migrate(ctx, indexBucket, log); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *pgStore) migrate(ctx context.Context, indexBucket bool, log *slog.Logger) error {
	// Replicas of the target may start together against one database: an
	// advisory lock serialises their CREATE ... IF NOT EXISTS.
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7428117)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, pgSchema); err != nil {
			return err
		}
		for _, ix := range listIndexes {
			q := `DROP INDEX IF EXISTS ` + ix.name
			if indexBucket {
				q = `CREATE INDEX IF NOT EXISTS ` + ix.name + ` ON ` + ix.columns
			}
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create PostgreSQL schema: %w", err)
	}
	log.Info("schema ready", "store", "postgres", "list_indexes", indexBucket)
	return nil
}

func (s *pgStore) close() { s.pool.Close() }

func (s *pgStore) createUser(ctx context.Context, username string, hash []byte, now time.Time) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO users (username, password_hash, created_at) VALUES ($1, $2, $3)
ON CONFLICT (username) DO NOTHING RETURNING id`, username, hash, now).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errTaken
	}
	return id, err
}

func (s *pgStore) userByName(ctx context.Context, username string) (int64, []byte, error) {
	var id int64
	var hash []byte
	err := s.pool.QueryRow(ctx, `SELECT id, password_hash FROM users WHERE username = $1`, username).Scan(&id, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, errNotFound
	}
	return id, hash, err
}

func (s *pgStore) createSession(ctx context.Context, token string, userID int64, now time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (token, user_id, created_at) VALUES ($1, $2, $3)`, token, userID, now)
	return err
}

func (s *pgStore) sessionUser(ctx context.Context, token string) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT user_id FROM sessions WHERE token = $1`, token).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errNotFound
	}
	return id, err
}

const pgItemColumns = `id, bucket, title, owner, payload, created_at, updated_at`

func scanItem(row pgx.Row, it *item) error {
	return row.Scan(&it.ID, &it.Bucket, &it.Title, &it.Owner, &it.Payload, &it.CreatedAt, &it.UpdatedAt)
}

func (s *pgStore) createItem(ctx context.Context, owner int64, in newItem, now time.Time) (item, error) {
	var it item
	err := scanItem(s.pool.QueryRow(ctx, `INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $5) RETURNING `+pgItemColumns, in.Bucket, in.Title, owner, in.Payload, now), &it)
	return it, err
}

func (s *pgStore) createItems(ctx context.Context, owner int64, in []newItem, now time.Time) ([]int64, error) {
	ids := make([]int64, len(in))
	// One transaction, one round trip: the inserts are pipelined as a batch.
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, n := range in {
			b.Queue(`INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $5) RETURNING id`, n.Bucket, n.Title, owner, n.Payload, now)
		}
		br := tx.SendBatch(ctx, &b)
		for i := range ids {
			if err := br.QueryRow().Scan(&ids[i]); err != nil {
				br.Close()
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

func (s *pgStore) getItem(ctx context.Context, id int64) (item, error) {
	var it item
	err := scanItem(s.pool.QueryRow(ctx, `SELECT `+pgItemColumns+` FROM items WHERE id = $1`, id), &it)
	if errors.Is(err, pgx.ErrNoRows) {
		return it, errNotFound
	}
	return it, err
}

func (s *pgStore) updateItem(ctx context.Context, id int64, p itemPatch, now time.Time) (item, error) {
	var it item
	err := scanItem(s.pool.QueryRow(ctx, `UPDATE items SET title = COALESCE($2, title), payload = COALESCE($3::jsonb, payload),
updated_at = $4 WHERE id = $1 RETURNING `+pgItemColumns, id, p.Title, p.Payload, now), &it)
	if errors.Is(err, pgx.ErrNoRows) {
		return it, errNotFound
	}
	return it, err
}

func (s *pgStore) deleteItem(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM items WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errNotFound
	}
	return nil
}

func (s *pgStore) listItems(ctx context.Context, bucket int64, hasBucket bool, limit int, dst []item) ([]item, error) {
	var rows pgx.Rows
	var err error
	if hasBucket {
		rows, err = s.pool.Query(ctx, listByBucketSQL, bucket, limit)
	} else {
		rows, err = s.pool.Query(ctx, listAllSQL, limit)
	}
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	for rows.Next() {
		var it item
		if err := scanItem(rows, &it); err != nil {
			return dst, err
		}
		dst = append(dst, it)
	}
	return dst, rows.Err()
}
