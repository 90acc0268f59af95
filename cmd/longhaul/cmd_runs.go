package main

import (
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

// listCmd is longhaul runs or longhaul comparisons: what the store holds of
// l, newest first.
func (a *app) listCmd(l report.Listing, example, jsonLine string) *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:     string(l),
		Short:   "List " + string(l) + ", newest first",
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, opts, err := report.ParseList(report.ListFilter{Format: f.format, Status: f.status, Name: f.name, Schedule: f.schedule, Limit: f.limit})
			if err != nil {
				return badInput{err}
			}
			return a.withStore(cmd.Context(), f.storeFlags, func(st store.Store, _ string) error {
				return report.WriteList(cmd.Context(), a.stdout, st, l, format, opts, time.Now())
			})
		},
	}
	f.register(cmd.Flags(), string(l), jsonLine)
	return cmd
}
