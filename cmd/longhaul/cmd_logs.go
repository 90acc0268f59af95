package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

func (a *app) logsCmd() *cobra.Command {
	var (
		f        storeFlags
		inc      int
		win      int
		database bool
		live     bool
	)
	cmd := &cobra.Command{
		Use:   "logs RUN",
		Short: "Print what a run's target (or its database) printed, as kept when its environment was torn down",
		Long: `Logs prints the output (stdout and stderr) of a run's target, or with
--database of its database, for every incarnation or --incarnation N: the end
of each process's output (4 MiB), kept when its environment is torn down,
secrets (${env:NAME} values) masked. --window N prints only what was printed
during window N (the window table's number; the crash finding names its
window). --follow prints a live run's output as it is written, like tail -f,
until the run ends (on its environment's host).`,
		Example: "  longhaul logs 0199a3c4-...\n  longhaul logs 0199a3c4-... --database --incarnation 2 | less\n  longhaul logs 0199a3c4-... --window 7\n  longhaul logs -f 0199a3c4-...",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if inc < 0 {
				return badInputf("--incarnation is 1 or more (0: all)")
			}
			if live && inc != 0 {
				return badInputf("--follow shows the live incarnation; --incarnation picks kept output")
			}
			oneWindow := cmd.Flags().Changed("window")
			if oneWindow && (win < 0 || live) {
				return badInputf("--window is a window's number (0 or more) of kept output, not with --follow")
			}
			return a.withStore(cmd.Context(), f, func(st store.Store, where string) error {
				if _, err := st.GetRun(cmd.Context(), args[0]); errors.Is(err, store.ErrNotFound) {
					return badInputf("no run %s in %s", args[0], where)
				}
				q := report.LogQuery{Source: "target", Incarnation: inc, OneWindow: oneWindow, Window: win}
				if database {
					q.Source = "database"
				}
				if oneWindow {
					return windowLogs(cmd.Context(), st, args[0], q, a.stdout)
				}
				return follow.Logs(cmd.Context(), st, args[0], q, live, a.stdout, provision.OutputFollower(provision.Options{Logger: discard}), follow.LogsPoll)
			})
		},
	}
	cmd.Flags().IntVar(&inc, "incarnation", 0, "only this incarnation (default: all)")
	cmd.Flags().IntVar(&win, "window", 0, "only what was printed during this window")
	cmd.Flags().BoolVar(&database, "database", false, "the database's output instead of the target's")
	cmd.Flags().BoolVarP(&live, "follow", "f", false, "while the run is live, print what the process prints until the run ends (on the host its environment runs on)")
	f.register(cmd.Flags())
	return cmd
}

// windowLogs prints what q.Source printed during window q.Window; a window
// the run does not have, or whose lines were not kept, is bad input.
func windowLogs(ctx context.Context, st store.Store, runID string, q report.LogQuery, out io.Writer) error {
	counts, err := st.Counts(ctx, []string{runID})
	if err != nil {
		return err
	}
	if n := counts[runID].Windows; q.Window >= n {
		if n == 0 {
			return badInputf("run %s has no windows", runID)
		}
		return badInputf("run %s has windows 0–%d, not %d", runID, n-1, q.Window)
	}
	return report.WriteLogs(ctx, st, runID, q, out) // report.ErrNoLogs is a user error: exit 2
}
