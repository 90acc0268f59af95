package analysis_test

import (
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/window"
)

// A 90-second soak in 3-second windows of a target that keeps 2 KiB per
// request: 6,000 requests per window, the post-GC heap read every window.
func ExampleAnalyze() {
	start := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	var ws []window.Window
	for i := 0; i < 30; i++ {
		heap := int64(12<<20 + i*6000*2048)
		ws = append(ws, window.Window{
			Index:    i,
			Start:    start.Add(time.Duration(i) * 3 * time.Second),
			End:      start.Add(time.Duration(i+1) * 3 * time.Second),
			Requests: 6000, OK: 6000, VUs: 16,
			Probes: window.Probes{HeapBytes: &heap},
		})
	}
	res := analysis.Analyze(ws, analysis.Options{Warmup: 3 * time.Second})
	for _, f := range res.Findings {
		fmt.Printf("%s %s: %s\n", f.Severity, f.Kind, f.Summary)
	}
	// Output:
	// critical leak: post-GC heap grew 64.7 MiB → 311 MiB over 84 s and 168,000 requests (+13.7 GiB/hour, 1.95 MiB per 1,000 requests; Mann–Kendall p < 0.0001, still rising in the last half; passive heap metric): likely a memory leak
	// info missing_evidence: no probe data for database statistics (a collapse cannot be traced to a table); target CPU time (a slowdown cannot be told from interference) — enable the matching probes in the scenario
}
