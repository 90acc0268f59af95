package scenarios

import (
	"encoding/json"
	"reflect"
	"testing"
)

func f64(v float64) *float64 { return &v }

func TestParseThresholds(t *testing.T) {
	s, err := Parse([]byte(`name: x
ops:
  - {name: list, request: {path: /items}}
  - {name: get, request: {path: /items/1}}
thresholds:
  - {metric: p99_ms, op: list, max: 250}
  - {metric: error_rate, max: 0.01}
  - {metric: rps, min: 500}
  - {metric: cpu_us_per_request, max: 2000, scope: window, windows: 3, abort: true}
  - metric: heap_bytes
    max: 2.5e8
    scope: window
`), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Threshold{
		{Metric: "p99_ms", Op: "list", Max: f64(250), Scope: ScopeRun, Line: 6},
		{Metric: "error_rate", Max: f64(0.01), Scope: ScopeRun, Line: 7},
		{Metric: "rps", Min: f64(500), Scope: ScopeRun, Line: 8},
		{Metric: "cpu_us_per_request", Max: f64(2000), Scope: ScopeWindow, Windows: 3, Abort: true, Line: 9},
		{Metric: "heap_bytes", Max: f64(2.5e8), Scope: ScopeWindow, Windows: 1, Line: 10},
	}
	if !reflect.DeepEqual(s.Thresholds, want) {
		t.Errorf("thresholds\n got %+v\nwant %+v", s.Thresholds, want)
	}
	strs := []string{
		"p99_ms{op=list} max 250", "error_rate max 0.01", "rps min 500",
		"cpu_us_per_request max 2000 (3 windows in a row)", "heap_bytes max 250000000 (any window)",
	}
	for i, th := range s.Thresholds {
		if got := th.String(); got != strs[i] {
			t.Errorf("String() = %q, want %q", got, strs[i])
		}
	}
	// The scenario travels as JSON (workers re-parse the YAML, but Go users
	// may not): the thresholds survive a round trip and validate again.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Scenario
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range back.Thresholds {
		back.Thresholds[i].Line = want[i].Line
	}
	if !reflect.DeepEqual(back.Thresholds, want) {
		t.Errorf("after a JSON round trip\n got %+v\nwant %+v", back.Thresholds, want)
	}
}

func TestBreached(t *testing.T) {
	tests := []struct {
		th    Threshold
		value float64
		want  bool
	}{
		{Threshold{Max: f64(10)}, 10, false},
		{Threshold{Max: f64(10)}, 10.001, true},
		{Threshold{Min: f64(10)}, 10, false},
		{Threshold{Min: f64(10)}, 9.99, true},
	}
	for _, tt := range tests {
		if got := tt.th.Breached(tt.value); got != tt.want {
			t.Errorf("%v Breached(%v) = %v, want %v", tt.th, tt.value, got, tt.want)
		}
	}
}

func TestThresholdErrors(t *testing.T) {
	const head = "name: x\nops: [{name: list, request: {path: /}}, {name: get, request: {path: /}}]\nthresholds:\n"
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"not a list", "name: x\nops: [{name: a, request: {path: /}}]\nthresholds: {metric: rps}\n", []string{
			"3: want a list, got a mapping"}},
		{"metric", head + "  - {max: 1}\n  - {metric: p98_ms, max: 1}\n", []string{
			"4: threshold 1: metric is required (one of p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, rps, error_rate, dropped_rate, cpu_us_per_request, alloc_bytes_per_request, gc_per_1k_requests, rss_bytes, heap_bytes, rows_read_per_request)",
			`5: threshold 2: metric "p98_ms" is not one of p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, rps, error_rate, dropped_rate, cpu_us_per_request, alloc_bytes_per_request, gc_per_1k_requests, rss_bytes, heap_bytes, rows_read_per_request`}},
		{"unknown key", head + "  - {metric: rps, min: 1, per: list}\n", []string{
			`4: unknown key "per" in a threshold (known keys: metric, op, max, min, scope, windows, abort)`}},
		{"op", head + "  - {metric: p99_ms, op: lst, max: 1}\n  - {metric: rss_bytes, op: list, max: 1}\n  - {metric: dropped_rate, op: get, max: 0.1}\n", []string{
			`4: threshold 1 (p99_ms): op "lst" is not an op of this scenario (list, get)`,
			"5: threshold 2 (rss_bytes): rss_bytes is measured for the whole target, not per op; remove op",
			"6: threshold 3 (dropped_rate): dropped_rate is measured for the whole target, not per op; remove op"}},
		{"limits", head + "  - {metric: p99_ms}\n  - {metric: p99_ms, max: 2, min: 1}\n  - {metric: rps, min: -1}\n  - {metric: error_rate, max: 5}\n  - {metric: p50_ms, max: .inf}\n  - {metric: p50_ms, max: lots}\n", []string{
			"4: threshold 1 (p99_ms): needs max or min (e.g. max: 250)",
			"5: threshold 2 (p99_ms): has both max and min; write two thresholds",
			"6: threshold 3 (rps): min must be ≥ 0, got -1",
			"7: threshold 4 (error_rate): max is a fraction (0..1, e.g. 0.01 for 1 %), got 5",
			"8: threshold 5 (p50_ms): max must be a finite number, got +Inf",
			"9: want a number, got a string (lots)"}},
		{"scope", head + "  - {metric: rps, min: 1, scope: forever}\n  - {metric: rps, min: 1, windows: 3}\n  - {metric: rps, min: 1, scope: window, windows: 0}\n  - {metric: rps, min: 1, abort: true}\n", []string{
			`4: threshold 1 (rps): scope "forever" is not one of run, window`,
			"5: threshold 2 (rps): windows counts consecutive windows; it needs scope: window",
			"6: threshold 3 (rps): windows must be ≥ 1, got 0",
			"7: threshold 4 (rps): abort: true needs scope: window (a run-scoped threshold is only known when the run ends)"}},
		{"multi-line threshold", head + "  - metric: error_rate\n    max: 2\n    scope: run\n    windows: 2\n", []string{
			"5: threshold 1 (error_rate): max is a fraction (0..1, e.g. 0.01 for 1 %), got 2",
			"7: threshold 1 (error_rate): windows counts consecutive windows; it needs scope: window"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want errors %q", s.Thresholds, tt.want)
			}
			if got := lines(t, err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestThresholdErrorsWithoutYAML: a scenario built in Go reports its
// thresholds' problems at their recorded lines.
func TestThresholdErrorsWithoutYAML(t *testing.T) {
	s := Scenario{Name: "x", Ops: []Op{{Step: Step{Name: "a", Request: Request{Path: "/"}}}},
		Thresholds: []Threshold{{Metric: "rps", Line: 12}, {Metric: "p50_ms", Max: f64(1), Abort: true, Line: 13}}}
	got := lines(t, s.Validate())
	want := []string{
		"12: threshold 1 (rps): needs max or min (e.g. max: 250)",
		"13: threshold 2 (p50_ms): abort: true needs scope: window (a run-scoped threshold is only known when the run ends)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Validate errors\n got %q\nwant %q", got, want)
	}
}

func TestThresholdMetricsDocumented(t *testing.T) {
	for _, m := range ThresholdMetrics {
		if m.Meaning == "" {
			t.Errorf("metric %s has no meaning", m.Name)
		}
		if got, ok := LookupThresholdMetric(m.Name); !ok || got.Name != m.Name {
			t.Errorf("LookupThresholdMetric(%q) = %v, %v", m.Name, got, ok)
		}
	}
	if _, ok := LookupThresholdMetric("p98_ms"); ok {
		t.Error("LookupThresholdMetric(p98_ms) found something")
	}
}
