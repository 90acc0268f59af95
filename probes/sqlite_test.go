package probes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// sqliteTarget creates a WAL database like a target's: a rowid table, a
// WITHOUT ROWID table and an index, written through a connection whose busy
// timeout is short (100 ms; the demo target's is 10 s), so that a lock the
// probe held for longer than a moment would fail a write. Not 0: a WAL
// reader that catches the wal-index header mid-update takes the write lock
// for a few microseconds to re-read it (SQLite's walIndexReadHdr), which a
// writer with no busy timeout at all sees as SQLITE_BUSY (CI saw it once in
// 1,001 writes).
func sqliteTarget(t testing.TB) (path string, db *sql.DB) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "data.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(100)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, bucket INTEGER NOT NULL, title TEXT NOT NULL)`,
		`CREATE INDEX items_bucket ON items (bucket)`,
		`CREATE TABLE sessions (token TEXT PRIMARY KEY, user_id INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE "odd ""name""" (x)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path, db
}

func insertItems(t testing.TB, db *sql.DB, n int) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := tx.Exec(`INSERT INTO items (bucket, title) VALUES (?, ?)`, i%100, "item"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func rowsOf(sq window.SQLite) map[string]window.SQLiteTable {
	m := map[string]window.SQLiteTable{}
	for _, t := range sq.Tables {
		m[t.Name] = t
	}
	return m
}

func TestSQLiteReaderCounts(t *testing.T) {
	path, db := sqliteTarget(t)
	insertItems(t, db, 1500)
	for i := range 40 {
		if _, err := db.Exec(`INSERT INTO sessions VALUES (?, 1)`, fmt.Sprint("t", i)); err != nil {
			t.Fatal(err)
		}
	}
	r := NewSQLiteReader(path)
	defer r.Close()
	sq, err := r.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := rowsOf(sq)
	if len(sq.Tables) != 3 || got["items"].Rows != 1500 || got["sessions"].Rows != 40 || got[`odd "name"`].Rows != 0 {
		t.Errorf("tables %+v, want items 1500, sessions 40, odd \"name\" 0", sq.Tables)
	}
	for _, tb := range sq.Tables {
		if tb.Estimated {
			t.Errorf("%s estimated, want exact counts while tables are small", tb.Name)
		}
	}
	if sq.FileBytes <= 0 || sq.WALBytes <= 0 {
		t.Errorf("file %d bytes, WAL %d bytes; want both > 0 (WAL mode)", sq.FileBytes, sq.WALBytes)
	}
}

// Past MaxExactRows a rowid table is estimated from max(rowid) between
// exact counts; deletes before the last exact count are accounted for, a
// WITHOUT ROWID table keeps its last count.
func TestSQLiteReaderEstimates(t *testing.T) {
	path, db := sqliteTarget(t)
	insertItems(t, db, 1000)
	if _, err := db.Exec(`DELETE FROM items WHERE id <= 100`); err != nil {
		t.Fatal(err)
	}
	r := NewSQLiteReader(path)
	defer r.Close()
	r.MaxExactRows, r.ExactEvery = 500, 3
	ctx := context.Background()
	read := func() map[string]window.SQLiteTable {
		sq, err := r.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rowsOf(sq)
	}
	if got := read()["items"]; got.Rows != 900 || got.Estimated {
		t.Fatalf("first reading %+v, want exact 900", got)
	}
	insertItems(t, db, 250)
	if _, err := db.Exec(`INSERT INTO sessions VALUES ('a', 1)`); err != nil {
		t.Fatal(err)
	}
	got := read()
	if got["items"].Rows != 1150 || !got["items"].Estimated {
		t.Errorf("second reading %+v, want the estimate 1150", got["items"])
	}
	if got["sessions"].Rows != 1 || got["sessions"].Estimated {
		t.Errorf("sessions %+v, want exact 1 (small)", got["sessions"])
	}
	read()
	if got := read()["items"]; got.Rows != 1150 || got.Estimated {
		t.Errorf("reading %d: %+v, want an exact count again", 4, got)
	}
}

// The probe never blocks the target's writer for longer than a moment (its
// busy timeout is 100 ms) and never writes: a write through its DSN fails.
func TestSQLiteReaderDoesNotBlockWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("writes for a second")
	}
	path, db := sqliteTarget(t)
	insertItems(t, db, 20_000)
	r := NewSQLiteReader(path)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var writes int
	var writeErr error
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := db.Exec(`INSERT INTO items (bucket, title) VALUES (1, 'w')`); err != nil {
				writeErr = err
				return
			}
			writes++
		}
	})
	reads := 0
	for ctx.Err() == nil {
		if _, err := r.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		reads++
	}
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("the target's write failed while the probe read (%d reads, %d writes): %v", reads, writes, writeErr)
	}
	t.Logf("%d readings and %d writes in a second", reads, writes)

	ro, err := sql.Open("sqlite", sqliteReadOnlyDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Exec(`INSERT INTO items (bucket, title) VALUES (1, 'probe')`); err == nil {
		t.Error("a write through the probe's DSN succeeded; want it refused (read-only)")
	}
}

func TestSQLiteReaderMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	r := NewSQLiteReader(path)
	defer r.Close()
	if _, err := r.Read(context.Background()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing file: %v, want not exist", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the probe created the file")
	}
}

func TestSamplerSQLite(t *testing.T) {
	path, db := sqliteTarget(t)
	insertItems(t, db, 10)
	spec := scenarios.Probes{Database: &scenarios.DatabaseProbe{SQLite: "{{.EnvDir}}/data.db"}}
	if _, err := New(Config{Spec: spec}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("an unrendered path: %v, want ErrBadConfig", err)
	}
	s, err := New(Config{Spec: spec, SQLitePath: path, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Probes(); len(got) != 1 || got[0] != ProbeSQLite {
		t.Errorf("probes %v, want [%s]", got, ProbeSQLite)
	}
	s.Start(context.Background())
	w := window.Window{Index: 0, Start: time.Now().Add(-time.Second), End: time.Now(), Requests: 10}
	s.Sample(context.Background(), &w)
	if w.Probes.SQLite == nil || rowsOf(*w.Probes.SQLite)["items"].Rows != 10 {
		t.Errorf("window probes %+v, want items 10", w.Probes.SQLite)
	}
	if p := s.Problems(); len(p) > 0 {
		t.Errorf("problems %+v", p)
	}
}

// A container's file, read from this host in a volume as the docker
// provider mounts one (the environment volume): the demo target's SQLite
// mode in its offline image, running as user 65534, writing in WAL mode.
func TestSQLiteReaderContainerVolume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a container")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker CLI not installed")
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("no docker engine answers: %v: %s", err, strings.TrimSpace(string(out)))
	}
	const image = "longhaul/demo-target:latest"
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		t.Skipf("%s is not built (scripts/offline-images.sh demo-target)", image)
	}
	vol := fmt.Sprintf("longhaul-probes-test-%d", time.Now().UnixNano())
	if out, err := exec.Command("docker", "volume", "create", "--label", "dev.longhaul.test=probes", vol).CombinedOutput(); err != nil {
		t.Fatalf("docker volume create: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "volume", "rm", "-f", vol).Run() })
	out, err := exec.Command("docker", "volume", "inspect", "-f", "{{.Mountpoint}}", vol).Output()
	if err != nil {
		t.Fatal(err)
	}
	mp := strings.TrimSpace(string(out))
	if err := os.Chmod(mp, 0o777|os.ModeSticky); err != nil {
		t.Skipf("cannot make the volume writable for the container's user (not root?): %v", err)
	}
	out, err = exec.Command("docker", "run", "-d", "--rm", "--label", "dev.longhaul.test=probes",
		"-v", vol+":/longhaul/env", "-e", "DEMO_SQLITE=/longhaul/env/demo.db", image).Output()
	if err != nil {
		t.Fatalf("docker run: %v", err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
	r := NewSQLiteReader(filepath.Join(mp, "demo.db"))
	defer r.Close()
	var sq window.SQLite
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if sq, err = r.Read(context.Background()); err == nil && len(sq.Tables) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reading of the container's file within 20 s: %v (%+v)", err, sq)
		}
	}
	if got := rowsOf(sq); got["items"].Name == "" || got["sessions"].Name == "" || got["users"].Name == "" || sq.FileBytes <= 0 {
		t.Errorf("reading %+v, want the demo's tables items, sessions, users", sq)
	}
}
