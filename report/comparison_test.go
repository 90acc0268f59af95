package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/store"
)

// fixedComparison is a finished comparison of a build that burns more CPU
// per request (B) against the scenario's own (A): 3 pairs, one rerun.
func fixedComparison(t *testing.T) store.Comparison {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cpu := []analysis.PairValues{{A: 100, B: 115}, {A: 104, B: 121}, {A: 98, B: 112}}
	p50 := []analysis.PairValues{{A: 1.0, B: 1.02}, {A: 1.1, B: 1.05}, {A: 0.9, B: 0.95}}
	// Decided together (Family 2), CPU's noise pooled with 4 earlier
	// comparisons of 3 pairs.
	prior := analysis.PriorNoise{}
	for range 4 {
		prior.Add(analysis.Verdict{Pairs: 3, SD: 0.02})
	}
	opts := analysis.PairedOptions{Family: 2, Prior: map[string]analysis.PriorNoise{analysis.MetricCPUMicrosPerReq: prior}}
	vs := []analysis.Verdict{
		analysis.PairedVerdict(analysis.MetricP50Ms, p50, opts),
		analysis.PairedVerdict(analysis.MetricCPUMicrosPerReq, cpu, opts),
	}
	// What B's and A's merged CPU profiles said.
	vs[1].ProfileDiff = []analysis.FunctionCost{
		{Function: "main.spin", AUsPerRequest: 0, BUsPerRequest: 14.6, DeltaUsPerRequest: 14.6, AShare: 0, BShare: 0.12},
		{Function: "runtime.memmove", AUsPerRequest: 2.1, BUsPerRequest: 1.4, DeltaUsPerRequest: -0.7, AShare: 0.02, BShare: 0.012},
	}
	c := store.Comparison{
		ID: "cmp-1", Name: "demo", Status: store.Completed,
		A: store.Build{}, B: store.Build{Env: map[string]string{"DEMO_CPU_BURN_US": "12"}},
		Order: "abba", Pairs: 3, Provider: "local", RoundDuration: 20 * time.Second, Window: time.Second, Warmup: 2 * time.Second,
		Host: "longhaul-host-a", Equivalence: equivalence.Result{Status: equivalence.Identical, Requests: 200},
		Verdicts: vs, CreatedAt: t0, StartedAt: t0.Add(time.Second), EndedAt: t0.Add(3 * time.Minute),
	}
	sides := []store.Side{"A", "B", "B", "A", "A", "B"}
	for i, s := range sides {
		r := store.Round{Index: i, Pair: i / 2, Side: s, RunID: "cmp-1-r" + string(rune('0'+i)), Status: store.Completed,
			ForeignCPU: 0.02, StartedAt: t0.Add(time.Duration(i) * 25 * time.Second), EndedAt: t0.Add(time.Duration(i)*25*time.Second + 21*time.Second)}
		if i == 2 {
			r.ForeignCPU, r.Disturbed, r.Superseded = 0.4, true, true
		}
		c.Rounds = append(c.Rounds, r)
	}
	return c
}

