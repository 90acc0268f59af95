package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/longhaul-dev/longhaul/store"
)

func testLogs(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	put := []store.TargetLog{
		{RunID: "r1", Incarnation: 2, Source: "target", Bytes: 10, Data: []byte{1}},
		{RunID: "r1", Incarnation: 1, Source: "target", Bytes: 4 << 20, Truncated: true, Data: []byte{2, 3}},
		{RunID: "r1", Incarnation: 1, Source: "database", Bytes: 3, Data: []byte{4},
			Windows: []store.LogWindow{{Index: 0, From: 0, To: 0}, {Index: 1, From: 0, To: 3}}, Cursor: "offset:3"},
	}
	for _, l := range put {
		if err := s.PutLog(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	// A retried teardown writes the same log again: one row.
	if err := s.PutLog(ctx, put[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.PutLog(ctx, store.TargetLog{RunID: "nope", Source: "target", Data: []byte{1}}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutLog(unknown run) = %v, want ErrNotFound", err)
	}
	got, err := s.Logs(ctx, "r1", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Source != "database" || got[1].Source != "target" || got[1].Incarnation != 1 || got[2].Incarnation != 2 {
		t.Fatalf("logs %+v, want by incarnation then source", got)
	}
	if !got[1].Truncated || got[1].Bytes != 4<<20 || !bytes.Equal(got[1].Data, []byte{2, 3}) {
		t.Errorf("log %+v", got[1])
	}
	if w, ok := got[0].Window(1); !ok || w != (store.LogWindow{Index: 1, From: 0, To: 3}) || got[0].Cursor != "offset:3" {
		t.Errorf("database log's window 1 = %+v, %v, read to %q; want 0–3 kept, read to offset:3", w, ok, got[0].Cursor)
	}
	if _, ok := got[0].Window(2); ok {
		t.Error("database log has a window 2 it was not given")
	}
	keys, err := s.Logs(ctx, "r1", false)
	if err != nil || len(keys) != 3 || keys[0].Data != nil {
		t.Errorf("keys %+v, %v: want three without data", keys, err)
	}
}
