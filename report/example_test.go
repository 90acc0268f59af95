package report_test

import (
	"os"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/window"
)

func ExampleTextWriter() {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	out := report.NewText(os.Stdout, report.TextOptions{})
	var totals report.Totals
	for i, p50 := range []float64{1.2, 1.4} {
		h := window.NewHistogram()
		window.Record(h, int64(p50*1000))
		enc, _ := window.EncodeHistogram(h)
		w := window.Window{
			Index: i, Start: start.Add(time.Duration(i) * 10 * time.Second), End: start.Add(time.Duration(i+1) * 10 * time.Second),
			Requests: 1, OK: 1, RPS: 0.1, LatencyMs: window.LatencyOf(h), Histogram: enc,
		}
		out.Window(w) // as each window closes
		totals.Add(w) // merged histograms, not averaged percentiles
	}
	out.Summary(totals.Summary())
	// Output:
	// window      elapsed      req/s   p50 ms   p90 ms   p95 ms   p99 ms p99.9 ms   max ms   errors  dropped
	//      0      0:00:10        0.1    1.200    1.200    1.200    1.200    1.200    1.200        0        0
	//      1      0:00:20        0.1    1.400    1.400    1.400    1.400    1.400    1.400        0        0
	//
	// summary: 2 windows, 0:00:20, 2 requests (2 ok, 0 errors: 0 %), 0.1 req/s, 0 dropped (0 % of intended starts)
	// op    requests      req/s   p50 ms   p90 ms   p95 ms   p99 ms p99.9 ms   max ms  errors
	// all          2        0.1    1.200    1.400    1.400    1.400    1.400    1.400  0
}

func ExampleWriteFindings() {
	report.WriteFindings(os.Stdout, []analysis.Finding{{
		Kind: analysis.KindLeak, Severity: analysis.Critical, Summary: "post-GC heap grows 12 MB/h",
		Evidence: analysis.Evidence{FirstWindow: 3, LastWindow: 40, Slope: 1.2e7, SlopeUnit: "bytes/hour", PValue: 0.0004},
	}})
	// Output:
	// findings:
	//   critical leak: post-GC heap grows 12 MB/h
	//       windows 3-40; slope 1.2e+07 bytes/hour; p-value 0.0004
}
