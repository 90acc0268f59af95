package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

func (a *app) logsCmd() *cobra.Command {
	var (
		f              storeFlags
		inc, win       int
		database, live bool
	)
	cmd := &cobra.Command{
		Use:   "logs RUN",
		Short: "Print what a run's target (or its database) printed, as kept when its environment was torn down",
		Long: `Logs prints the output (stdout and stderr) of a run's target, or with
--database of its database, for every incarnation or --incarnation N: the end
of each process's output (4 MiB), kept when its environment is torn down,
secrets (${env:NAME} values) masked; with --window N only what was printed
during window N. --follow prints a live run's output as it is written, like
tail -f, until the run ends (on its environment's host).`,
		Example: "  longhaul logs 0199a3c4-...\n  longhaul logs 0199a3c4-... --database --incarnation 2 | less\n  longhaul logs 0199a3c4-... --window 7\n  longhaul logs -f 0199a3c4-...",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := report.LogQuery{Source: "target", Incarnation: inc, OneWindow: cmd.Flags().Changed("window"), Window: win}
			if database {
				q.Source = "database"
			}
			if err := q.Check(live); err != nil {
				return err
			}
			return a.withStore(cmd.Context(), f, func(st store.Store, where string) error {
				if _, err := st.GetRun(cmd.Context(), args[0]); errors.Is(err, store.ErrNotFound) {
					return badInputf("no run %s in %s", args[0], where)
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
