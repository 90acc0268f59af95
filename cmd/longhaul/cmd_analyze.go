package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
)

// analyzeFlags are the flags of longhaul analyze.
type analyzeFlags struct {
	format  string
	warmup  time.Duration
	windows int
	until   time.Duration
	storeFlags
}

func (a *app) analyzeCmd() *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze RUN_ID",
		Short: "Analyse a stored run again: leaks, collapses, error surges, throughput limits",
		Long: `Analyze reads a stored run's windows, runs the analysis (the same one every
soak runs when it ends), replaces the run's findings in the store with the new
ones and prints them, after the probes that failed during the run; then it
judges the scenario's thresholds again and stores and prints them too.

The warm-up (windows excluded at the start of each incarnation) is the
scenario's load.warmup unless --warmup is given. A run whose windows lack
probe data gets a missing_evidence finding that names what is missing.

--windows N or --until DURATION analyse only the start of the run (the first
N windows, or those that ended within DURATION of its start), to see how
soon a verdict holds; such a partial analysis is printed but not stored.
Exit code: 0 analysed (whatever was found), 2 bad input or unknown run.`,
		Example: `  longhaul analyze 0199a3c4-...
  longhaul analyze 0199a3c4-... --warmup 2m --format json
  longhaul analyze 0199a3c4-... --until 15m      # what the first 15 minutes showed`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.analyze(cmd.Context(), args[0], f, cmd.Flags().Changed("warmup"))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "text", "output: text, or json (one {\"type\":\"analysis\"} object)")
	fs.DurationVar(&f.warmup, "warmup", 0, "warm-up to exclude at the start of each incarnation (default: the scenario's load.warmup)")
	fs.IntVar(&f.windows, "windows", 0, "analyse only the first N windows (not stored)")
	fs.DurationVar(&f.until, "until", 0, "analyse only the windows that ended within this time of the run's start (not stored)")
	f.storeFlags.register(fs)
	return cmd
}

// analyze is longhaul analyze.
func (a *app) analyze(ctx context.Context, id string, f analyzeFlags, warmupSet bool) error {
	format, err := report.ParseFormat(f.format)
	if err != nil {
		return badInputf("--format: %v", err)
	}
	opts := report.ReanalyzeOptions{Warmup: f.warmup, Windows: f.windows, Until: f.until}
	if err := opts.Check(); err != nil {
		return badInput{err}
	}
	return a.withStore(ctx, f.storeFlags, func(st store.Store, where string) error {
		run, err := st.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return badInputf("no run %s in %s (see longhaul runs)", id, where)
		}
		if err != nil {
			return fmt.Errorf("read run %s: %w", id, err)
		}
		sc := a.storedScenario(run)
		if !warmupSet {
			opts.Warmup = sc.Load.Warmup.D()
		}
		opts.Thresholds, opts.Where = sc.Thresholds, where
		an, warnings, err := report.Reanalyze(ctx, st, run, opts)
		for _, w := range warnings {
			fmt.Fprintf(a.stderr, "longhaul: %s\n", w)
		}
		if err != nil {
			return err
		}
		if format == report.JSON {
			return report.WriteAnalysisJSON(a.stdout, an)
		}
		return report.WriteAnalysisText(a.stdout, an)
	})
}

// storedScenario is the run's stored scenario (report.StoredScenario),
// with its note, if any, on stderr.
func (a *app) storedScenario(run store.Run) *scenarios.Scenario {
	sc, note := report.StoredScenario(run)
	if note != "" {
		fmt.Fprintf(a.stderr, "longhaul: %s\n", note)
	}
	return sc
}
