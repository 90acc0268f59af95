package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/workflows"
)

// runFlags are the flags of longhaul run.
type runFlags struct {
	protocol string
	pushURL  string
	failOn   failOnFlag
	hostWait time.Duration
	loadFlags
	envFlags
	submitFlags
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a durable soak: provision, drive for the duration, analyse, tear down",
		Long: `Run submits a soak of the scenario in FILE as a Temporal workflow and follows
it: a progress bar, one line per window as it closes, then the run report
(status, summary, findings).

Without --temporal, longhaul starts an embedded Temporal server (an SQLite file
under the data directory) and a worker in this process. With --temporal
HOST:PORT it is a client of that cluster (or of 'longhaul dev'), whose workers
run the soak; results are read from --store (or $LONGHAUL_STORE), which must be
the store those workers write.

Ctrl-C cancels the run (its environment is torn down, its windows kept); a
second Ctrl-C stops following and leaves the run going. --detach only submits.

The scenario's thresholds are judged when the run ends (and those with
abort: true as each window closes, ending the run early when one fails); the
report lists each with its value, then the gate: passed, or failed because a
threshold failed or a finding was at least as severe as --fail-on.
Exit code: 0 completed and the gate passed, 1 failed or cancelled, 2 bad
input, 3 completed but the gate failed.`,
		Example: `  longhaul run scenarios/demo.yaml --duration 2m --window 10s
  longhaul run soak.yaml --temporal 127.0.0.1:7233 --detach
  longhaul run soak.yaml --fail-on warning    # exit 3 on a warning or critical finding`,
		Args: oneFile("run"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runSoak(cmd.Context(), args[0], f, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	f.loadFlags.register(fs, onRun)
	f.envFlags.register(fs, onRun)
	f.submitFlags.register(fs, onRun)
	fs.StringVar(&f.protocol, "protocol", "", "how the driver speaks HTTP: h1, h2 (over TLS) or h2c (default: the scenario's environment.protocol)")
	pushURLFlag(fs, &f.pushURL, "push the run's live metrics after every window to URL")
	fs.DurationVar(&f.hostWait, "host-wait", workflows.DefaultHostWait, "how long the run waits for its host's worker to come back before it is provisioned again on another host")
	f.failOn.register(fs)
	return cmd
}

// planSoak checks the command line and the scenario (package launch).
func (a *app) planSoak(ctx context.Context, file string, f runFlags, changed func(string) bool) (launch.Soak, error) {
	p, err := launch.PlanSoak(ctx, launch.SoakRequest{
		File: file, Duration: f.duration, Window: f.window, Provider: f.provider, Protocol: f.protocol,
		TargetEnv: f.targetEnv, PushURL: f.pushURL, HostWait: f.hostWait, FailOn: f.failOn.value, Format: f.format,
		Remote: f.temporal != "", Changed: changed, LookupEnv: a.lookupEnv,
	})
	return p, a.launchErr(err)
}

// runSoak is longhaul run.
func (a *app) runSoak(ctx context.Context, file string, f runFlags, changed func(string) bool) error {
	p, err := a.planSoak(ctx, file, f, changed)
	if err != nil {
		return err
	}
	s, id, err := a.start(ctx, f.submitFlags, p.Scenario.Environment, f.provider)
	if err != nil {
		return err
	}
	defer s.Close()
	return a.launcher(s, f.submitFlags).Soak(ctx, p, id)
}
