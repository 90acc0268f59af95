package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/workflows"
)

// scheduleConn are the flags every schedule subcommand has.
type scheduleConn struct {
	clusterFlags
	outputFlags
}

func (f *scheduleConn) register(fs *pflag.FlagSet) {
	f.clusterFlags.register(fs, onSchedule)
	f.outputFlags.register(fs, onSchedule)
}

// scheduleSpecFlags are the spec flags of create and update, and those of
// the soak each firing starts.
type scheduleSpecFlags struct {
	spec   schedule.Flags // the spec and notifications; the soak's are below
	failOn failOnFlag
	loadFlags
	envFlags
}

func (f *scheduleSpecFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.spec.Cron, "cron", nil, `when to fire, a cron expression in --tz (repeatable): "0 2 * * *", "@daily", "@every 6h"`)
	fs.StringVar(&f.spec.TimeZone, "tz", "", "time zone of --cron (IANA name, default UTC)")
	fs.DurationVar(&f.spec.Jitter, "jitter", 0, "delay each firing by a random time up to this")
	fs.StringVar(&f.spec.Overlap, "overlap", "", "when a run is still going at the next firing: skip (default; recorded), buffer-one or cancel-other")
	fs.DurationVar(&f.spec.Catchup, "catchup", 0, "run a firing missed while the server was down if it is back within this (default 1h)")
	fs.StringVar(&f.spec.Notify, "notify", "", "POST a JSON notification to this URL when a run ends with a warning or worse, fails, or shows a new change point (with --compare: when the comparison fails, a verdict is worse, or its B/A ratios show a new change point)")
	fs.StringVar(&f.spec.UIURL, "ui-url", "http://"+charts.DefaultAddr, "base URL of the browser UI, for the links in notifications")
	f.failOn.register(fs)
	f.loadFlags.register(fs, onSchedule)
	f.envFlags.register(fs, onSchedule)
}

// values are the flags as package schedule takes them.
func (f scheduleSpecFlags) values() schedule.Flags {
	v := f.spec
	v.FailOn, v.Duration, v.Window, v.Provider, v.TargetEnv = f.failOn.value, f.duration, f.window, f.provider, f.targetEnv
	return v
}

