package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/soakworker"
)

// sweepCmd removes the environments of runs that are over: labelled docker
// containers, networks and volumes, and the local provider's processes and
// directories. The store says which runs are still running.
func (a *app) sweepCmd() *cobra.Command {
	var (
		all       bool
		sf        storeFlags
		temporal  string
		namespace string
		runs      []string
	)
	cmd := &cobra.Command{
		Use:   "sweep [--all] [--store DSN] [--data DIR]",
		Short: "Remove leftover environments (containers, networks, volumes, local processes) of runs that are not running",
		Long: `Sweep removes what longhaul provisioned for runs that are no longer running:
docker containers, networks and volumes labelled dev.longhaul=1, and local
target processes, PostgreSQL clusters and state directories under the data
directory. A run is running while the store says pending or running; a run the
store does not know is over. With --temporal, a run the store calls running
whose workflow has closed without recording its end (terminated, timed out)
is abandoned: its status is set and its resources removed. --run limits the
sweep to the runs named. --all removes every longhaul resource without asking
the store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dataDir, err := a.dataDir(sf.data)
			if err != nil {
				return badInput{err}
			}
			if all && len(runs) > 0 {
				return badInputf("--all and --run exclude each other")
			}
			logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			isRunning := func(string) bool { return false }
			if !all {
				st, err := soakworker.OpenSweepStore(ctx, sf.store, sf.data, a.getenv)
				if err != nil {
					return err
				}
				defer st.Close()
				live := soakworker.Liveness{Store: st, UnknownIsOver: true, Only: runs, Log: logger}
				if temporal != "" {
					c, err := a.dialTemporal(ctx, temporal, namespace, discard)
					if err != nil {
						return err
					}
					defer c.Close()
					live.Client = c
				}
				isRunning = live.Running(ctx)
			}
			removed, err := provision.Sweep(ctx, provision.Options{DataDir: dataDir, Logger: logger}, isRunning)
			for _, r := range removed {
				fmt.Fprintln(a.stdout, "removed", r)
			}
			fmt.Fprintf(a.stdout, "%d removed\n", len(removed))
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "remove every longhaul resource, running or not, without asking the store")
	f.StringVar(&temporal, "temporal", "", "Temporal frontend HOST:PORT: also sweep runs whose workflow closed without recording their end")
	f.StringVar(&namespace, "namespace", "default", "Temporal namespace (with --temporal)")
	f.StringArrayVar(&runs, "run", nil, "sweep only this run (repeatable)")
	sf.register(f)
	return cmd
}
