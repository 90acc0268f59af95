package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/soakworker"
	"github.com/longhaul-dev/longhaul/store"
)

// driveFlags are the flags of longhaul drive.
type driveFlags struct {
	scenario    string
	target      string
	duration    time.Duration
	window      time.Duration
	vus         int
	rate        float64
	maxVUs      int
	format      string
	metricsAddr string
	storeFlags
}

func (a *app) driveCmd() *cobra.Command {
	var f driveFlags
	cmd := &cobra.Command{
		Use:   "drive --scenario FILE --target URL",
		Short: "Drive a scenario's load at a running target; print one line per window and a summary",
		Long: `Drive sends the scenario's load to a target that is already running (a
loopback URL), prints one line per window as it closes and a summary at the
end, and stores every window as a run of kind "drive".

Flags override the scenario's load section. --vus N selects the closed model
(N virtual users); --rate R selects the open model (R iterations/s, at most
--max-vus in flight). --duration 0 drives until interrupted. Ctrl-C stops
gracefully: in-flight requests finish, the last window and the summary are
still printed and stored.`,
		Example: `  longhaul drive --scenario scenarios/hello.yaml --target http://127.0.0.1:8080 --duration 1m --vus 16
  longhaul drive --scenario mix.yaml --target http://127.0.0.1:8080 --rate 500 --max-vus 200 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.drive(cmd.Context(), f, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.scenario, "scenario", "", "scenario file (YAML; see scenarios/README.md)")
	fs.StringVar(&f.target, "target", "", "base URL of the target, a loopback address (default: the scenario's environment.target.url)")
	fs.DurationVar(&f.duration, "duration", 0, "how long to drive; 0 means until interrupted (default: the scenario's)")
	fs.DurationVar(&f.window, "window", 0, "length of one result window (default: the scenario's)")
	fs.IntVar(&f.vus, "vus", 0, "closed model: number of virtual users")
	fs.Float64Var(&f.rate, "rate", 0, "open model: iterations started per second")
	fs.IntVar(&f.maxVUs, "max-vus", 0, "open model: most iterations in flight; a start beyond it is dropped")
	fs.StringVar(&f.format, "format", "text", "output: text (aligned lines) or json (NDJSON, one object per window, then a summary)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve live metrics at http://ADDR/metrics (Prometheus text format)")
	f.storeFlags.register(fs)
	return cmd
}

// drive is longhaul drive. changed reports whether a flag was given.
func (a *app) drive(ctx context.Context, f driveFlags, changed func(string) bool) error {
	d, err := launch.PlanDrive(ctx, launch.DriveRequest{
		File: f.scenario, Target: f.target, Duration: f.duration, Window: f.window,
		VUs: f.vus, MaxVUs: f.maxVUs, Rate: f.rate, Format: f.format, Changed: changed, LookupEnv: a.lookupEnv,
	})
	if err != nil {
		return a.launchErr(err)
	}
	var live *metrics.Set
	if f.metricsAddr != "" {
		live = metrics.NewSet()
		stopMetrics, err := soakworker.ServeMetrics(f.metricsAddr, live)
		if err != nil {
			return badInput{err}
		}
		defer stopMetrics()
	}
	return a.withStore(ctx, f.storeFlags, func(st store.Store, where string) error {
		d.Metrics, d.Where = live, where
		return follow.FollowDrive(ctx, a.terminal(), st, d)
	})
}

// launchErr is a launch error as the user sees it: a scenario's problems
// one per line as file:line: message (like longhaul scenario validate),
// anything else one line; exit code 2 either way.
func (a *app) launchErr(err error) error {
	var errs scenarios.Errors
	if err == nil || !errors.As(err, &errs) {
		return asBadInput(err)
	}
	for _, e := range errs {
		fmt.Fprintln(a.stderr, e.Error())
	}
	return errSilent{exitBadInput}
}

// lookupEnv resolves ${env:NAME}; an empty value counts as unset.
func (a *app) lookupEnv(name string) (string, bool) {
	v := a.getenv(name)
	return v, v != ""
}
