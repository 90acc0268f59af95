package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
)

// seedCompare stores n nightly comparisons of schedule "nightly-ab": B/A
// of CPU per request about 1.00 (2 % noise) until comparison step, 1.15
// from it; p50's ratio flat at 0.95; comparison failed (0-based) failed
// before any verdict, comparison skipped is a skipped firing. A comparison
// of another schedule and one started by hand are not in the history.
func seedCompare(t *testing.T, n, step, failed, skipped int) store.Store {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	r := rand.New(rand.NewPCG(5, 6))
	verdict := func(m string, ratio float64) analysis.Verdict {
		out := analysis.NoDifference
		switch {
		case ratio > 1.05:
			out = analysis.Worse
		case ratio < 0.97:
			out = analysis.Better
		}
		if analysis.HigherIsBetter(m) && out != analysis.NoDifference {
			out = map[analysis.Outcome]analysis.Outcome{analysis.Better: analysis.Worse, analysis.Worse: analysis.Better}[out]
		}
		return analysis.Verdict{Metric: m, Outcome: out, Ratio: ratio, CI: [2]float64{ratio * 0.98, ratio * 1.02}, Pairs: 3, PairsBBetter: 2}
	}
	for i := range n {
		start := night0.Add(time.Duration(i) * 24 * time.Hour)
		c := store.Comparison{
			ID: fmt.Sprintf("cmp-%02d", i), Name: "api", Schedule: "nightly-ab", Status: store.Completed, Order: "abba", Pairs: 3,
			A:         store.Build{Ref: "v1.4.0", Commit: "a14" + strings.Repeat("0", 37)},
			B:         store.Build{Ref: "main", Commit: fmt.Sprintf("b%02d%037d", i, 0)},
			CreatedAt: start, StartedAt: start, EndedAt: start.Add(time.Hour),
		}
		cpu := 1.0
		if i >= step {
			cpu = 1.15
		}
		switch i {
		case failed:
			c.Status, c.Reason = store.Failed, "equivalence: different"
		case skipped:
			c.Status, c.Reason, c.StartedAt, c.EndedAt = store.Skipped, "cmp-05 was still going", time.Time{}, time.Time{}
			c.A.Commit, c.B.Commit = "", "" // nothing was built
		default:
			c.Verdicts = []analysis.Verdict{
				verdict(analysis.MetricP50Ms, 0.95*(1+0.02*r.NormFloat64())),
				verdict(analysis.MetricRPS, 1.02*(1+0.02*r.NormFloat64())),
				verdict(analysis.MetricCPUMicrosPerReq, cpu*(1+0.02*r.NormFloat64())),
			}
		}
		if err := st.PutComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []store.Comparison{
		{ID: "weekly-0", Name: "api", Schedule: "weekly-ab", Status: store.Completed, CreatedAt: night0},
		{ID: "by-hand", Name: "api", Status: store.Completed, CreatedAt: night0},
	} {
		if err := st.PutComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// A step in the nightly B/A ratio of CPU per request is one change point,
// at the first comparison after the step; failed and skipped comparisons
// are rows but not in the series.
func TestBuildCompareFindsTheStep(t *testing.T) {
	st := seedCompare(t, 14, 8, 3, 6)
	h, err := history.Build(context.Background(), st, "nightly-ab", history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Kind != history.KindCompare || !reflect.DeepEqual(h.Metrics, history.CompareDefaultMetrics) {
		t.Errorf("kind %q, metrics %v; want compare, %v", h.Kind, h.Metrics, history.CompareDefaultMetrics)
	}
	if len(h.Runs) != 14 || h.Runs[0].RunID != "cmp-00" || h.Runs[13].RunID != "cmp-13" {
		t.Fatalf("rows = %d, want cmp-00 … cmp-13 oldest first", len(h.Runs))
	}
	for i, want := range map[int]store.Status{3: store.Failed, 6: store.Skipped} {
		if r := h.Runs[i]; !r.Excluded || r.Status != want || len(r.Values) != 0 {
			t.Errorf("row %d = %+v, want %s, excluded, no values", i, r, want)
		}
	}
	if r := h.Runs[0]; !r.Comparison || r.CommitA[:3] != "a14" || r.CommitB != r.Commit || r.Pairs != 3 ||
		math.Abs(r.Values[analysis.MetricP50Ms]-0.95) > 0.1 || r.Verdicts[analysis.MetricP50Ms].Outcome == "" {
		t.Errorf("row 0 = %+v", r)
	}
	if len(h.ChangePoints) != 1 {
		t.Fatalf("change points = %+v, want one on cpu_us_per_request", h.ChangePoints)
	}
	p := h.ChangePoints[0]
	if p.Metric != analysis.MetricCPUMicrosPerReq || p.Index != 8 || p.RunID != "cmp-08" || p.Commit != fmt.Sprintf("b%02d%037d", 8, 0) ||
		p.Direction != analysis.Regression || p.Change < 0.11 || p.Change > 0.19 || p.PValue > 0.001 {
		t.Errorf("change point = %+v, want cpu_us_per_request at cmp-08, +15 %%, regression", p)
	}

	// The series of a higher-is-better ratio falling is a regression too.
	h2, err := history.Build(context.Background(), seedCompare(t, 14, 99, -1, -1), "nightly-ab", history.Options{Metrics: []string{analysis.MetricRPS}})
	if err != nil || len(h2.ChangePoints) != 0 {
		t.Errorf("flat rps ratio: %+v, %v; want no change points", h2.ChangePoints, err)
	}
	if _, err := history.Build(context.Background(), st, "nightly-ab", history.Options{Metrics: []string{analysis.MetricHeapEndBytes}}); err == nil {
		t.Error("heap_end_bytes of a compare schedule: no error")
	}
}

func TestCompareJSON(t *testing.T) {
	h, err := history.Build(context.Background(), seedCompare(t, 14, 8, 3, 6), "nightly-ab", history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := history.WriteJSON(&out, h); err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if j["type"] != "history" || j["schedule"] != "nightly-ab" || j["kind"] != "compare" {
		t.Errorf("JSON head = %v %v %v", j["type"], j["schedule"], j["kind"])
	}
	if runs, ok := j["runs"].([]any); !ok || len(runs) != 0 {
		t.Errorf("runs = %v, want []", j["runs"])
	}
	if ex := j["excluded"].([]any); !reflect.DeepEqual(ex, []any{"cmp-03", "cmp-06"}) {
		t.Errorf("excluded = %v, want cmp-03, cmp-06", ex)
	}
	cs := j["comparisons"].([]any)
	if len(cs) != 14 {
		t.Fatalf("%d comparisons, want 14", len(cs))
	}
	c0 := cs[0].(map[string]any)
	for _, k := range []string{"comparison_id", "start", "commit_a", "commit_b", "status", "excluded", "pairs", "metrics"} {
		if _, ok := c0[k]; !ok {
			t.Errorf("comparison JSON lacks %q: %v", k, c0)
		}
	}
	ms := c0["metrics"].(map[string]any)
	if len(ms) != len(history.CompareDefaultMetrics) || ms[analysis.MetricP95Ms] != nil {
		t.Errorf("metrics = %v, want %v with p95_ms null (no verdict)", ms, history.CompareDefaultMetrics)
	}
	p50 := ms[analysis.MetricP50Ms].(map[string]any)
	for _, k := range []string{"ratio", "ci", "outcome", "pairs"} {
		if _, ok := p50[k]; !ok {
			t.Errorf("p50_ms lacks %q: %v", k, p50)
		}
	}
	if skipped := cs[6].(map[string]any); skipped["status"] != "skipped" || skipped["reason"] != "cmp-05 was still going" || skipped["excluded"] != true {
		t.Errorf("skipped comparison = %v", skipped)
	}
	cp := j["change_points"].([]any)[0].(map[string]any)
	if cp["run_id"] != "cmp-08" || cp["metric"] != analysis.MetricCPUMicrosPerReq || cp["direction"] != "regression" {
		t.Errorf("change point = %v", cp)
	}
}

// Golden: go test ./history -run TestCompareText -update rewrites it.
func TestCompareText(t *testing.T) {
	h, err := history.Build(context.Background(), seedCompare(t, 14, 8, 3, 6), "nightly-ab", history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := history.WriteText(&out, h); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "compare.txt", out.Bytes())
}
