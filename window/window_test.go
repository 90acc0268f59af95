package window

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// encoded returns an encoded histogram of n latencies of us microseconds.
func encoded(t *testing.T, us int64, n int) []byte {
	t.Helper()
	h := NewHistogram()
	for range n {
		Record(h, us)
	}
	b, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHistogramRoundTrip(t *testing.T) {
	h := NewHistogram()
	for us := int64(1); us <= 100_000; us *= 3 {
		Record(h, us)
	}
	Record(h, 0)            // clamped up to MinMicros
	Record(h, 10*MaxMicros) // clamped down to MaxMicros
	b, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHistogram(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalCount() != h.TotalCount() || LatencyOf(got) != LatencyOf(h) {
		t.Errorf("decoded %d values %+v, want %d %+v", got.TotalCount(), LatencyOf(got), h.TotalCount(), LatencyOf(h))
	}
	if max := LatencyOf(got).Max; math.Abs(max-float64(MaxMicros)/1000) > float64(MaxMicros)/1000*1e-3 {
		t.Errorf("max %.1f ms, want the clamp %d µs", max, MaxMicros)
	}
	empty, err := DecodeHistogram(nil)
	if err != nil || empty.TotalCount() != 0 || LatencyOf(empty) != (Latency{}) {
		t.Errorf("DecodeHistogram(nil) = %v, %v; want an empty histogram", empty, err)
	}
	if _, err := DecodeHistogram([]byte("not a histogram")); err == nil {
		t.Error("DecodeHistogram accepted garbage")
	}
}

// TestMergeUsesMergedHistograms: a fast busy window and a slow quiet one. The
// run's p50 is the fast latency (most requests were fast), which averaging the
// windows' percentiles would get wrong; a gap is counted and skipped; RPS is
// over the windows' own durations.
func TestMergeUsesMergedHistograms(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	fast := Window{Index: 0, Start: t0, End: t0.Add(10 * time.Second), Requests: 900, OK: 899,
		Histogram: encoded(t, 1_000, 900),
		Ops:       map[string]OpStats{"get": {Requests: 900, OK: 899, Histogram: encoded(t, 1_000, 900)}}}
	fast.Errors.Add(Status5xx, 1)
	gap := Window{Index: 1, Start: t0.Add(10 * time.Second), End: t0.Add(20 * time.Second), Gap: true}
	slow := Window{Index: 2, Start: t0.Add(20 * time.Second), End: t0.Add(30 * time.Second), Requests: 100, OK: 100,
		Histogram: encoded(t, 100_000, 100),
		Ops:       map[string]OpStats{"get": {Requests: 100, OK: 100, Histogram: encoded(t, 100_000, 100)}}}

	s, err := Merge([]Window{fast, gap, slow})
	if err != nil {
		t.Fatal(err)
	}
	if s.Windows != 2 || s.Gaps != 1 || s.Requests != 1000 || s.OK != 999 || s.Errors.Get(Status5xx) != 1 {
		t.Errorf("counts: %+v", s)
	}
	if !s.Start.Equal(t0) || !s.End.Equal(t0.Add(30*time.Second)) {
		t.Errorf("span %v..%v", s.Start, s.End)
	}
	if s.RPS != 50 { // 1,000 requests over 20 s of windows, the gap not counted
		t.Errorf("rps %.2f, want 50", s.RPS)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*1e-3 }
	if !near(s.LatencyMs.P50, 1) || !near(s.LatencyMs.P90, 1) || !near(s.LatencyMs.P99, 100) || !near(s.LatencyMs.Max, 100) {
		t.Errorf("latency %+v, want p50 = p90 = 1 ms, p99 = max = 100 ms", s.LatencyMs)
	}
	if op := s.Ops["get"]; op.Requests != 1000 || !near(op.LatencyMs.P50, 1) || !near(op.LatencyMs.P99, 100) {
		t.Errorf("op get %+v", op)
	}

	bad := slow
	bad.Histogram = []byte("corrupt")
	if _, err := Merge([]Window{fast, bad}); err == nil {
		t.Error("Merge accepted a corrupt histogram")
	}
}

func TestClassesAndErrors(t *testing.T) {
	for c := Class(0); c < NumClasses; c++ {
		got, ok := ParseClass(c.String())
		if !ok || got != c {
			t.Errorf("ParseClass(%q) = %v, %v", c.String(), got, ok)
		}
	}
	if _, ok := ParseClass("teapot"); ok {
		t.Error("ParseClass accepted an unknown class")
	}
	var e Errors
	for c := Class(0); c < NumClasses; c++ {
		e.Add(c, int64(c)+1)
	}
	if e.Get(OK) != 0 || e.Get(Interrupted) != int64(Interrupted)+1 {
		t.Errorf("Get: ok %d, interrupted %d", e.Get(OK), e.Get(Interrupted))
	}
	// Every class but OK: 2+3+...+9.
	if e.Total() != 44 {
		t.Errorf("Total %d, want 44", e.Total())
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Errors
	if err := json.Unmarshal(b, &back); err != nil || back != e {
		t.Errorf("JSON round trip %s → %+v, %v", b, back, err)
	}
}

// The probe readings added for SQLite, Node.js and Go pauses are omitted when
// absent (older readers and windows keep their shape) and round-trip when set.
func TestProbesJSON(t *testing.T) {
	b, err := json.Marshal(Probes{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{}` {
		t.Errorf("empty probes encode as %s, want {}", got)
	}
	in := Probes{
		SQLite:         &SQLite{FileBytes: 4096, WALBytes: 8192, Tables: []SQLiteTable{{Name: "items", Rows: 25000, Estimated: true}}},
		Node:           &NodeMemory{HeapUsedBytes: 1, HeapTotalBytes: 2, ExternalBytes: 3, ArrayBuffersBytes: 4, RSSBytes: 5},
		EventLoopDelay: &Pauses{P50Ms: 10.2, P99Ms: 12, MaxMs: 80, Count: 300},
		GCPause:        &Pauses{P50Ms: 0.1, P99Ms: 0.4, MaxMs: 0.5, Count: 12},
	}
	b, err = json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Probes
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.SQLite.Tables[0] != in.SQLite.Tables[0] || *out.Node != *in.Node || *out.EventLoopDelay != *in.EventLoopDelay || *out.GCPause != *in.GCPause {
		t.Errorf("round trip: got %s", b)
	}
	for _, key := range []string{`"sqlite":`, `"node":`, `"event_loop_delay_ms":`, `"gc_pause_ms":`, `"estimated":true`} {
		if !json.Valid(b) || !strings.Contains(string(b), key) {
			t.Errorf("%s lacks %s", b, key)
		}
	}
}

func TestTopStatements(t *testing.T) {
	var ss []Statement
	for i := range 15 {
		ss = append(ss, Statement{QueryID: int64(i), Calls: int64(100 - i), Rows: int64(i)})
	}
	got := TopStatements(slices.Clone(ss), 3)
	var ids []int64
	for _, s := range got {
		ids = append(ids, s.QueryID)
	}
	// The 3 most called (0, 1, 2), then the 3 with the most rows (14, 13, 12) by calls.
	if want := []int64{0, 1, 2, 12, 13, 14}; !slices.Equal(ids, want) {
		t.Errorf("TopStatements = %v, want %v", ids, want)
	}
	if got := TopStatements(slices.Clone(ss[:2]), 3); len(got) != 2 || got[0].QueryID != 0 {
		t.Errorf("short list = %+v", got)
	}
}
