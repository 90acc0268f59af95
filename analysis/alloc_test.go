package analysis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// allocRound is a round of n 1 s windows of 1,000 requests each: 100 µs of
// CPU, bytes allocated and GC cycles per request as given, times a little
// per-round noise.
func allocRound(n int, allocPerReq, gcPer1k, noise float64) []window.Window {
	ws := make([]window.Window, n)
	for i := range ws {
		const reqs = 1000
		cpu := 0.1 * noise
		alloc := int64(allocPerReq * reqs * noise)
		gcs := int64(gcPer1k * noise)
		ws[i] = window.Window{
			Index: i, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second),
			Requests: reqs, OK: reqs, RPS: reqs, VUs: 8,
			Probes: window.Probes{CPUSeconds: &cpu, AllocBytes: &alloc, GCCycles: &gcs},
		}
	}
	return ws
}

// TestAllocVerdicts: B allocates 25 % more per request (and so collects
// more often) at the same CPU. The paired comparison finds both worse,
// decided like CPU per request, as secondary metrics; their verdicts are
// in the comparison's JSON.
func TestAllocVerdicts(t *testing.T) {
	noise := []float64{1.00, 1.02, 0.98, 1.01}
	var pairs []Pair
	for _, k := range noise {
		a, b := allocRound(8, 4000, 20, k), allocRound(8, 5000, 25, k*1.005)
		va, vb, err := PairValuesOf(a, b, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, Pair{A: va, B: vb})
	}
	if got := pairs[0].A[MetricAllocBytesPerReq]; got != 4000 {
		t.Errorf("round value alloc_bytes_per_request = %v, want 4000", got)
	}
	if got := pairs[0].A[MetricGCPer1kRequests]; got != 20 {
		t.Errorf("round value gc_per_1k_requests = %v, want 20", got)
	}
	vs := ComparePairs(pairs, PairedOptions{})
	got := map[string]Verdict{}
	for _, v := range vs {
		got[v.Metric] = v
	}
	for _, m := range []string{MetricAllocBytesPerReq, MetricGCPer1kRequests} {
		v := got[m]
		if v.Outcome != Worse || v.Primary || v.Ratio < 1.2 || v.Ratio > 1.3 {
			t.Errorf("%s: %s (primary %v), ratio %.3f; want worse, secondary, ~1.25\n%s", m, v.Outcome, v.Primary, v.Ratio, v.Summary)
		}
	}
	if v := got[MetricCPUMicrosPerReq]; v.Outcome != NoDifference || !v.Primary {
		t.Errorf("cpu: %s (primary %v), want no_difference, primary\n%s", v.Outcome, v.Primary, v.Summary)
	}
	if s := got[MetricAllocBytesPerReq].Summary; !strings.HasPrefix(s, "allocated/request: B won 0/4 pairs") {
		t.Errorf("summary %q", s)
	}
	js, err := json.Marshal(vs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"metric":"alloc_bytes_per_request","outcome":"worse"`, `"metric":"gc_per_1k_requests","outcome":"worse"`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("verdicts JSON has no %s:\n%s", want, js)
		}
	}

	// Without the counters (a Node.js target), the metrics are not measured.
	plain := growingRound(8, 1000, 100, 0)
	va, err := RoundValuesOf(plain, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := va[MetricAllocBytesPerReq]; ok {
		t.Error("an allocation value without the counters")
	}
	v := PairedVerdict(MetricAllocBytesPerReq, []PairValues{{A: 0, B: 0}, {A: 0, B: 0}, {A: 0, B: 0}}, PairedOptions{})
	if v.Outcome != Inconclusive || !strings.Contains(v.Reason, "Node.js target has no allocation counter") {
		t.Errorf("unmeasured allocations: %s (%s), want inconclusive saying why", v.Outcome, v.Reason)
	}
}

func TestParseMetricsAllocAliases(t *testing.T) {
	got, err := ParseMetrics("cpu,alloc,gc")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{MetricCPUMicrosPerReq, MetricAllocBytesPerReq, MetricGCPer1kRequests}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ParseMetrics = %v, want %v", got, want)
	}
}
