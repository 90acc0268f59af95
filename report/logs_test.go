package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWriteLogs(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	if err := st.PutRun(ctx, store.Run{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []store.TargetLog{
		{RunID: "r", Incarnation: 1, Source: "target", Bytes: 9, Data: gz(t, "started\n")},
		{RunID: "r", Incarnation: 2, Source: "target", Bytes: 4 << 20, Truncated: true, Data: gz(t, "again\n")},
		{RunID: "r", Incarnation: 1, Source: "database", Bytes: 6, Data: gz(t, "ready\n")},
	} {
		if err := st.PutLog(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	if err := WriteLogs(ctx, st, "r", LogQuery{Source: "target"}, &b); err != nil {
		t.Fatal(err)
	}
	want := "==> target output, incarnation 1 <==\nstarted\n==> target output, incarnation 2 <==\n[… only the last 4194304 bytes of its output were kept]\nagain\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := WriteLogs(ctx, st, "r", LogQuery{Source: "database", Incarnation: 1}, &b); err != nil || b.String() != "ready\n" {
		t.Errorf("database: %q, %v", b.String(), err)
	}
	if err := WriteLogs(ctx, st, "r", LogQuery{Source: "database", Incarnation: 2}, &b); !errors.Is(err, ErrNoLogs) {
		t.Errorf("incarnation 2's database: %v, want ErrNoLogs", err)
	}
}

// --window: the lines a window printed, from the incarnation that has
// it; "nothing" said for a window known to be quiet; ErrNoLogs naming
// the windows that are known for one that is not.
func TestWriteLogsWindow(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	if err := st.PutRun(ctx, store.Run{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := st.PutWindow(ctx, window.Window{RunID: "r", Incarnation: 1 + i/6, Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	text := "up\nw3 a\nw3 b\nw4\n"
	for _, l := range []store.TargetLog{
		{RunID: "r", Incarnation: 1, Source: "target", Data: gz(t, text),
			Windows: []store.LogWindow{{Index: 3, From: 3, To: 13}, {Index: 4, From: 13, To: 16}, {Index: 5, From: 16, To: 16}}},
		{RunID: "r", Incarnation: 2, Source: "target", Data: gz(t, "again\n"), Windows: []store.LogWindow{{Index: 7, From: 0, To: 6}}},
	} {
		if err := st.PutLog(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		q    LogQuery
		want string
	}{
		{LogQuery{Source: "target", OneWindow: true, Window: 3}, "w3 a\nw3 b\n"},
		{LogQuery{Source: "target", OneWindow: true, Window: 7}, "again\n"},
		{LogQuery{Source: "target", OneWindow: true, Window: 5}, "[the target printed nothing during window 5]\n"},
	} {
		var b strings.Builder
		if err := WriteLogs(ctx, st, "r", c.q, &b); err != nil || b.String() != c.want {
			t.Errorf("window %d: %q, %v; want %q", c.q.Window, b.String(), err, c.want)
		}
	}
	var b strings.Builder
	err := WriteLogs(ctx, st, "r", LogQuery{Source: "target", Incarnation: 1, OneWindow: true, Window: 7}, &b)
	if !errors.Is(err, ErrNoLogs) || !strings.Contains(err.Error(), "known for windows 3–5") {
		t.Errorf("window 7 of incarnation 1: %v, want ErrNoLogs naming windows 3–5", err)
	}
	err = WriteLogs(ctx, st, "r", LogQuery{Source: "target", OneWindow: true, Window: 8}, &b)
	if !errors.Is(err, ErrNoLogs) || !strings.Contains(err.Error(), "the run has windows 0–7") {
		t.Errorf("window 8: %v, want ErrNoLogs saying the run has windows 0–7", err)
	}
	lines, ok := WindowLines(mustLogs(t, st), "target", 3)
	if !ok || strings.Join(lines, "|") != "w3 a|w3 b" {
		t.Errorf("WindowLines(3) = %q, %v", lines, ok)
	}
	if _, ok := WindowLines(mustLogs(t, st), "target", 6); ok {
		t.Error("WindowLines(6): known, want not")
	}
}

func mustLogs(t *testing.T, st store.Logs) []store.TargetLog {
	t.Helper()
	ls, err := st.Logs(context.Background(), "r", true)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestLogQueryCheck: a query that can select nothing is the user's to fix
// (ErrBadLogQuery, its text only what is wrong); the rest pass.
func TestLogQueryCheck(t *testing.T) {
	for _, c := range []struct {
		q      LogQuery
		follow bool
		want   string
	}{
		{LogQuery{Incarnation: -1}, false, "--incarnation is 1 or more (0: all)"},
		{LogQuery{OneWindow: true, Window: -3}, false, "--window is 0 or more (the run's first window is 0)"},
		{LogQuery{Incarnation: 2}, true, "--follow shows the live incarnation; --incarnation and --window pick kept output"},
		{LogQuery{OneWindow: true}, true, "--follow shows the live incarnation; --incarnation and --window pick kept output"},
		{LogQuery{Incarnation: 2, OneWindow: true, Window: 0}, false, ""},
		{LogQuery{Window: -1}, false, ""}, // no --window: Window is not used
		{LogQuery{}, true, ""},
	} {
		err := c.q.Check(c.follow)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v follow=%v: %v, want no error", c.q, c.follow, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrBadLogQuery) {
			t.Errorf("%+v follow=%v: %v, want %q (ErrBadLogQuery)", c.q, c.follow, err, c.want)
		}
	}
}
