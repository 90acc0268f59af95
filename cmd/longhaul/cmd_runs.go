package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// listFlags are the filters that longhaul runs and longhaul comparisons share.
type listFlags struct {
	format   string
	status   string
	name     string
	schedule string
	limit    int
	storeFlags
}

// register adds the shared filters; what names the listed things ("runs",
// "comparisons").
func (f *listFlags) register(fs *pflag.FlagSet, what, jsonLine string) {
	fs.StringVar(&f.format, "format", "text", "output: text (a table) or json ("+jsonLine+" per line)")
	fs.StringVar(&f.status, "status", "", "only "+what+" with this status (queued, pending, running, completed, failed, cancelled, skipped)")
	fs.StringVar(&f.name, "name", "", "only "+what+" of the scenario with this name")
	fs.StringVar(&f.schedule, "schedule", "", "only "+what+" started by this schedule")
	fs.IntVar(&f.limit, "limit", 100, "at most this many "+what)
	f.storeFlags.register(fs)
}

// openListing checks the filters and opens the store they list from.
func (a *app) openListing(ctx context.Context, f listFlags) (store.Store, report.Format, store.ListOptions, error) {
	format, opts, err := report.ParseList(report.ListFilter{Format: f.format, Status: f.status, Name: f.name, Schedule: f.schedule, Limit: f.limit})
	if err != nil {
		return nil, "", store.ListOptions{}, badInput{err}
	}
	st, _, err := a.openStore(ctx, f.storeFlags)
	if err != nil {
		return nil, "", store.ListOptions{}, err
	}
	return st, format, opts, nil
}

func (a *app) runsCmd() *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "List runs, newest first",
		Example: "  longhaul runs\n  longhaul runs --status failed --format json\n  longhaul runs --schedule nightly",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runs(cmd.Context(), f)
		},
	}
	f.register(cmd.Flags(), "runs", "one object")
	return cmd
}

func (a *app) runs(ctx context.Context, f listFlags) error {
	st, format, opts, err := a.openListing(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	rs, err := st.ListRuns(ctx, opts)
	if err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	if format == report.JSON {
		return report.WriteRunsJSON(a.stdout, rs)
	}
	return report.WriteRunsText(a.stdout, rs, time.Now())
}
