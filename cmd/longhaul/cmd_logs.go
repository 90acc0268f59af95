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
		f        storeFlags
		inc      int
		database bool
		live     bool
	)
	cmd := &cobra.Command{
		Use:   "logs RUN",
		Short: "Print what a run's target (or its database) printed, as kept when its environment was torn down",
		Long: `Logs prints the output (stdout and stderr) of a run's target, or with
--database of its database, for every incarnation or --incarnation N. The
end of each process's output (4 MiB of text) is kept with the run when its
environment is torn down, local processes and containers alike, with the
scenario's secrets (its ${env:NAME} values) masked. With --follow, a live
run's output is printed as it is written, like tail -f, until the run ends
(from the host its environment runs on).`,
		Example: "  longhaul logs 0199a3c4-...\n  longhaul logs 0199a3c4-... --database --incarnation 2 | less\n  longhaul logs -f 0199a3c4-...",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if inc < 0 {
				return badInputf("--incarnation is 1 or more (0: all)")
			}
			st, where, err := a.openStore(cmd.Context(), f)
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.GetRun(cmd.Context(), args[0]); errors.Is(err, store.ErrNotFound) {
				return badInputf("no run %s in %s", args[0], where)
			}
			q := report.LogQuery{Source: "target", Incarnation: inc}
			if database {
				q.Source = "database"
			}
			var follower follow.OutputFollower
			if live {
				if inc != 0 {
					return badInputf("--follow shows the live incarnation; --incarnation picks kept output")
				}
				follower = provision.OutputFollower(provision.Options{Logger: discard})
			}
			err = follow.Logs(cmd.Context(), st, args[0], q, a.stdout, follower, follow.LogsPoll)
			if errors.Is(err, report.ErrNoLogs) {
				return badInputf("%v (kept when a provisioned environment is torn down; none for a target.url)", err)
			}
			return err
		},
	}
	cmd.Flags().IntVar(&inc, "incarnation", 0, "only this incarnation (default: all)")
	cmd.Flags().BoolVar(&database, "database", false, "the database's output instead of the target's")
	cmd.Flags().BoolVarP(&live, "follow", "f", false, "while the run is live, print what the process prints until the run ends (on the host its environment runs on)")
	f.register(cmd.Flags())
	return cmd
}
