// Package storetest opens a throwaway results store for a test:
//
//	st := storetest.New(t)
//
// a SQLite file in the test's temporary directory, closed when the test ends.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/longhaul-dev/longhaul/store"
)

// New opens a fresh SQLite store in t's temporary directory and closes it
// when the test ends; a store that does not open ends the test.
func New(t testing.TB) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "longhaul.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
