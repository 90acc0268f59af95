package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
)

// history, comparisons --schedule and runs --schedule over a seeded store:
// a compare schedule's comparisons (one skipped) and a soak schedule's
// skipped firing.
func TestHistoryAndScheduleFilters(t *testing.T) {
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "longhaul.db")
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for _, c := range []store.Comparison{
		{ID: "ab-0", Name: "api", Schedule: "nightly-ab", Status: store.Completed, Pairs: 3, CreatedAt: t0,
			A: store.Build{Ref: "v1", Commit: "aaaa1111"}, B: store.Build{Ref: "main", Commit: "bbbb2222"},
			Verdicts: []analysis.Verdict{{Metric: analysis.MetricP50Ms, Outcome: analysis.Better, Ratio: 0.9, Pairs: 3}}},
		{ID: "ab-1", Name: "api", Schedule: "nightly-ab", Status: store.Skipped, Reason: "comparison ab-0 was still going", CreatedAt: t0.Add(time.Hour)},
		{ID: "by-hand", Name: "api", Status: store.Completed, CreatedAt: t0},
	} {
		if err := st.PutComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []store.Run{
		{ID: "n-0", Name: "api", Kind: "soak", Status: store.Completed, Schedule: "nightly", CreatedAt: t0},
		{ID: "n-1", Name: "api", Kind: "soak", Status: store.Skipped, Schedule: "nightly", Reason: "run n-0 was still going", CreatedAt: t0.Add(time.Minute)},
	} {
		if err := st.PutRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	code, out, errs := runCommand(t, "history", "nightly-ab", "--store", dsn, "--format", "json")
	var h struct {
		Kind        string           `json:"kind"`
		Comparisons []map[string]any `json:"comparisons"`
		Excluded    []string         `json:"excluded"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &h) != nil || h.Kind != "compare" || len(h.Comparisons) != 2 || len(h.Excluded) != 1 || h.Excluded[0] != "ab-1" {
		t.Errorf("history nightly-ab --format json: exit %d, %s%s", code, out, errs)
	}
	code, out, errs = runCommand(t, "history", "nightly-ab", "--store", dsn)
	for _, want := range []string{"history of nightly-ab: 2 comparisons", "aaaa1111", "bbbb2222", "0.900 better", "2 ab-1 skipped: comparison ab-0 was still going"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("history nightly-ab: exit %d, output lacks %q:\n%s%s", code, want, out, errs)
		}
	}
	code, out, errs = runCommand(t, "history", "nightly", "--store", dsn)
	if code != 0 || !strings.Contains(out, "2 n-1 skipped: run n-0 was still going") {
		t.Errorf("history nightly: exit %d:\n%s%s", code, out, errs)
	}
	if code, _, errs := runCommand(t, "history", "nightly-ab", "--store", dsn, "--metric", "heap_end_bytes"); code != exitBadInput || !strings.Contains(errs, "heap_end_bytes") {
		t.Errorf("history of a compare schedule --metric heap_end_bytes: exit %d, %q", code, errs)
	}

	code, out, errs = runCommand(t, "comparisons", "--schedule", "nightly-ab", "--store", dsn, "--format", "json")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || strings.Contains(out, "by-hand") {
		t.Errorf("comparisons --schedule nightly-ab: exit %d, %s%s; want ab-0 and ab-1", code, out, errs)
	}
	code, out, errs = runCommand(t, "runs", "--schedule", "nightly", "--status", "skipped", "--store", dsn, "--format", "json")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 1 || !strings.Contains(out, `"n-1"`) {
		t.Errorf("runs --schedule nightly --status skipped: exit %d, %s%s; want n-1", code, out, errs)
	}
}
