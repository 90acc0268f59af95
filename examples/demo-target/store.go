package main

import (
	"context"
	"errors"
	"time"
)

// errNotFound is returned by store lookups when no row matches.
var errNotFound = errors.New("not found")

// errTaken is returned by createUser when the username exists.
var errTaken = errors.New("username taken")

// item is one row of the items table. Payload is the raw JSON object as the
// database returns it (valid JSON, written to responses as is).
type item struct {
	ID        int64
	Bucket    int64
	Title     string
	Owner     int64
	Payload   []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// newItem is what a client sends to create an item. Payload is a compact JSON object.
type newItem struct {
	Bucket  int64
	Title   string
	Payload []byte
}

// itemPatch is a partial update: a nil field keeps the stored value.
type itemPatch struct {
	Title   *string
	Payload []byte
}

// store is the persistence the API needs. Implementations are safe for
// concurrent use; times are stored with microsecond precision (PostgreSQL's),
// so callers pass times already truncated to the microsecond.
// dbSleeper is a store that can hold one of its pooled connections busy for
// a while (DEMO_DB_SLEEP_MS): a slow query that costs waiting, not CPU.
type dbSleeper interface {
	sleep(ctx context.Context, d time.Duration) error
}

var (
	_ dbSleeper = (*pgStore)(nil)
	_ dbSleeper = (*mysqlStore)(nil)
)

type store interface {
	// createUser inserts a user and returns its id, or errTaken.
	createUser(ctx context.Context, username string, passwordHash []byte, now time.Time) (int64, error)
	// userByName returns a user's id and password hash, or errNotFound.
	userByName(ctx context.Context, username string) (id int64, passwordHash []byte, err error)
	// createSession stores a session token for a user.
	createSession(ctx context.Context, token string, userID int64, now time.Time) error
	// sessionUser returns the user id of a session token, or errNotFound.
	sessionUser(ctx context.Context, token string) (int64, error)
	// createItem inserts one item and returns the stored row.
	createItem(ctx context.Context, owner int64, in newItem, now time.Time) (item, error)
	// createItems inserts items in one transaction and returns their ids in order.
	createItems(ctx context.Context, owner int64, in []newItem, now time.Time) ([]int64, error)
	// getItem returns an item, or errNotFound.
	getItem(ctx context.Context, id int64) (item, error)
	// updateItem applies a patch and returns the updated row, or errNotFound.
	updateItem(ctx context.Context, id int64, p itemPatch, now time.Time) (item, error)
	// deleteItem removes an item, or returns errNotFound.
	deleteItem(ctx context.Context, id int64) error
	// listItems appends to dst up to limit items, newest first (created_at DESC,
	// id DESC), of one bucket when hasBucket is set, else of all buckets.
	listItems(ctx context.Context, bucket int64, hasBucket bool, limit int, dst []item) ([]item, error)
	// close releases connections.
	close()
}

// List queries, shared by both stores (PostgreSQL numbers its parameters with
// $n, and SQLite accepts the same syntax). Without the list indexes neither the
// primary key (ordered by id) nor anything else can serve "bucket = ? ORDER BY
// created_at DESC": the database must read every row of items and sort, so the
// query's cost grows with the table. That is the DEMO_INDEX_BUCKET=false switch.
const (
	listByBucketSQL = `SELECT id, bucket, title, owner, payload, created_at, updated_at FROM items
WHERE bucket = $1 ORDER BY created_at DESC, id DESC LIMIT $2`
	listAllSQL = `SELECT id, bucket, title, owner, payload, created_at, updated_at FROM items
ORDER BY created_at DESC, id DESC LIMIT $1`
)

// listIndexes are the indexes that serve the list queries, created unless
// DEMO_INDEX_BUCKET=false (and dropped then, should an earlier run have left them).
// With id as the last column a backward index scan yields exactly
// created_at DESC, id DESC: no sort step, LIMIT rows read.
var listIndexes = []struct{ name, columns string }{
	{"items_bucket_created_at_idx", "items (bucket, created_at, id)"},
	{"items_created_at_idx", "items (created_at, id)"},
}
