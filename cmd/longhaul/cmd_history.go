package main

import (
	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// historyFlags are the flags of longhaul history.
type historyFlags struct {
	metrics []string
	last    int
	format  string
	storeFlags
}

func (a *app) historyCmd() *cobra.Command {
	var f historyFlags
	cmd := &cobra.Command{
		Use:   "history NAME",
		Short: "The runs of a schedule, one row each, and the change points between them",
		Long: `History lists the runs the schedule NAME started, oldest first: start, commit,
status, windows, p50/p95/p99, throughput, target CPU per request, post-GC heap
at the end and its slope, findings by severity. Then the change points of each
metric: E-divisive means with a Student t-test between the segments (as
Apache Otava does), p < 0.001, at least a 5 % change and 4 runs on each side.
Runs that failed or were cancelled, and firings skipped because a run was
still going, are listed (with the reason) but left out of the series.

A compare schedule (schedule create --compare) has one row per comparison:
start, the commits of A and B, status, and per metric the B/A ratio with its
verdict; its change points are those of each metric's nightly B/A ratio
(default p50_ms, p95_ms, p99_ms, rps, cpu_us_per_request; also heap_bytes,
rss_bytes, rows_read_per_request).`,
		Example: `  longhaul history nightly
  longhaul history nightly --metric cpu_us_per_request --metric p99_ms --last 30 --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			format, err := report.ParseFormat(f.format)
			if err != nil {
				return badInputf("--format: %v", err)
			}
			if f.last < 0 {
				return badInputf("--last must be ≥ 0, got %d", f.last)
			}
			return a.withStore(ctx, f.storeFlags, func(st store.Store, _ string) error {
				h, err := history.Build(ctx, st, args[0], history.Options{Metrics: f.metrics, Last: f.last})
				if err != nil {
					return err
				}
				if format == report.JSON {
					return history.WriteJSON(a.stdout, h)
				}
				return history.WriteText(a.stdout, h)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.metrics, "metric", nil, "search this metric for change points (repeatable; default p50_ms, p95_ms, p99_ms, rps, cpu_us_per_request, heap_end_bytes)")
	fs.IntVar(&f.last, "last", 0, "only the newest N runs or comparisons (default all)")
	fs.StringVar(&f.format, "format", "text", "output: text or json")
	f.storeFlags.register(fs)
	return cmd
}
