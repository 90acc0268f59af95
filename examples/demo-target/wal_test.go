package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSQLiteWritesCheckpoint: the writes' WAL is checkpointed and restarted
// as they go (writeRow), so it stays near SQLite's 1,000-page
// auto-checkpoint threshold instead of growing with every write — a WAL
// never checkpointed makes every read search a longer log, and the target's
// CPU per request climbed through every soak (it doubled in 15 s).
func TestSQLiteWritesCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.db")
	ctx := context.Background()
	st, err := openSQLite(ctx, path, true, testLog)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	owner, err := st.createUser(ctx, "wal", []byte("x"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const writes = 4000
	for i := range writes {
		it, err := st.createItem(ctx, owner, newItem{Bucket: int64(i % 100), Title: "title", Payload: []byte(`{"note":"n"}`)}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.updateItem(ctx, it.ID, itemPatch{}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// Without checkpoints 8,000 writes leave ~60 MB of WAL.
	if max := int64(8 << 20); fi.Size() > max {
		t.Errorf("after %d writes the WAL is %d bytes, want ≤ %d: it is never checkpointed", 2*writes, fi.Size(), max)
	}
}