func (a *app) scheduleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Nightly soaks: Temporal Schedules that start a run of a scenario",
		Long: `Schedule manages Temporal Schedules that start a soak of a scenario on a cron
spec. Every run a schedule starts carries its name ('longhaul runs --schedule
NAME', 'longhaul history NAME'); a git ref in target.build.ref is resolved
when each run starts and the commit is recorded with the run.

Schedules live in the Temporal server: 'longhaul dev' (the default address)
or a cluster (--temporal). They fire only while that server and a worker run.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.scheduleCreateCmd(), a.scheduleListCmd(), a.scheduleDescribeCmd(), a.scheduleUpdateCmd(),
		a.scheduleSimpleCmd(schedule.VerbPause, "Stop a schedule from firing until unpause"),
		a.scheduleSimpleCmd(schedule.VerbUnpause, "Let a paused schedule fire again"),
		a.scheduleSimpleCmd(schedule.VerbTrigger, "Fire a schedule now (under its overlap policy)"),
		a.scheduleSimpleCmd(schedule.VerbDelete, "Delete a schedule (the runs it started stay)"))
	return cmd
}

// withSchedules is a schedule subcommand's RunE: it dials Temporal for do.
func (a *app) withSchedules(conn *scheduleConn, do func(ctx context.Context, sc *schedule.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return a.onSchedules(cmd.Context(), *conn, func(sc *schedule.Client) error { return do(cmd.Context(), sc, args) })
	}
}

// onSchedules dials Temporal for do, once the input is checked.
func (a *app) onSchedules(ctx context.Context, conn scheduleConn, do func(sc *schedule.Client) error) error {
	if _, err := report.ParseFormat(conn.format); err != nil {
		return badInputf("--format: %v", err)
	}
	c, err := a.dialTemporal(ctx, conn.temporal, conn.namespace, discard)
	if err != nil {
		return badInputf("cannot reach Temporal at %s: start 'longhaul dev' or pass --temporal HOST:PORT", conn.temporal)
	}
	defer c.Close()
	return do(schedule.New(c))
}

// scheduleCompareFlags are create's flags for a nightly comparison
// (--compare FILE): those of longhaul compare that a schedule keeps.
type scheduleCompareFlags struct {
	file string
	sideFlags
	roundFlags
}

func (f *scheduleCompareFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "compare", "", "each firing compares two builds of the scenario in this file (longhaul compare) instead of a soak")
	f.sideFlags.register(fs, onScheduleCompare)
	f.roundFlags.register(fs, onScheduleCompare)
}

// compareInput validates --compare FILE and the compare flags as
// `longhaul compare` does and turns them into the schedule's action.
func (a *app) compareInput(f scheduleCompareFlags, sf scheduleSpecFlags, changed func(string) bool) (workflows.ScheduledInput, error) {
	cf := compareFlags{sideFlags: f.sideFlags, roundFlags: f.roundFlags, loadFlags: sf.loadFlags, envFlags: sf.envFlags, submitFlags: scheduled()}
	p, err := a.planCompare(f.file, cf, changed)
	if err != nil {
		return workflows.ScheduledInput{}, err
	}
	return schedule.CompareInput(f.file, p.Record, p.Input, sf.spec.Notice())
}

func (a *app) scheduleCreateCmd() *cobra.Command {
	var (
		conn   scheduleConn
		sf     scheduleSpecFlags
		cmpf   scheduleCompareFlags
		paused bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME (FILE | --compare FILE)",
		Short: "Create a schedule that soaks the scenario in FILE (or compares two builds of it)",
		Example: `  longhaul schedule create nightly --cron "0 2 * * *" --tz Europe/Berlin scenarios/demo.yaml --duration 4h
  longhaul schedule create every-minute --cron "@every 1m" soak.yaml --duration 20s --window 2s --notify http://127.0.0.1:9000/hook
  longhaul schedule create nightly-ab --cron "0 3 * * *" --compare soak.yaml --a v1.4.0 --b main --round-duration 10m`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			if (cmpf.file == "") != (len(args) == 2) {
				return badInputf("give a scenario FILE to soak, or --compare FILE (not both)")
			}
			if err := schedule.ValidateName(name); err != nil {
				return badInput{err}
			}
			spec := sf.spec.Spec()
			if err := spec.Validate(); err != nil {
				return badInput{err}
			}
			var in workflows.ScheduledInput
			var err error
			if cmpf.file != "" {
				in, err = a.compareInput(cmpf, sf, cmd.Flags().Changed)
			} else {
				in, err = a.scheduledInput(ctx, args[1], sf, cmd.Flags().Changed)
			}
			if err != nil {
				return err
			}
			return a.onSchedules(ctx, conn, func(sc *schedule.Client) error {
				if err := sc.Create(ctx, name, spec, in, paused); err != nil {
					return err
				}
				return sc.Show(ctx, a.stdout, name, conn.format == "json")
			})
		},
	}
	conn.register(cmd.Flags())
	sf.register(cmd.Flags())
	cmpf.register(cmd.Flags())
	cmd.Flags().BoolVar(&paused, "paused", false, "create it paused")
	return cmd
}

// scheduledInput validates FILE and the run flags as `longhaul run` does and
// turns them into the schedule's action.
func (a *app) scheduledInput(ctx context.Context, file string, sf scheduleSpecFlags, changed func(string) bool) (workflows.ScheduledInput, error) {
	// A schedule has no --host-wait: its soaks wait the default
	// (SoakInput.HostWait 0).
	rf := runFlags{loadFlags: sf.loadFlags, envFlags: sf.envFlags, failOn: sf.failOn, submitFlags: scheduled(), hostWait: workflows.DefaultHostWait}
	p, err := a.planSoak(ctx, file, rf, changed)
	if err != nil {
		return workflows.ScheduledInput{}, err
	}
	return schedule.SoakInput(file, schedule.SoakPlan{
		Name: p.Scenario.Name, Source: p.Source, Dir: p.Dir, Duration: p.Duration, Window: p.Window,
		Provider: sf.provider, TargetEnv: p.TargetEnv, FailOn: string(p.FailOn),
	}, sf.spec.Notice())
}

func (a *app) scheduleListCmd() *cobra.Command {
	var conn scheduleConn
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List longhaul's schedules with their next firing and state",
		Args:  cobra.NoArgs,
		RunE: a.withSchedules(&conn, func(ctx context.Context, sc *schedule.Client, _ []string) error {
			ss, err := sc.List(ctx)
			if err != nil {
				return err
			}
			if conn.format == "json" {
				return schedule.WriteListJSON(a.stdout, ss)
			}
			return schedule.WriteList(a.stdout, ss)
		}),
	}
	conn.register(cmd.Flags())
	return cmd
}

func (a *app) scheduleDescribeCmd() *cobra.Command {
	var conn scheduleConn
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a schedule: spec, action, next firings, runs started and skipped",
		Args:  cobra.ExactArgs(1),
		RunE: a.withSchedules(&conn, func(ctx context.Context, sc *schedule.Client, args []string) error {
			return sc.Show(ctx, a.stdout, args[0], conn.format == "json")
		}),
	}
	conn.register(cmd.Flags())
	return cmd
}

func (a *app) scheduleUpdateCmd() *cobra.Command {
	var (
		conn scheduleConn
		sf   scheduleSpecFlags
	)
	cmd := &cobra.Command{
		Use:   "update NAME [FILE]",
		Short: "Change a schedule's spec or the flags of its runs (FILE replaces the scenario)",
		Example: `  longhaul schedule update nightly --cron "30 1 * * *"
  longhaul schedule update nightly --target-env DEMO_CPU_BURN_US=150`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			changed := cmd.Flags().Changed
			ch, err := a.scheduleChange(ctx, args, sf, changed)
			if err != nil {
				return err
			}
			return a.onSchedules(ctx, conn, func(sc *schedule.Client) error {
				if err := sc.Update(ctx, args[0], ch); err != nil {
					return err
				}
				return sc.Show(ctx, a.stdout, args[0], conn.format == "json")
			})
		},
	}
	conn.register(cmd.Flags())
	sf.register(cmd.Flags())
	return cmd
}

// scheduleChange turns update's flags into a schedule.Change: only the
// flags given change anything; FILE (args[1]) replaces the scenario.
func (a *app) scheduleChange(ctx context.Context, args []string, sf scheduleSpecFlags, changed func(string) bool) (schedule.Change, error) {
	e := sf.values().Edit(changed)
	if len(args) == 2 {
		e.Replace = func() (workflows.ScheduledInput, error) { return a.scheduledInput(ctx, args[1], sf, changed) }
	}
	return schedule.NewChange(e)
}

// scheduleSimpleCmd is pause, unpause, trigger or delete NAME.
func (a *app) scheduleSimpleCmd(verb schedule.Verb, short string) *cobra.Command {
	var (
		conn scheduleConn
		note string
	)
	cmd := &cobra.Command{
		Use:   string(verb) + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			if err := schedule.ValidateName(name); err != nil {
				return badInput{err}
			}
			return a.onSchedules(ctx, conn, func(sc *schedule.Client) error {
				if err := sc.Do(ctx, verb, name, note); err != nil {
					return err
				}
				return schedule.WriteDone(a.stdout, verb, name, conn.format == "json")
			})
		},
	}
	conn.register(cmd.Flags())
	if verb == schedule.VerbPause || verb == schedule.VerbUnpause {
		cmd.Flags().StringVar(&note, "note", "", "why (shown by describe)")
	}
	return cmd
}
