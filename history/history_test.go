package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

var night0 = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

// seed stores n nightly runs of schedule "nightly" with 6 windows each: 2 %
// noise, CPU per request 100 µs until run step, 130 µs from it (and bytes
// allocated per request 2,000 then 2,600); run failed (0-based) fails after
// two windows with an odd CPU figure.
func seed(t *testing.T, n, step, failed int) store.Store {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		start := night0.Add(time.Duration(i) * 24 * time.Hour)
		run := store.Run{
			ID: fmt.Sprintf("run-%02d", i), Name: "api", Kind: "soak", Status: store.Completed, Schedule: "nightly",
			Commit: fmt.Sprintf("c%02d%037d", i, 0), Scenario: "name: api\nload: {warmup: 0s}\nops:\n  - {name: get, weight: 1, request: {method: GET, path: /}}\n",
			CreatedAt: start, StartedAt: start, EndedAt: start.Add(time.Minute),
		}
		windows := 6
		cpu, alloc := 100.0, 2000.0
		if i >= step {
			cpu, alloc = 130, 2600
		}
		if i == failed {
			run.Status, run.Reason, windows, cpu = store.Failed, "target stopped answering", 2, 500
		}
		if err := st.PutRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		for k := range windows {
			h := window.NewHistogram()
			for range 200 {
				window.Record(h, int64(5000*(1+0.1*r.Float64())))
			}
			enc, err := window.EncodeHistogram(h)
			if err != nil {
				t.Fatal(err)
			}
			c := cpu * (1 + 0.02*r.NormFloat64())
			heap := int64(10<<20 + k*1024)
			allocated := int64(200 * alloc * (1 + 0.02*r.NormFloat64()))
			w := window.Window{
				RunID: run.ID, Incarnation: 1, Index: k, Start: start.Add(time.Duration(k) * 10 * time.Second),
				End: start.Add(time.Duration(k+1) * 10 * time.Second), Requests: 200, OK: 200, RPS: 20,
				LatencyMs: window.LatencyOf(h), Histogram: enc,
				Probes: window.Probes{CPUMicrosPerRequest: &c, HeapBytes: &heap, HeapForcedGC: true, AllocBytes: &allocated},
			}
			if err := st.PutWindow(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.PutFindings(ctx, "run-03", []analysis.Finding{{Kind: "error_surge", Severity: analysis.Warning, Summary: "errors"}}); err != nil {
		t.Fatal(err)
	}
	// A run of another schedule is not in this one's history.
	if err := st.PutRun(ctx, store.Run{ID: "other", Name: "api", Kind: "soak", Status: store.Completed, Schedule: "weekly", CreatedAt: night0}); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestBuildFindsTheStep(t *testing.T) {
	st := seed(t, 13, 7, 4)
	h, err := history.Build(context.Background(), st, "nightly", history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 13 || h.Runs[0].RunID != "run-00" || h.Runs[12].RunID != "run-12" {
		t.Fatalf("runs = %d (%v … ), want run-00 … run-12 oldest first", len(h.Runs), h.Runs[0].RunID)
	}
	if r := h.Runs[4]; !r.Excluded || r.Status != store.Failed || r.Windows != 2 {
		t.Errorf("failed run row = %+v, want excluded with 2 windows", r)
	}
	if r := h.Runs[3]; r.Findings[analysis.Warning] != 1 || r.Windows != 6 || r.Values[analysis.MetricP50Ms] < 5 || r.Values[analysis.MetricP50Ms] > 5.6 {
		t.Errorf("run-03 row = %+v, want 1 warning, 6 windows, p50 ≈ 5.25 ms", r)
	}
	if r := h.Runs[0]; r.HeapSlopeBytesPerHour == nil || *r.HeapSlopeBytesPerHour < 1024*360*0.99 || r.Values[analysis.MetricHeapEndBytes] != 10<<20+5*1024 {
		t.Errorf("run-00 heap: end %v, slope %v; want 10 MiB + 5 KiB, 360 KiB/h", r.Values[analysis.MetricHeapEndBytes], r.HeapSlopeBytesPerHour)
	}
	if len(h.ChangePoints) != 1 {
		t.Fatalf("change points = %+v, want one on cpu_us_per_request", h.ChangePoints)
	}
	p := h.ChangePoints[0]
	if p.Metric != analysis.MetricCPUMicrosPerReq || p.Index != 7 || p.RunID != "run-07" || p.Commit != fmt.Sprintf("c%02d%037d", 7, 0) ||
		p.Direction != analysis.Regression || p.Change < 0.27 || p.Change > 0.33 || p.PValue > 0.001 {
		t.Errorf("change point = %+v, want cpu_us_per_request at run-07, +30 %%, regression", p)
	}

	var out bytes.Buffer
	if err := history.WriteJSON(&out, h); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Type         string           `json:"type"`
		Schedule     string           `json:"schedule"`
		Kind         string           `json:"kind"`
		Comparisons  []map[string]any `json:"comparisons"`
		Runs         []map[string]any `json:"runs"`
		Excluded     []string         `json:"excluded"`
		ChangePoints []map[string]any `json:"change_points"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if j.Kind != history.KindSoak || j.Comparisons != nil {
		t.Errorf("JSON kind %q, comparisons %v; want soak, none", j.Kind, j.Comparisons)
	}
	if j.Type != "history" || j.Schedule != "nightly" || len(j.Runs) != 13 || len(j.Excluded) != 1 || j.Excluded[0] != "run-04" || len(j.ChangePoints) != 1 {
		t.Errorf("JSON = %s", out.String())
	}
	for _, k := range []string{"metric", "run_id", "commit", "before", "after", "change", "p_value", "direction", "index"} {
		if _, ok := j.ChangePoints[0][k]; !ok {
			t.Errorf("change point JSON lacks %q: %v", k, j.ChangePoints[0])
		}
	}
	for _, k := range []string{"run_id", "start", "commit", "status", "windows", "p50_ms", "p95_ms", "p99_ms", "rps", "cpu_us_per_request", "heap_end_bytes", "heap_slope_bytes_per_hour", "findings"} {
		if _, ok := j.Runs[0][k]; !ok {
			t.Errorf("run JSON lacks %q: %v", k, j.Runs[0])
		}
	}

	out.Reset()
	if err := history.WriteText(&out, h); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"history of nightly: 13 runs (1 left out of the series: failed, cancelled or skipped)", "failed*", "1 warning",
		"* not in the series:\n  5 run-04 failed: target stopped answering\n",
		"cpu_us_per_request regression +29.", "from run 8 (2026-12-08 02:00Z, commit c070000000, run-07)"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestBuildLastAndMetrics(t *testing.T) {
	st := seed(t, 13, 7, -1)
	h, err := history.Build(context.Background(), st, "nightly", history.Options{Last: 5, Metrics: []string{analysis.MetricCPUMicrosPerReq}})
	if err != nil {
		t.Fatal(err)
	}
	// The last five are all after the step: nothing changed within them.
	if len(h.Runs) != 5 || h.Runs[0].RunID != "run-08" || len(h.ChangePoints) != 0 {
		t.Errorf("last 5: %d runs from %s, %d change points; want 5 from run-08, none", len(h.Runs), h.Runs[0].RunID, len(h.ChangePoints))
	}
	if _, err := history.Build(context.Background(), st, "nightly", history.Options{Metrics: []string{"bogus"}}); err == nil {
		t.Error("Build with metric bogus: no error")
	}
	h, err = history.Build(context.Background(), st, "nobody", history.Options{})
	if err != nil || len(h.Runs) != 0 {
		t.Errorf("history of a schedule without runs: %d runs, %v", len(h.Runs), err)
	}
}

// TestBuildAllocSeries: bytes allocated per request is a history metric
// (not searched by default): asked for, its step is found, and the JSON rows
// carry it.
func TestBuildAllocSeries(t *testing.T) {
	st := seed(t, 13, 7, -1)
	h, err := history.Build(context.Background(), st, "nightly", history.Options{Metrics: []string{analysis.MetricAllocBytesPerReq}})
	if err != nil {
		t.Fatal(err)
	}
	if v := h.Runs[0].Values[analysis.MetricAllocBytesPerReq]; v < 1900 || v > 2100 {
		t.Errorf("run-00 alloc_bytes_per_request = %v, want ≈ 2000", v)
	}
	if len(h.ChangePoints) != 1 || h.ChangePoints[0].Metric != analysis.MetricAllocBytesPerReq || h.ChangePoints[0].RunID != "run-07" {
		t.Fatalf("change points = %+v, want one on alloc_bytes_per_request at run-07", h.ChangePoints)
	}
	var out bytes.Buffer
	if err := history.WriteJSON(&out, h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"alloc_bytes_per_request":`) {
		t.Errorf("JSON rows lack alloc_bytes_per_request: %s", out.String())
	}
	out.Reset()
	if err := history.WriteText(&out, h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "alloc_bytes_per_request regression +") || !strings.Contains(out.String(), "KiB → 2.") {
		t.Errorf("text:\n%s", out.String())
	}
}
