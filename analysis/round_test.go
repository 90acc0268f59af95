package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// growingRound is a round of n 1 s windows at rps requests per second
// against a target whose CPU per request grows with the requests it has
// served (its data): cost(k) = base + slope·k µs for the k-th request.
func growingRound(n int, rps, base, slope float64) []window.Window {
	ws := make([]window.Window, n)
	var served float64
	for i := range ws {
		reqs := rps
		// The window's CPU: the integral of cost over its requests.
		cpu := (base*reqs + slope*(served*reqs+reqs*reqs/2)) / 1e6
		served += reqs
		ws[i] = window.Window{
			Index: i, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second),
			Requests: int64(reqs), OK: int64(reqs), RPS: reqs, VUs: 8,
			Probes: window.Probes{CPUSeconds: &cpu},
		}
	}
	return ws
}

func TestPairValuesOfComparesTheSameRequests(t *testing.T) {
	const warmup = 2 * time.Second
	// The same build in both rounds: 100 µs per request, +10 µs per 1,000
	// requests served. B's round ran at 70 % of A's throughput (foreign load).
	a := growingRound(15, 9000, 100, 0.01)
	b := growingRound(15, 6300, 100, 0.01)

	ra, err := RoundValuesOf(a, warmup)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := RoundValuesOf(b, warmup)
	if err != nil {
		t.Fatal(err)
	}
	// Reduced separately, B looks cheaper: it ended on less data.
	if r := rb[MetricCPUMicrosPerReq] / ra[MetricCPUMicrosPerReq]; r > 0.8 {
		t.Fatalf("separately: B/A = %.3f, want the bias this test is about (< 0.8)", r)
	}

	pa, pb, err := PairValuesOf(a, b, warmup)
	if err != nil {
		t.Fatal(err)
	}
	if r := pb[MetricCPUMicrosPerReq] / pa[MetricCPUMicrosPerReq]; math.Abs(r-1) > 0.01 {
		t.Errorf("paired: B/A = %.4f (A %.1f µs, B %.1f µs), want 1 ± 1 %%", r, pa[MetricCPUMicrosPerReq], pb[MetricCPUMicrosPerReq])
	}
	// Throughput keeps its difference.
	if r := pb[MetricRPS] / pa[MetricRPS]; math.Abs(r-0.7) > 0.01 {
		t.Errorf("paired: rps B/A = %.3f, want 0.7", r)
	}

	// A real difference survives: B costs 15 % more per request.
	c := growingRound(15, 6300, 115, 0.0115)
	pa, pc, err := PairValuesOf(a, c, warmup)
	if err != nil {
		t.Fatal(err)
	}
	if r := pc[MetricCPUMicrosPerReq] / pa[MetricCPUMicrosPerReq]; math.Abs(r-1.15) > 0.01 {
		t.Errorf("paired, B +15 %%: B/A = %.4f, want 1.15", r)
	}
}

func TestPairValuesOfFallsBack(t *testing.T) {
	const warmup = 2 * time.Second
	a := growingRound(15, 9000, 100, 0)
	// A restart: two incarnations; each round is reduced on its own.
	b := growingRound(15, 9000, 200, 0)
	for i := 8; i < len(b); i++ {
		b[i].Incarnation = 1
	}
	pa, pb, err := PairValuesOf(a, b, warmup)
	if err != nil {
		t.Fatal(err)
	}
	ra, _ := RoundValuesOf(a, warmup)
	rb, _ := RoundValuesOf(b, warmup)
	if pa[MetricCPUMicrosPerReq] != ra[MetricCPUMicrosPerReq] || pb[MetricCPUMicrosPerReq] != rb[MetricCPUMicrosPerReq] {
		t.Errorf("with a restart: paired %v %v, want RoundValuesOf's %v %v", pa, pb, ra, rb)
	}
	// Too little in common (B served a quarter of A's requests): separately too.
	c := growingRound(15, 2000, 100, 0)
	pa, pc, err := PairValuesOf(a, c, warmup)
	if err != nil {
		t.Fatal(err)
	}
	if rc, _ := RoundValuesOf(c, warmup); pc[MetricRPS] != rc[MetricRPS] || pa[MetricRPS] != ra[MetricRPS] {
		t.Errorf("little in common: paired rps %v %v, want %v %v", pa[MetricRPS], pc[MetricRPS], ra[MetricRPS], rc[MetricRPS])
	}
}
