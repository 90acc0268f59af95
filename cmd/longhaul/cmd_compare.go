package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/launch"
)

// defaultDecideOn is --decide-on's default: analysis.DefaultPrimary.
const defaultDecideOn = "cpu,p50,p99,throughput"

// compareFlags are the flags of longhaul compare.
type compareFlags struct {
	failOnWorse bool
	seed        uint64
	sideFlags
	roundFlags
	loadFlags
	envFlags
	submitFlags
}

func (a *app) compareCmd() *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare FILE",
		Short: "Compare two builds in interleaved rounds on one host: is B better or worse than A?",
		Long: `Compare runs the scenario in FILE against two builds, A (the baseline) and B,
in pairs of rounds interleaved on one host (order abba by default: A B, B A,
A B ...), each round a soak with a fresh environment, both rounds of a pair
with the same seed. Before the timed rounds it checks that both builds
answer the same seeded requests alike (--equivalence, default 200
requests). Then it decides every metric from the pairs' ratios B/A:
better, worse, no_difference or inconclusive, with the reason.

A side is a git ref (--a/--b: the docker provider builds target.build's
Dockerfile at that ref; the local provider builds a worktree of that commit
with target.build.command; both cache the build by commit), an image
(--a-image/--b-image), or the scenario's own build; --a-env/--b-env add
target environment variables to one side. With no side flags both sides
are the same build: an A-vs-A comparison, which measures this machine's
noise floor.

Exit code: 0 completed (whatever the verdicts), 1 failed or cancelled, 2 bad
input, 3 completed with --fail-on-worse and a metric worse.`,
		Example: `  longhaul compare scenarios/demo.yaml                                  # A vs A: the noise floor
  longhaul compare scenarios/demo.yaml --b-env DEMO_CPU_BURN_US=20 --pairs 3 --round-duration 30s
  longhaul compare api.yaml --a main --b my-branch --fail-on-worse --format json`,
		Args: oneFile("compare"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.compare(cmd.Context(), args[0], f, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	f.sideFlags.register(fs, onCompare)
	f.roundFlags.register(fs, onCompare)
	f.loadFlags.register(fs, onCompare)
	f.envFlags.register(fs, onCompare)
	f.submitFlags.register(fs, onCompare)
	fs.BoolVar(&f.failOnWorse, "fail-on-worse", false, "exit 3 when the comparison completes and a metric is worse")
	fs.Uint64Var(&f.seed, "seed", 0, "base seed of the request sequences (default: random)")
	return cmd
}

// planCompare checks the command line and the scenario (package launch).
// Without --seed the seed is random.
func (a *app) planCompare(file string, f compareFlags, changed func(string) bool) (launch.Compare, error) {
	p, err := launch.PlanCompare(launch.CompareRequest{
		File: file, A: f.a, B: f.b, AImage: f.aImage, BImage: f.bImage, AEnv: f.aEnv, BEnv: f.bEnv,
		Pairs: f.pairs, MaxPairs: f.maxPairs, MaxDuration: f.maxDuration, DecideOn: f.decideOn, Order: f.order,
		RoundDuration: f.roundDuration, Window: f.window, Warmup: f.warmup,
		Equivalence: f.equivalence, AllowDiff: f.allowDiff, RerunDisturbed: f.rerunDisturbed, DisturbedAbove: f.disturbedAbove,
		Provider: f.provider, Format: f.format, Seed: f.seed, Remote: f.temporal != "", Changed: changed, LookupEnv: a.lookupEnv,
	})
	return p, a.launchErr(err)
}

// compare is longhaul compare.
func (a *app) compare(ctx context.Context, file string, f compareFlags, changed func(string) bool) error {
	p, err := a.planCompare(file, f, changed)
	if err != nil {
		return err
	}
	s, id, err := a.start(ctx, f.submitFlags, p.Environment, p.Record.Provider)
	if err != nil {
		return err
	}
	defer s.Close()
	return a.launcher(s, f.submitFlags).Compare(ctx, p, id, f.failOnWorse)
}
