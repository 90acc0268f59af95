package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// runsFlags are the flags of longhaul runs.
type runsFlags struct {
	format   string
	status   string
	name     string
	schedule string
	limit    int
	storeFlags
}

func (a *app) runsCmd() *cobra.Command {
	var f runsFlags
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "List runs, newest first",
		Example: "  longhaul runs\n  longhaul runs --status failed --format json\n  longhaul runs --schedule nightly",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runs(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "text", "output: text (a table) or json (one object per line)")
	fs.StringVar(&f.status, "status", "", "only runs with this status (pending, running, completed, failed, cancelled)")
	fs.StringVar(&f.name, "name", "", "only runs of the scenario with this name")
	fs.StringVar(&f.schedule, "schedule", "", "only runs started by this schedule")
	fs.IntVar(&f.limit, "limit", 100, "at most this many runs")
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) runs(ctx context.Context, f runsFlags) error {
	format, err := report.ParseFormat(f.format)
	if err != nil {
		return badInputf("--format: %v", err)
	}
	switch store.Status(f.status) {
	case "", store.Pending, store.Running, store.Completed, store.Failed, store.Cancelled:
	default:
		return badInputf("--status %q: use pending, running, completed, failed or cancelled", f.status)
	}
	if f.limit < 1 {
		return badInputf("--limit must be ≥ 1, got %d", f.limit)
	}
	if f.store == "" {
		f.store = a.getenv("LONGHAUL_STORE")
	}
	st, _, err := a.openStore(ctx, f.storeFlags)
	if err != nil {
		return err
	}
	defer st.Close()
	rs, err := st.ListRuns(ctx, store.ListOptions{Status: store.Status(f.status), Name: f.name, Schedule: f.schedule, Limit: f.limit})
	if err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	if format == report.JSON {
		return report.WriteRunsJSON(a.stdout, rs)
	}
	return report.WriteRunsText(a.stdout, rs, time.Now())
}
