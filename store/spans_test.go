package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

func testListRunsPages(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	for i, name := range []string{"Nightly_API", "nightly-db", "smoke", "nightly%x", "other"} {
		r := newRun(string(rune('a'+i)), t0.Add(time.Duration(i)*time.Minute))
		r.Name = name
		if i == 4 {
			r.Kind = "soak"
		}
		mustPutRun(t, s, r)
	}
	tests := []struct {
		opts store.ListOptions
		want []string
	}{
		{store.ListOptions{Limit: 2, Offset: 1}, []string{"d", "c"}},
		{store.ListOptions{Limit: 2, Offset: 4}, []string{"a"}},
		{store.ListOptions{NameContains: "NIGHTLY"}, []string{"d", "b", "a"}},
		{store.ListOptions{NameContains: "%"}, []string{"d"}},  // a literal %, not a wildcard
		{store.ListOptions{NameContains: "y_"}, []string{"a"}}, // a literal _
		{store.ListOptions{Kind: "soak"}, []string{"e"}},
	}
	for _, tt := range tests {
		runs, err := s.ListRuns(ctx, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.ID)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ListRuns(%+v) = %v, want %v", tt.opts, got, tt.want)
		}
		tt.opts.Limit, tt.opts.Offset = 0, 0
		all, err := s.ListRuns(ctx, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.CountRuns(ctx, tt.opts)
		if err != nil || n != len(all) {
			t.Errorf("CountRuns(%+v) = %d, %v; want %d", tt.opts, n, err, len(all))
		}
	}
}

func testCounts(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("a", t0))
	mustPutRun(t, s, newRun("b", t0))
	mustPutRun(t, s, newRun("c", t0))
	for i := range 3 {
		if err := s.PutWindow(ctx, newWindow(t, "a", 0, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutWindow(ctx, window.Window{RunID: "a", Index: 3, Start: t0, End: t0, Gap: true}); err != nil {
		t.Fatal(err)
	}
	fs := []analysis.Finding{{Kind: "leak", Severity: analysis.Critical}, {Kind: "x", Severity: analysis.Info}, {Kind: "y", Severity: analysis.Info}}
	if err := s.PutFindings(ctx, "b", fs); err != nil {
		t.Fatal(err)
	}
	got, err := s.Counts(ctx, []string{"a", "b", "c", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.RunCounts{
		"a": {Windows: 4, Gaps: 1},
		"b": {Findings: map[analysis.Severity]int{analysis.Critical: 1, analysis.Info: 2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Counts = %+v, want %+v", got, want)
	}
	if got, err := s.Counts(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("Counts(nil) = %v, %v", got, err)
	}
}

// testSpans: a short run comes back window by window; a range that needs
// merging gives spans whose counts and percentiles equal window.Merge of the
// same windows, rolled-up buckets and on-the-fly ones alike.
func testSpans(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r", t0))
	var ws []window.Window
	for i := range 100 {
		w := newWindow(t, "r", i/50, i)
		if i == 70 {
			w = window.Window{RunID: "r", Incarnation: 1, Index: i, Start: w.Start, End: w.End, Gap: true}
		}
		ws = append(ws, w)
		if err := s.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	full, err := s.Spans(ctx, "r", store.SpanQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 100 || full[99].Index != 99 || full[99].Histogram != nil || full[0].Ops != nil || !full[70].Gap || full[70].Gaps != 1 {
		t.Fatalf("full resolution: %d spans", len(full))
	}
	withOps, err := s.Spans(ctx, "r", store.SpanQuery{FromIndex: 10, ToIndex: 12, Ops: true})
	if err != nil || len(withOps) != 2 || withOps[0].Index != 10 || withOps[0].Ops["get"].Requests != 3 || withOps[0].Ops["get"].Histogram != nil {
		t.Fatalf("ops range: %+v, %v", withOps, err)
	}

	// 5..95 in at most 20 points: level 1 (8 windows), buckets 0 and 11 cut.
	got, err := s.Spans(ctx, "r", store.SpanQuery{FromIndex: 5, ToIndex: 95, MaxPoints: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 12 {
		t.Fatalf("%d spans, want 12", len(got))
	}
	next := 5
	for _, sp := range got {
		if sp.Index != next {
			t.Fatalf("span starts at %d, want %d", sp.Index, next)
		}
		part := ws[sp.Index : sp.LastIndex+1]
		sum, err := window.Merge(part)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Windows != len(part) || sp.Requests != sum.Requests || sp.LatencyMs != sum.LatencyMs || sp.Gaps != sum.Gaps {
			t.Errorf("span %d..%d: %d windows %d requests %+v, want %d %d %+v", sp.Index, sp.LastIndex, sp.Windows, sp.Requests, sp.LatencyMs, len(part), sum.Requests, sum.LatencyMs)
		}
		if sp.LastIncarnation != part[len(part)-1].Incarnation {
			t.Errorf("span %d..%d: last incarnation %d", sp.Index, sp.LastIndex, sp.LastIncarnation)
		}
		next = sp.LastIndex + 1
	}
	if next != 95 {
		t.Errorf("spans end at %d, want 95", next)
	}

	// Replacing a window rewrites its rollup.
	w := newWindow(t, "r", 0, 9)
	w.Requests = 1000
	if err := s.PutWindow(ctx, w); err != nil {
		t.Fatal(err)
	}
	got, err = s.Spans(ctx, "r", store.SpanQuery{FromIndex: 8, ToIndex: 16, MaxPoints: 1})
	if err != nil || len(got) != 1 || got[0].Requests != 7*4+1000 {
		t.Errorf("after replacing window 9: %+v, %v", got, err)
	}
}

// testSpansLongRun: 130 windows in at most 3 points need level 2 (64
// windows), rolled up from level 1 for the first 128; the last two are
// merged on the fly.
func testSpansLongRun(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r", t0))
	var requests int64
	for i := range 130 {
		w := newWindow(t, "r", 0, i)
		w.Ops = nil // keeps the commits quick
		requests += w.Requests
		if err := s.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Spans(ctx, "r", store.SpanQuery{MaxPoints: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Windows != 64 || got[1].Windows != 64 || got[2].Windows != 2 || got[0].Requests+got[1].Requests+got[2].Requests != requests {
		t.Errorf("spans %d: %+v", len(got), got)
	}
}
