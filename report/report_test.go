package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// hist returns an encoded histogram of n latencies per value (µs).
func hist(t testing.TB, n int, micros ...int64) []byte {
	t.Helper()
	h := window.NewHistogram()
	for _, us := range micros {
		for i := 0; i < n; i++ {
			window.Record(h, us)
		}
	}
	b, err := window.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func latency(t testing.TB, b []byte) window.Latency {
	t.Helper()
	h, err := window.DecodeHistogram(b)
	if err != nil {
		t.Fatal(err)
	}
	return window.LatencyOf(h)
}

// fixedWindows are three 10 s windows of a two-op run: a quiet one, one with
// errors and drops, and a gap.
func fixedWindows(t testing.TB) []window.Window {
	t.Helper()
	mk := func(idx int, getUs, postUs []int64, n int, errs window.Errors, dropped int64) window.Window {
		get := hist(t, n, getUs...)
		post := hist(t, n, postUs...)
		all := hist(t, n, append(slices.Clone(getUs), postUs...)...)
		getReq, postReq := int64(n*len(getUs)), int64(n*len(postUs))
		postOps := window.OpStats{Requests: postReq, OK: postReq - errs.Total(), Errors: errs, RPS: float64(postReq) / 10, LatencyMs: latency(t, post), Histogram: post}
		return window.Window{
			RunID: "run-1", Index: idx,
			Start: t0.Add(time.Duration(idx) * 10 * time.Second), End: t0.Add(time.Duration(idx+1) * 10 * time.Second),
			Requests: getReq + postReq, OK: getReq + postReq - errs.Total(), Errors: errs, Dropped: dropped,
			RPS: float64(getReq+postReq) / 10, VUs: 4, LatencyMs: latency(t, all), Histogram: all,
			Ops: map[string]window.OpStats{
				"get":    {Requests: getReq, OK: getReq, RPS: float64(getReq) / 10, LatencyMs: latency(t, get), Histogram: get},
				"create": postOps,
			},
		}
	}
	return []window.Window{
		mk(0, []int64{800, 1200, 2500}, []int64{4000, 9000}, 100, window.Errors{}, 0),
		mk(1, []int64{900, 1500, 30000}, []int64{5000, 250000}, 70, window.Errors{Status5xx: 12, Timeout: 3}, 7),
		{RunID: "run-1", Index: 2, Start: t0.Add(20 * time.Second), End: t0.Add(30 * time.Second), Gap: true},
	}
}

// liveWriter is how a drive prints as it goes: TextWriter or JSONWriter.
type liveWriter interface {
	Window(window.Window) error
	Summary(window.Summary) error
}

// writeLive writes ws through w as a drive would, then the summary of
// their totals, and returns that summary.
func writeLive(t *testing.T, w liveWriter, ws []window.Window) window.Summary {
	t.Helper()
	var tot Totals
	for _, win := range ws {
		if err := w.Window(win); err != nil {
			t.Fatal(err)
		}
		if err := tot.Add(win); err != nil {
			t.Fatal(err)
		}
	}
	sum := tot.Summary()
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestTextGolden(t *testing.T) {
	ws := fixedWindows(t)
	var out bytes.Buffer
	writeLive(t, NewText(&out, TextOptions{}), ws)
	golden.Check(t, "drive.txt.golden", out.Bytes())
}

func TestJSONGolden(t *testing.T) {
	ws := fixedWindows(t)
	cpu := 85.5
	ws[0].Probes.CPUMicrosPerRequest = &cpu // probes appear when present
	var out bytes.Buffer
	writeLive(t, NewJSON(&out), ws)
	golden.Check(t, "drive.ndjson.golden", out.Bytes())
}

// The JSON contract: a window line has exactly the required keys plus only
// the optional ones that are set; ops have the same latency shape.
func TestJSONShape(t *testing.T) {
	required := []string{"dropped", "end", "errors", "index", "latency_ms", "ops", "requests", "rps", "start"}
	latencyKeys := []string{"max", "p50", "p90", "p95", "p99", "p999"}
	classes := []string{"4xx", "5xx", "interrupted", "other", "refused", "reset", "timeout", "unexpected"}
	tests := []struct {
		name  string
		w     window.Window
		extra []string
	}{
		{"plain", fixedWindows(t)[0], nil},
		{"gap", fixedWindows(t)[2], []string{"gap"}},
		{"incarnation and skipped", func() window.Window {
			w := fixedWindows(t)[1]
			w.Incarnation, w.Skipped = 2, 5
			return w
		}(), []string{"incarnation", "skipped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := NewJSON(&out).Window(tt.w); err != nil {
				t.Fatal(err)
			}
			if bytes.Count(out.Bytes(), []byte("\n")) != 1 {
				t.Fatalf("want exactly one line, got %q", out.String())
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(out.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			want := slices.Sorted(slices.Values(append(slices.Clone(required), tt.extra...)))
			if got := keys(m); !slices.Equal(got, want) {
				t.Errorf("keys = %v, want %v", got, want)
			}
			var errs map[string]int64
			if err := json.Unmarshal(m["errors"], &errs); err != nil {
				t.Fatal(err)
			}
			if got := keys(errs); !slices.Equal(got, classes) {
				t.Errorf("errors keys = %v, want %v", got, classes)
			}
			var lat map[string]float64
			if err := json.Unmarshal(m["latency_ms"], &lat); err != nil {
				t.Fatal(err)
			}
			if got := keys(lat); !slices.Equal(got, latencyKeys) {
				t.Errorf("latency_ms keys = %v, want %v", got, latencyKeys)
			}
			var ops map[string]map[string]json.RawMessage
			if err := json.Unmarshal(m["ops"], &ops); err != nil {
				t.Fatal(err)
			}
			for name, o := range ops {
				if got, want := keys(o), []string{"errors", "latency_ms", "requests", "rps"}; !slices.Equal(got, want) {
					t.Errorf("op %s keys = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

// Totals must agree with window.Merge exactly, whatever the order of arrival.
func TestTotalsMatchesMerge(t *testing.T) {
	ws := fixedWindows(t)
	want, err := window.Merge(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		var tot Totals
		for _, i := range order {
			if err := tot.Add(ws[i]); err != nil {
				t.Fatal(err)
			}
		}
		if got := tot.Summary(); !reflect.DeepEqual(got, want) {
			t.Errorf("order %v: Totals = %+v\nwant Merge = %+v", order, got, want)
		}
	}
	var empty Totals
	wantEmpty, _ := window.Merge(nil)
	if got := empty.Summary(); !reflect.DeepEqual(got, wantEmpty) {
		t.Errorf("empty Totals = %+v, want %+v", got, wantEmpty)
	}
}

func TestTotalsBadHistogramKeepsCounts(t *testing.T) {
	w := fixedWindows(t)[0]
	w.Histogram = []byte("not a histogram")
	var tot Totals
	if err := tot.Add(w); err == nil {
		t.Error("Add of a window with a corrupt histogram: no error")
	}
	if got := tot.Summary().Requests; got != w.Requests {
		t.Errorf("requests after a corrupt histogram = %d, want %d (counts kept)", got, w.Requests)
	}
}

func fixedRun() store.Run {
	return store.Run{
		ID: "run-1", Name: "hello", Kind: "drive", Status: store.Cancelled, Reason: "interrupted",
		TargetURL: "http://127.0.0.1:8080", CreatedAt: t0.Add(-time.Second), StartedAt: t0, EndedAt: t0.Add(30 * time.Second),
	}
}

func fixedFindings() []analysis.Finding {
	return []analysis.Finding{
		{Kind: analysis.KindMissingEvidence, Severity: analysis.Info, Summary: "no heap readings: leak detection skipped",
			Evidence: analysis.Evidence{Missing: []string{"heap_bytes"}}},
		{Kind: analysis.KindLeak, Severity: analysis.Critical, Summary: "post-GC heap grows 12 MB/h", Incarnation: 1,
			Evidence: analysis.Evidence{FirstWindow: 3, LastWindow: 40, Slope: 1.2e7, SlopeUnit: "bytes/hour", PerKRequests: 2048, PValue: 0.0004}},
		{Kind: analysis.KindCollapse, Severity: analysis.Warning, Summary: "throughput fell 5.4x as items grew",
			Evidence: analysis.Evidence{Table: "items", Before: 1950, After: 360, Unit: "req/s", Correlation: -0.97,
				Notes: map[string]float64{"rows_per_s": 400, "a_rows": 1}}},
	}
}

// fixedNotifications are a scheduled run's: one sent, one that failed.
func fixedNotifications() []store.Notification {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	return []store.Notification{
		{RunID: "r1", URL: "https://hooks.example/longhaul", Events: []string{"findings"}, OK: true, Attempts: 2, At: at},
		{RunID: "r1", URL: "https://chat.example/webhook", Events: []string{"findings", "gate_failed"}, Attempts: 3, Error: "503 Service Unavailable", At: at.Add(time.Second)},
	}
}

func TestRunTextGolden(t *testing.T) {
	rep, err := NewRunReport(fixedRun(), fixedWindows(t), fixedFindings())
	if err != nil {
		t.Fatal(err)
	}
	rep.Notifications = fixedNotifications()
	var out bytes.Buffer
	if err := WriteRunText(&out, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run.txt.golden", out.Bytes())
}

func TestRunJSONGolden(t *testing.T) {
	rep, err := NewRunReport(fixedRun(), fixedWindows(t), fixedFindings())
	if err != nil {
		t.Fatal(err)
	}
	rep.Notifications = fixedNotifications()
	var out bytes.Buffer
	if err := WriteRunJSON(&out, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run.ndjson.golden", out.Bytes())
	// Every line is an object; the types come in order.
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct{ Type string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		types = append(types, m.Type)
	}
	want := []string{"run", "", "", "", "summary", "finding", "finding", "finding", "notification", "notification", "gate"}
	if !slices.Equal(types, want) {
		t.Errorf("line types = %q, want %q", types, want)
	}
}

// gatedReport is fixedRun completed with --fail-on warning and three
// thresholds: one held, one failed in a window, one without a reading.
func gatedReport(t *testing.T) RunReport {
	t.Helper()
	run := fixedRun()
	run.Status, run.Reason, run.FailOn = store.Completed, "", "warning"
	rep, err := NewRunReport(run, fixedWindows(t), fixedFindings())
	if err != nil {
		t.Fatal(err)
	}
	p99, p50, idx := 250.111, 5.003, 1
	rep.SetThresholds([]thresholds.Result{
		{Threshold: "p99_ms{op=get} max 300", Metric: "p99_ms", Op: "get", Bound: "max", Limit: 300, Value: &p99, OK: true, Scope: "run"},
		{Threshold: "p50_ms max 5 (any window)", Metric: "p50_ms", Bound: "max", Limit: 5, Value: &p50, Scope: "window", Windows: 1, Window: &idx, Incarnation: 1},
		{Threshold: "cpu_us_per_request max 2000", Metric: "cpu_us_per_request", Bound: "max", Limit: 2000, Scope: "run", Note: "no process probe readings"},
	})
	return rep
}

func TestRunGatedGolden(t *testing.T) {
	rep := gatedReport(t)
	if rep.Gate == nil || rep.Gate.Passed {
		t.Fatalf("gate = %+v, want failed", rep.Gate)
	}
	var text, js bytes.Buffer
	if err := WriteRunText(&text, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run-gated.txt.golden", text.Bytes())
	if err := WriteRunJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run-gated.ndjson.golden", js.Bytes())
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	var g struct {
		Type       string
		Gate       string
		Thresholds []map[string]any
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &g); err != nil {
		t.Fatal(err)
	}
	if g.Type != "gate" || g.Gate != "failed" || len(g.Thresholds) != 3 {
		t.Fatalf("gate line = %+v", g)
	}
	for _, key := range []string{"metric", "op", "limit", "value", "ok", "window"} {
		if _, ok := g.Thresholds[0][key]; !ok {
			t.Errorf("threshold object has no %q: %v", key, g.Thresholds[0])
		}
	}
}

// TestJudgeRun: a run that did not complete fails the gate; one still
// going has none; Run.FailOn decides whether findings count.
func TestJudgeRun(t *testing.T) {
	fs := fixedFindings()
	run := fixedRun()
	for _, tt := range []struct {
		status store.Status
		failOn string
		want   string
	}{
		{store.Completed, "", "passed"},
		{store.Completed, "critical", "failed: critical finding leak (--fail-on critical)"},
		{store.Failed, "", "failed: the run failed"},
		{store.Running, "", "none"},
	} {
		run.Status, run.FailOn = tt.status, tt.failOn
		got := "none"
		if g, ok := JudgeRun(run, nil, fs); ok {
			got = g.String()
		}
		if got != tt.want {
			t.Errorf("%s --fail-on %q: gate %q, want %q", tt.status, tt.failOn, got, tt.want)
		}
	}
}

func TestRunsGolden(t *testing.T) {
	running := fixedRun()
	running.ID, running.Status, running.Reason, running.EndedAt = "run-2", store.Running, "", time.Time{}
	pending := store.Run{ID: "run-3", Name: "parse-mix", Kind: "soak", Status: store.Pending, CreatedAt: t0}
	failed := fixedRun()
	failed.ID, failed.Status, failed.Reason = "run-4", store.Failed, "target exited: status 1\nstack trace..."
	runs := []store.Run{pending, running, failed}
	now := t0.Add(time.Hour + 2*time.Minute + 3*time.Second)

	var text, js bytes.Buffer
	if err := WriteRunsText(&text, runs, now); err != nil {
		t.Fatal(err)
	}
	if err := WriteRunsText(&text, nil, now); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "runs.txt.golden", text.Bytes())
	if err := WriteRunsJSON(&js, runs); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "runs.ndjson.golden", js.Bytes())
}

func TestFindingsText(t *testing.T) {
	tests := []struct {
		name string
		fs   []analysis.Finding
		want string
	}{
		{"none", nil, "no findings\n"},
		{"bare", []analysis.Finding{{Kind: "error_surge", Severity: analysis.Warning, Summary: "5xx rose to 12%"}},
			"findings:\n  warning error_surge: 5xx rose to 12%\n"},
		{"one window", []analysis.Finding{{Kind: "throughput_limit", Severity: analysis.Info, Summary: "flat at 2k req/s",
			Evidence: analysis.Evidence{FirstWindow: 7, LastWindow: 7}}},
			"findings:\n  info throughput_limit: flat at 2k req/s\n      window 7\n"},
		{"the wall", []analysis.Finding{{Kind: "throughput_limit", Severity: analysis.Info, Summary: "a single-threaded wall",
			Evidence: analysis.Evidence{FirstWindow: 3, LastWindow: 9, Cause: analysis.CauseSingleThread, Thread: "node",
				Notes: map[string]float64{"hottest_thread_busy": 0.99, "driver_wait_p50_share": 0.04}}}},
			"findings:\n  info throughput_limit: a single-threaded wall\n      windows 3-9; cause single thread; busiest thread node; driver wait p50 share 4.0 %; hottest thread busy 0.99\n"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		WriteFindings(&out, tt.fs)
		if got := out.String(); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestClock(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0:00:00"},
		{10 * time.Second, "0:00:10"},
		{time.Hour + 2*time.Minute + 3*time.Second, "1:02:03"},
		{26 * time.Hour, "26:00:00"},
		{1500 * time.Millisecond, "0:00:01.500"},
		{1234567 * time.Microsecond, "0:00:01.235"},
		{-2 * time.Second, "-0:00:02"},
	}
	for _, tt := range tests {
		if got := clock(tt.d); got != tt.want {
			t.Errorf("clock(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestMs(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0.000"}, {0.1234, "0.123"}, {9.9994, "9.999"}, {10.015, "10.02"}, {123.45, "123.5"}, {60000, "60000"},
	}
	for _, tt := range tests {
		if got := ms(tt.v); got != tt.want {
			t.Errorf("ms(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Format
		wantErr bool
	}{{"text", Text, false}, {"json", JSON, false}, {"yaml", "", true}, {"", "", true}} {
		got, err := ParseFormat(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestRunTextNamesTheSchedule(t *testing.T) {
	rep, err := NewRunReport(store.Run{ID: "r1", Name: "api", Kind: "soak", Status: store.Completed, Schedule: "nightly", Commit: "0123abcd"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteRunText(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"schedule: nightly (longhaul history nightly)\n", "commit:  0123abcd\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteRunsText(&b, []store.Run{rep.Run}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "soak (nightly)") {
		t.Errorf("runs table lacks the schedule:\n%s", b.String())
	}
}

// TestPartialWindowLine: a window cut short says so on its line.
func TestPartialWindowLine(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	w := NewText(&b, TextOptions{})
	for i, partial := range []bool{false, true} {
		s := start.Add(time.Duration(i) * 10 * time.Second)
		end := s.Add(10 * time.Second)
		if partial {
			end = s.Add(45 * time.Millisecond)
		}
		if err := w.Window(window.Window{Index: i, Start: s, End: end, Requests: 10, OK: 10, Partial: partial}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || strings.Contains(lines[1], "partial") || !strings.Contains(lines[2], "partial: cut short, left out of the findings") {
		t.Errorf("got\n%s\nwant window 1 (only) marked partial", b.String())
	}
	if !strings.HasPrefix(strings.TrimSpace(lines[2]), "1 ") {
		t.Errorf("line %q does not start with its window index", lines[2])
	}
}
