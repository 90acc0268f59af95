package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
)

func testProfiles(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	put := []store.Profile{
		{RunID: "r1", Kind: store.ProfileCPU, Index: 5, Start: t0.Add(50 * time.Second), Duration: 5 * time.Second, Requests: 1234.5, Data: []byte{1, 2, 3}},
		{RunID: "r1", Kind: store.ProfileCPU, Index: 0, Start: t0, Duration: 5 * time.Second, Requests: 1000, Data: []byte{4}},
		{RunID: "r1", Kind: store.ProfileHeap, Index: 3, Start: t0.Add(30 * time.Second), Data: []byte{5, 6}},
		{RunID: "r1", Kind: store.ProfileCPU, Incarnation: 1, Index: 10, Start: t0.Add(100 * time.Second), Duration: time.Second, Requests: 7, Data: []byte{7}},
	}
	for _, p := range put {
		if err := s.PutProfile(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Replacing one by its key keeps one row.
	put[1].Data, put[1].Requests = []byte{9, 9}, 999
	if err := s.PutProfile(ctx, put[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.PutProfile(ctx, store.Profile{RunID: "nope", Kind: store.ProfileCPU, Data: []byte{1}}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutProfile(unknown run) = %v, want ErrNotFound", err)
	}

	tests := []struct {
		name string
		q    store.ProfileQuery
		want []int // indexes, in order
		data bool
	}{
		{"all", store.ProfileQuery{WithData: true}, []int{0, 5, 10, 3}, true},
		{"cpu keys", store.ProfileQuery{Kind: store.ProfileCPU}, []int{0, 5, 10}, false},
		{"range", store.ProfileQuery{Kind: store.ProfileCPU, FromIndex: 1, ToIndex: 10, WithData: true}, []int{5}, true},
		{"heap", store.ProfileQuery{Kind: store.ProfileHeap, WithData: true}, []int{3}, true},
	}
	byIndex := map[int]store.Profile{}
	for _, p := range put {
		byIndex[p.Index] = p
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Profiles(ctx, "r1", tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var idx []int
			for _, p := range got {
				idx = append(idx, p.Index)
				want := byIndex[p.Index]
				if !tt.data {
					want.Data = nil
				}
				if p.Kind != want.Kind || p.Incarnation != want.Incarnation || !p.Start.Equal(want.Start) ||
					p.Duration != want.Duration || p.Requests != want.Requests || !bytes.Equal(p.Data, want.Data) {
					t.Errorf("profile %d = %+v, want %+v", p.Index, p, want)
				}
			}
			if len(idx) != len(tt.want) {
				t.Fatalf("indexes %v, want %v", idx, tt.want)
			}
			for i := range idx {
				if idx[i] != tt.want[i] {
					t.Fatalf("indexes %v, want %v", idx, tt.want)
				}
			}
		})
	}
	if err := s.DeleteProfile(ctx, "r1", store.ProfileHeap, 0, 3); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Profiles(ctx, "r1", store.ProfileQuery{Kind: store.ProfileHeap}); err != nil || len(got) != 0 {
		t.Errorf("heap profiles after delete = %v, %v; want none", got, err)
	}
}
