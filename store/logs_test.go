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
		{RunID: "r1", Incarnation: 1, Source: "database", Bytes: 3, Data: []byte{4}},
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
	keys, err := s.Logs(ctx, "r1", false)
	if err != nil || len(keys) != 3 || keys[0].Data != nil {
		t.Errorf("keys %+v, %v: want three without data", keys, err)
	}
}