func TestComparisonTextGolden(t *testing.T) {
	var out bytes.Buffer
	if err := WriteComparisonText(&out, fixedComparison(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "comparison.txt.golden", out.Bytes())
	s := out.String()
	for _, want := range []string{"B is worse on cpu_us_per_request", "CPU/request: B won 0/3 pairs",
		"B spends +15 µs/request more in main.spin (0 → 12 % of the target's CPU)", "→ worse", "equivalence: identical (200 requests)", "disturbed"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

func TestComparisonTextAvsA(t *testing.T) {
	c := fixedComparison(t)
	c.B = c.A
	c.Verdicts = []analysis.Verdict{analysis.PairedVerdict(analysis.MetricCPUMicrosPerReq,
		[]analysis.PairValues{{A: 100, B: 101}, {A: 100, B: 99}, {A: 100, B: 100.5}}, analysis.PairedOptions{})}
	var out bytes.Buffer
	if err := WriteComparisonText(&out, c); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "noise floor") || !strings.Contains(s, "A vs A") || strings.Contains(s, "is worse") {
		t.Errorf("an A-vs-A report should name the noise floor and no worse metric:\n%s", s)
	}
}

func TestComparisonJSONShape(t *testing.T) {
	var out bytes.Buffer
	c := fixedComparison(t)
	c.Equivalence = equivalence.Result{Status: equivalence.Different, Requests: 17, FirstDifference: &equivalence.Difference{
		Request: 17, Op: "list", Method: "GET", Path: "/items", What: "body", JSONPath: "$.items[0].variant", A: "(absent)", B: "1"}}
	if err := WriteComparisonJSON(&out, c); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Fatalf("%d lines, want one object", n)
	}
	var m struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		Status string `json:"status"`
		Order  string `json:"order"`
		Pairs  int    `json:"pairs"`
		Rounds []struct {
			Index     int    `json:"index"`
			Side      string `json:"side"`
			RunID     string `json:"run_id"`
			Disturbed bool   `json:"disturbed"`
		} `json:"rounds"`
		Equivalence struct {
			Status          string `json:"status"`
			Requests        int    `json:"requests"`
			FirstDifference struct {
				Op       string `json:"op"`
				JSONPath string `json:"json_path"`
			} `json:"first_difference"`
		} `json:"equivalence"`
		Verdicts []struct {
			Metric       string     `json:"metric"`
			Outcome      string     `json:"outcome"`
			Ratio        float64    `json:"ratio"`
			CI           [2]float64 `json:"ci"`
			Pairs        int        `json:"pairs"`
			PairsBBetter int        `json:"pairs_b_better"`
			Method       string     `json:"method"`
			Reason       *string    `json:"reason"`
			SD           float64    `json:"sd"`
			DF           int        `json:"df"`
			PooledFrom   int        `json:"pooled_from"`
			Family       int        `json:"family"`
			ProfileDiff  []struct {
				Function          string  `json:"function"`
				AUsPerRequest     float64 `json:"a_us_per_request"`
				BUsPerRequest     float64 `json:"b_us_per_request"`
				DeltaUsPerRequest float64 `json:"delta_us_per_request"`
			} `json:"profile_diff"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "comparison" || m.ID != "cmp-1" || m.Status != "completed" || m.Order != "abba" || m.Pairs != 3 {
		t.Errorf("header: %+v", m)
	}
	if len(m.Rounds) != 6 || m.Rounds[2].Side != "B" || !m.Rounds[2].Disturbed || m.Rounds[5].RunID != "cmp-1-r5" {
		t.Errorf("rounds: %+v", m.Rounds)
	}
	if m.Equivalence.Status != "different" || m.Equivalence.FirstDifference.Op != "list" || m.Equivalence.FirstDifference.JSONPath != "$.items[0].variant" {
		t.Errorf("equivalence: %+v", m.Equivalence)
	}
	if len(m.Verdicts) != 2 {
		t.Fatalf("verdicts: %+v", m.Verdicts)
	}
	v := m.Verdicts[1]
	if v.Metric != "cpu_us_per_request" || v.Outcome != "worse" || v.Ratio < 1.14 || v.Ratio > 1.16 ||
		v.CI[0] <= 1 || v.CI[1] <= v.CI[0] || v.Pairs != 3 || v.PairsBBetter != 0 || v.Method != "t-log-ratio-pooled" || v.Reason == nil ||
		!(v.SD > 0) || v.DF != 10 || v.PooledFrom != 4 || v.Family != 2 {
		t.Errorf("cpu verdict: %+v", v)
	}
	if d := v.ProfileDiff; len(d) != 2 || d[0].Function != "main.spin" || d[0].BUsPerRequest != 14.6 || d[0].DeltaUsPerRequest != 14.6 || m.Verdicts[0].ProfileDiff != nil {
		t.Errorf("profile_diff: %+v", d)
	}
}

func TestRoundJSONLine(t *testing.T) {
	var out bytes.Buffer
	r := fixedComparison(t).Rounds[2]
	if err := WriteRoundJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != "round" || m["side"] != "B" || m["disturbed"] != true || m["foreign_cpu"] != 0.4 || m["seconds"] != 21.0 {
		t.Errorf("round line: %s", out.String())
	}
}

func TestComparisonsList(t *testing.T) {
	c := fixedComparison(t)
	running := store.Comparison{ID: "cmp-2", Name: "demo", Status: store.Running, Pairs: 3, A: store.Build{Ref: "main"},
		B: store.Build{Ref: "feature", Commit: "0123456789abcdef0123"}, CreatedAt: c.CreatedAt.Add(time.Hour)}
	var out bytes.Buffer
	if err := WriteComparisonsText(&out, []store.Comparison{running, c}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "comparisons.txt.golden", out.Bytes())
	out.Reset()
	if err := WriteComparisonsText(&out, nil); err != nil || out.String() != "no comparisons\n" {
		t.Errorf("empty list: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := WriteComparisonsJSON(&out, []store.Comparison{running, c}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("%d JSON lines, want 2", n)
	}
}

func TestEquivalenceLine(t *testing.T) {
	for _, tc := range []struct {
		r    equivalence.Result
		want string
	}{
		{equivalence.Result{Status: equivalence.Identical, Requests: 200}, "identical (200 requests)"},
		{equivalence.Result{}, "not run"},
		{equivalence.Result{Status: equivalence.Skipped}, "skipped"},
		{equivalence.Result{Status: equivalence.Skipped, Reason: "--equivalence off"}, "skipped (--equivalence off)"},
		{equivalence.Result{Status: equivalence.Different, Requests: 3, FirstDifference: &equivalence.Difference{
			Request: 3, Op: "get", Method: "GET", Path: "/items/1", What: "status", A: "200", B: "404"}},
			"different: request 3 (op get, GET /items/1): status: A 200, B 404"},
	} {
		if got := EquivalenceLine(tc.r); got != tc.want {
			t.Errorf("EquivalenceLine(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestSequentialLines(t *testing.T) {
	for _, tt := range []struct {
		c    store.Comparison
		want string
	}{
		{store.Comparison{Pairs: 3}, "3 pairs"},
		{store.Comparison{MaxPairs: 10}, "pairs until decided (at most 10)"},
		{store.Comparison{Pairs: 5, MaxPairs: 10, MaxDuration: 20 * time.Minute, Stopped: "max_duration"}, "5 pairs (until decided, at most 10 or 20m0s): stopped, max duration"},
	} {
		if got := PairsLine(tt.c); got != tt.want {
			t.Errorf("PairsLine(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
	l := store.Look{Pairs: 4, Undecided: []string{analysis.MetricP99Ms}, Verdicts: []analysis.Verdict{
		{Metric: analysis.MetricCPUMicrosPerReq, Primary: true, Outcome: analysis.Worse, CI: [2]float64{1.28, 1.37}, Pairs: 4, DecidedAt: 4},
		{Metric: analysis.MetricP99Ms, Primary: true, Outcome: analysis.Inconclusive, CI: [2]float64{0.94, 1.12}, Pairs: 4, Floor: 0.03},
	}}
	want := "after pair 4:\n  CPU/request: +28 % … +37 %, worse — decided after pair 4\n  p99: −6.0 % … +12 %, still spans the 3 % floor\n  undecided: p99"
	if got := strings.Join(LookLines(l), "\n"); got != want {
		t.Errorf("LookLines:\n%s\nwant\n%s", got, want)
	}
	var b bytes.Buffer
	if err := WriteLookJSON(&b, l); err != nil || !strings.HasPrefix(b.String(), `{"type":"look","pairs":4,`) {
		t.Errorf("look JSON %s, %v", b.String(), err)
	}
	if got := HistoryLine(0); !strings.HasPrefix(got, "no earlier comparison of this scenario on this host") {
		t.Errorf("HistoryLine(0) = %q", got)
	}
}
