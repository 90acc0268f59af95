package store

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// A SQLite store whose file cannot grow (a full disk; SQLite's
// max_page_count gives the same SQLITE_FULL) refuses the window with an
// error naming the file and the window, keeps everything committed before
// intact, and takes windows again once there is room.
func TestSQLiteFullRefusesCleanly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "longhaul.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := st.(*sqlStore)
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	if err := s.PutRun(ctx, Run{ID: "r1", Name: "full", Status: Running, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	win := func(i int) window.Window {
		return window.Window{RunID: "r1", Incarnation: 1, Index: i, Start: t0.Add(time.Duration(i) * time.Second),
			End: t0.Add(time.Duration(i+1) * time.Second), Requests: 100, OK: 100, RPS: 100,
			Histogram: make([]byte, 64<<10)} // a large window fills pages fast
	}
	for i := range 3 {
		if err := s.PutWindow(ctx, win(i)); err != nil {
			t.Fatal(err)
		}
	}
	var pages int
	if err := s.w.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA max_page_count = `+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	err = s.PutWindow(ctx, win(3))
	if err == nil {
		t.Fatal("a window was written to a store that cannot grow")
	}
	for _, want := range []string{path, "r1/1/3", "full"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	var check string
	if err := s.w.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after the refused write: %q, %v", check, err)
	}
	if ws, err := s.Windows(ctx, "r1", AllWindows); err != nil || len(ws) != 3 {
		t.Errorf("after the refused write: %d windows (%v), want the 3 committed", len(ws), err)
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWindow(ctx, win(3)); err != nil {
		t.Errorf("room again: %v", err)
	}
}
