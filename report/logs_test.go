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
