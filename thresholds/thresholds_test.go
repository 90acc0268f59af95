package thresholds

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// win builds window index of incarnation 1 (1 s long) whose requests all
// took latencyMs, errs of them failing with 5xx.
func win(t *testing.T, index int, requests int64, latencyMs float64, errs int64) window.Window {
	t.Helper()
	h := window.NewHistogram()
	for range requests {
		window.Record(h, int64(latencyMs*1000))
	}
	b, err := window.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	w := window.Window{
		Incarnation: 1, Index: index,
		Start: t0.Add(time.Duration(index) * time.Second), End: t0.Add(time.Duration(index+1) * time.Second),
		Requests: requests, OK: requests - errs, RPS: float64(requests),
		LatencyMs: window.LatencyOf(h), Histogram: b,
	}
	w.Errors.Status5xx = errs
	op := window.OpStats{Requests: requests, OK: requests - errs, RPS: float64(requests), LatencyMs: w.LatencyMs, Histogram: b}
	op.Errors.Status5xx = errs
	w.Ops = map[string]window.OpStats{"list": op}
	return w
}

func parse(t *testing.T, yaml string) []scenarios.Threshold {
	t.Helper()
	s, err := scenarios.Parse([]byte("name: x\nops: [{name: list, request: {path: /}}, {name: get, request: {path: /x}}]\nthresholds:\n"+yaml), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s.Thresholds
}

func brief(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// TestRunScopeMergesHistograms: the run's p99 comes from the merged
// histograms. 1,000 requests at 1 ms and 5 at 100 ms have a p99 of 1 ms;
// averaging the two windows' p99s would say 50.5 ms and fail the gate.
func TestRunScopeMergesHistograms(t *testing.T) {
	ws := []window.Window{win(t, 0, 1000, 1, 0), win(t, 1, 5, 100, 0)}
	rs, err := Evaluate(parse(t, "  - {metric: p99_ms, max: 10}\n  - {metric: max_ms, max: 10}\n"), ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := brief(rs)
	want := []string{"p99_ms max 10: 1 ok", "max_ms max 10: 100.0 FAILED"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results\n got %q\nwant %q", got, want)
	}
}

func TestRunScopeMetrics(t *testing.T) {
	ws := []window.Window{
		win(t, 0, 100, 500, 100), // warm-up: all slow and failing
		win(t, 1, 1000, 2, 10),
		win(t, 2, 1000, 4, 30),
	}
	ws[1].Dropped, ws[2].Dropped = 0, 20
	cpu := func(v float64) *float64 { return &v }
	bytes := func(v int64) *int64 { return &v }
	ws[1].Probes = window.Probes{CPUMicrosPerRequest: cpu(100), RSSBytes: bytes(50e6), HeapBytes: bytes(10e6),
		AllocBytesPerRequest: cpu(1000), GCPer1kRequests: cpu(2),
		Database: &window.Database{RowsReadPerRequest: 2}}
	ws[2].Probes = window.Probes{CPUMicrosPerRequest: cpu(300), RSSBytes: bytes(40e6),
		AllocBytesPerRequest: cpu(5000), GCPer1kRequests: cpu(6),
		Database: &window.Database{RowsReadPerRequest: 4}}
	ths := parse(t, `  - {metric: p50_ms, max: 3}
  - {metric: p50_ms, op: list, max: 3}
  - {metric: rps, min: 1500}
  - {metric: rps, op: list, min: 1500}
  - {metric: error_rate, max: 0.01}
  - {metric: error_rate, op: list, max: 0.05}
  - {metric: dropped_rate, max: 0.01}
  - {metric: cpu_us_per_request, max: 150}
  - {metric: rss_bytes, max: 45e6}
  - {metric: heap_bytes, max: 45e6}
  - {metric: rows_read_per_request, max: 3}
  - {metric: alloc_bytes_per_request, max: 2500}
  - {metric: gc_per_1k_requests, max: 5}
  - {metric: p99_ms, op: get, max: 3}
`)
	rs, err := Evaluate(ths, ws, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := brief(rs)
	want := []string{
		"p50_ms max 3: 2 ok",
		"p50_ms{op=list} max 3: 2 ok",
		"rps min 1500: 1000 FAILED", // 2,000 requests over 2 s (the warm-up window is left out)
		"rps{op=list} min 1500: 1000 FAILED",
		"error_rate max 0.01: 0.02000 FAILED", // 40 / 2,000
		"error_rate{op=list} max 0.05: 0.02000 ok",
		"dropped_rate max 0.01: 0.009901 ok",            // 20 / 2,020
		"cpu_us_per_request max 150: 200 FAILED",        // (100×1000 + 300×1000) / 2000
		"rss_bytes max 45000000: 50000000 FAILED",       // the highest reading
		"heap_bytes max 45000000: 10000000 ok",          // only window 1 read it
		"rows_read_per_request max 3: 3 ok",             // (2×1000 + 4×1000) / 2000
		"alloc_bytes_per_request max 2500: 3000 FAILED", // (1000×1000 + 5000×1000) / 2000
		"gc_per_1k_requests max 5: 4 ok",
		"p99_ms{op=get} max 3: no value (op get sent no requests) FAILED",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results\n got %q\nwant %q", got, want)
	}
}

func TestRunScopeWithoutReadings(t *testing.T) {
	ws := []window.Window{win(t, 0, 10, 1, 0)}
	rs, err := Evaluate(parse(t, "  - {metric: cpu_us_per_request, max: 1}\n  - {metric: heap_bytes, max: 1}\n  - {metric: rows_read_per_request, max: 1}\n  - {metric: alloc_bytes_per_request, max: 1}\n"), ws, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"cpu_us_per_request max 1: no value (no process probe readings) FAILED",
		"heap_bytes max 1: no value (no heap probe readings) FAILED",
		"rows_read_per_request max 1: no value (no database probe readings) FAILED",
		"alloc_bytes_per_request max 1: no value (no Go runtime counter readings) FAILED",
	}
	if got := brief(rs); !reflect.DeepEqual(got, want) {
		t.Errorf("results\n got %q\nwant %q", got, want)
	}
	rs, _ = Evaluate(parse(t, "  - {metric: rps, min: 1}\n"), nil, 0)
	if got := brief(rs); !reflect.DeepEqual(got, []string{"rps min 1: no value (no windows after warm-up) FAILED"}) {
		t.Errorf("no windows: %q", got)
	}
}

// latencies builds consecutive windows 0.. with these p50s (ms).
func latencies(t *testing.T, ms ...float64) []window.Window {
	ws := make([]window.Window, len(ms))
	for i, v := range ms {
		ws[i] = win(t, i, 10, v, 0)
	}
	return ws
}

func TestWindowScope(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		ws     []window.Window
		warmup time.Duration
		want   string
	}{
		{"three in a row", "{metric: p50_ms, max: 10, scope: window, windows: 3}", latencies(t, 1, 20, 20, 1, 30, 40, 50, 60), 0,
			"p50_ms max 10 (3 windows in a row): 50.02 in window 6 FAILED"},
		{"never three in a row: the worst window", "{metric: p50_ms, max: 10, scope: window, windows: 3}", latencies(t, 20, 20, 1, 40, 20, 1), 0,
			"p50_ms max 10 (3 windows in a row): 40.03 in window 3 ok"},
		{"any window", "{metric: p50_ms, max: 10, scope: window}", latencies(t, 1, 2, 11, 3), 0,
			"p50_ms max 10 (any window): 11.01 in window 2 FAILED"},
		{"min", "{metric: rps, min: 5, scope: window}", latencies(t, 1, 2, 3), 0,
			"rps min 5 (any window): 10 in window 0 ok"},
		{"warm-up excluded", "{metric: p50_ms, max: 10, scope: window}", latencies(t, 100, 100, 1, 2), 2 * time.Second,
			"p50_ms max 10 (any window): 2 in window 3 ok"},
		{"no readings", "{metric: heap_bytes, max: 10, scope: window}", latencies(t, 1), 0,
			"heap_bytes max 10 (any window): no value (no heap probe readings) FAILED"},
		{"GC cycles", "{metric: gc_per_1k_requests, max: 10, scope: window, windows: 2}", gcRates(t, 5, 12, 8, 12, 15), 0,
			"gc_per_1k_requests max 10 (2 windows in a row): 15 in window 5 FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Evaluate(parse(t, "  - "+tt.yaml+"\n"), tt.ws, tt.warmup)
			if err != nil {
				t.Fatal(err)
			}
			if got := rs[0].String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// gcRates are latencies(1 ms...) windows with these GC cycles per 1,000
// requests; the first window has no reading (no previous scrape).
func gcRates(t *testing.T, rates ...float64) []window.Window {
	ms := make([]float64, len(rates)+1)
	for i := range ms {
		ms[i] = 1
	}
	ws := latencies(t, ms...)
	for i, r := range rates {
		ws[i+1].Probes.GCPer1kRequests = &r
	}
	return ws
}

// TestWindowScopeSkipsAndResets: gaps and windows without a reading are
// passed over (a streak goes on across them); a new incarnation starts a new
// streak, with its own warm-up.
func TestWindowScopeSkipsAndResets(t *testing.T) {
	th := parse(t, "  - {metric: p50_ms, max: 10, scope: window, windows: 2}\n")
	ws := latencies(t, 20, 20, 20)
	gap := window.Window{Incarnation: 1, Index: 1, Start: ws[0].End, End: ws[1].End, Gap: true}
	empty := win(t, 2, 0, 0, 0)
	passedOver := []window.Window{ws[0], gap, empty}
	passedOver = append(passedOver, win(t, 3, 10, 20, 0))
	rs, _ := Evaluate(th, passedOver, 0)
	if got, want := rs[0].String(), "p50_ms max 10 (2 windows in a row): 20.02 in window 3 FAILED"; got != want {
		t.Errorf("across a gap and an empty window:\n got  %s\nwant %s", got, want)
	}

	second := win(t, 1, 10, 20, 0)
	second.Incarnation = 2
	second.Start = t0.Add(time.Hour)
	rs, _ = Evaluate(th, []window.Window{ws[0], second}, 0)
	if got, want := rs[0].String(), "p50_ms max 10 (2 windows in a row): 20.02 in window 0 ok"; got != want {
		t.Errorf("across incarnations:\n got  %s\nwant %s", got, want)
	}
	third := second
	third.Index, third.Start = 2, second.Start.Add(time.Second)
	rs, _ = Evaluate(th, []window.Window{ws[0], second, third}, 0)
	if got, want := rs[0].String(), "p50_ms max 10 (2 windows in a row): 20.02 in window 2 of incarnation 2 FAILED"; got != want {
		t.Errorf("within incarnation 2:\n got  %s\nwant %s", got, want)
	}
}

// TestWatcherAgreesWithEvaluate: fed window by window, the watcher reports
// each failing threshold once, at the window Evaluate names.
func TestWatcherAgreesWithEvaluate(t *testing.T) {
	ths := parse(t, `  - {metric: p50_ms, max: 10, scope: window, windows: 2, abort: true}
  - {metric: error_rate, max: 0.2, scope: window}
  - {metric: p50_ms, max: 1}
`)
	ws := latencies(t, 1, 20, 1, 20, 20, 20, 20)
	ws[5].Errors.Status5xx, ws[5].OK = 5, 5
	w := NewWatcher(ths, 0)
	if w.Empty() {
		t.Fatal("watcher is empty")
	}
	var events []string
	for _, x := range ws {
		for _, r := range w.Observe(x) {
			events = append(events, fmt.Sprintf("%d: %s", x.Index, r))
		}
	}
	want := []string{
		"4: p50_ms max 10 (2 windows in a row): 20.02 in window 4 FAILED",
		"5: error_rate max 0.2 (any window): 0.5000 in window 5 FAILED",
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("watcher events\n got %q\nwant %q", events, want)
	}
	rs, _ := Evaluate(ths, ws, 0)
	for i, e := range want {
		if got := rs[i].String(); !strings.HasSuffix(e, got) {
			t.Errorf("Evaluate says %q, the watcher %q", got, e)
		}
	}
	if !rs[0].Abort || rs[0].Window == nil || *rs[0].Window != 4 || rs[0].Scope != "window" || rs[0].Windows != 2 {
		t.Errorf("result fields = %+v", rs[0])
	}
	if NewWatcher(parse(t, "  - {metric: rps, min: 1}\n"), 0).Empty() != true {
		t.Error("a watcher of run-scoped thresholds is not empty")
	}
}

func TestJudge(t *testing.T) {
	v := 1.0
	ok := Result{Threshold: "rps min 1", OK: true, Value: &v}
	bad := Result{Threshold: "p99_ms max 1", Value: &v}
	bad.Value = new(float64)
	*bad.Value = 2
	warn := analysis.Finding{Kind: "leak", Severity: analysis.Warning}
	crit := analysis.Finding{Kind: "collapse", Severity: analysis.Critical}
	info := analysis.Finding{Kind: "insufficient_data", Severity: analysis.Info}
	tests := []struct {
		name   string
		rs     []Result
		fs     []analysis.Finding
		failOn analysis.Severity
		want   string
	}{
		{"all ok", []Result{ok}, []analysis.Finding{warn, info}, "", "passed"},
		{"no thresholds", nil, nil, analysis.Warning, "passed"},
		{"threshold", []Result{ok, bad}, nil, "", "failed: threshold p99_ms max 1 failed: 2"},
		{"warning on warning", nil, []analysis.Finding{info, warn, crit}, analysis.Warning,
			"failed: warning finding leak (--fail-on warning); critical finding collapse (--fail-on warning)"},
		{"warning on critical", nil, []analysis.Finding{info, warn}, analysis.Critical, "passed"},
		{"info never counts", nil, []analysis.Finding{info}, analysis.Info, "passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Judge(tt.rs, tt.fs, tt.failOn)
			if got := g.String(); got != tt.want {
				t.Errorf("Judge = %q, want %q", got, tt.want)
			}
			if (g.Outcome() == Passed) != g.Passed {
				t.Errorf("Outcome %s disagrees with Passed %v", g.Outcome(), g.Passed)
			}
		})
	}
}

func TestParseFailOn(t *testing.T) {
	for in, want := range map[string]analysis.Severity{"": "", "none": "", "warning": analysis.Warning, "critical": analysis.Critical} {
		if got, err := ParseFailOn(in); err != nil || got != want {
			t.Errorf("ParseFailOn(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"info", "Warning", "error"} {
		if _, err := ParseFailOn(in); err == nil {
			t.Errorf("ParseFailOn(%q) accepted it", in)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 3: "3", 2310: "2310", 52430000: "52430000", 182.43: "182.4", 0.0123: "0.01230",
		1.23456: "1.235", 2310.7: "2311", 1e-7: "1e-07", math.Inf(1): "+Inf",
	} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}
