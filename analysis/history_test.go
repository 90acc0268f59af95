package analysis_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/window"
)

// nights is a history of n runs with 2 % noise: CPU per request steps up
// 20 % and throughput down 20 % from run step on; p99 stays flat.
func nights(n, step int, seed uint64) []analysis.SeriesRun {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []analysis.SeriesRun
	for i := range n {
		cpu, rps := 100.0, 1000.0
		if i >= step {
			cpu, rps = 120, 800
		}
		noise := func(v float64) float64 { return v * (1 + 0.02*r.NormFloat64()) }
		out = append(out, analysis.SeriesRun{
			ID: fmt.Sprintf("run%d", i), Commit: fmt.Sprintf("c%d", i),
			Values: map[string]float64{analysis.MetricCPUMicrosPerReq: noise(cpu), analysis.MetricRPS: noise(rps), analysis.MetricP99Ms: noise(50)},
		})
	}
	return out
}

func TestHistoryChangePoints(t *testing.T) {
	runs := nights(20, 10, 7)
	delete(runs[3].Values, analysis.MetricCPUMicrosPerReq) // a run without the probe
	got := analysis.HistoryChangePoints(runs, []string{analysis.MetricP99Ms, analysis.MetricCPUMicrosPerReq, analysis.MetricRPS}, analysis.ChangePointOptions{})
	if len(got) != 2 {
		t.Fatalf("change points = %+v, want one on cpu_us_per_request and one on rps", got)
	}
	for i, want := range []struct {
		metric string
		change float64
	}{{analysis.MetricCPUMicrosPerReq, 0.2}, {analysis.MetricRPS, -0.2}} {
		p := got[i]
		if p.Metric != want.metric || p.Index != 10 || p.RunID != "run10" || p.Commit != "c10" || p.Direction != analysis.Regression ||
			p.Change < want.change-0.03 || p.Change > want.change+0.03 || p.PValue >= analysis.DefaultChangePointMaxP {
			t.Errorf("point %d = %+v, want %s at run10, change ≈ %.2f, a regression", i, p, want.metric, want.change)
		}
	}
}

// A change point is new once, when the MinRuns-th run after the step comes.
func TestNewChangePoints(t *testing.T) {
	runs := nights(20, 10, 11)
	metrics := []string{analysis.MetricCPUMicrosPerReq}
	var seen []int
	for n := 1; n <= len(runs); n++ {
		for _, p := range analysis.NewChangePoints(runs[:n], metrics, analysis.ChangePointOptions{}) {
			if p.Index != 10 {
				t.Errorf("with %d runs: new point %+v, want index 10", n, p)
			}
			seen = append(seen, n)
		}
	}
	if want := 10 + analysis.DefaultChangePointMinRuns; len(seen) != 1 || seen[0] != want {
		t.Errorf("new change points appeared with %v runs, want once with %d", seen, want)
	}
}

func TestHeapAtEnd(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ws []window.Window
	for i := range 13 {
		h := int64(1000 + 100*i) // +100 bytes a 5-minute window: 1,200 bytes/hour
		ws = append(ws, window.Window{Index: i, Start: t0.Add(time.Duration(i) * 5 * time.Minute), End: t0.Add(time.Duration(i+1) * 5 * time.Minute),
			Probes: window.Probes{HeapBytes: &h}})
	}
	end, slope, ok := analysis.HeapAtEnd(ws, 0)
	if !ok || end != 2200 || slope < 1199 || slope > 1201 {
		t.Errorf("HeapAtEnd = %v, %v, %v; want 2200, 1200/hour", end, slope, ok)
	}
	if _, _, ok := analysis.HeapAtEnd(ws[:1], 0); ok {
		t.Error("HeapAtEnd of one reading is ok")
	}
}
