package report

import (
	"context"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/profiles"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// AnalyzeStore is what Reanalyze needs of a store (store.Store has it).
type AnalyzeStore interface {
	profiles.ProfileReader
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
	PutFindings(ctx context.Context, runID string, fs []analysis.Finding) error
	PutThresholds(ctx context.Context, runID string, rs []thresholds.Result) error
}

// ReanalyzeOptions tune Reanalyze.
type ReanalyzeOptions struct {
	// Warmup is left out at the start of each incarnation.
	Warmup time.Duration
	// Thresholds are the run's scenario's, judged again.
	Thresholds []scenarios.Threshold
	// Windows or Until (> 0) analyse only the start of the run
	// (analysis.Prefix); such a partial analysis is not stored.
	Windows int
	Until   time.Duration
	// Where names the store, for errors.
	Where string
}

// Reanalyze runs the analysis of the stored run again (what every soak runs
// when it ends): its findings, explained with the run's profiles, replace
// the stored ones unless the analysis is partial; its thresholds are judged
// again and stored. The warnings are for the user, in the order they arose:
// a run still going, a partial analysis, profiles that could not be read.
func Reanalyze(ctx context.Context, st AnalyzeStore, run store.Run, opts ReanalyzeOptions) (Analysis, []string, error) {
	var warnings []string
	id := run.ID
	ws, err := st.Windows(ctx, id, store.AllWindows)
	if err != nil {
		return Analysis{}, warnings, fmt.Errorf("read windows of run %s: %w", id, err)
	}
	if !run.Status.Done() {
		warnings = append(warnings, fmt.Sprintf("run %s is %s: analysing the %d windows stored so far", id, run.Status, len(ws)))
	}
	partial := opts.Windows > 0 || opts.Until > 0
	if partial {
		all := len(ws)
		ws = analysis.Prefix(ws, opts.Windows, opts.Until)
		warnings = append(warnings, fmt.Sprintf("analysing the first %d of %d windows; the findings are not stored", len(ws), all))
	}
	res := analysis.Analyze(ws, analysis.Options{Warmup: opts.Warmup})
	if err := profiles.ExplainRun(ctx, st, id, res.Findings); err != nil {
		warnings = append(warnings, fmt.Sprintf("the run's profiles were not read into its findings: %v", err))
	}
	if !partial {
		if err := st.PutFindings(ctx, id, res.Findings); err != nil {
			return Analysis{}, warnings, fmt.Errorf("store the findings of run %s in %s: %w", id, opts.Where, err)
		}
	}
	rs, err := thresholds.Evaluate(opts.Thresholds, ws, opts.Warmup)
	if err != nil {
		return Analysis{}, warnings, fmt.Errorf("judge the thresholds of run %s: %w", id, err)
	}
	if err := st.PutThresholds(ctx, id, rs); err != nil {
		return Analysis{}, warnings, fmt.Errorf("store the thresholds of run %s in %s: %w", id, opts.Where, err)
	}
	return Analysis{
		RunID: id, Windows: len(ws), Warmup: opts.Warmup,
		ProbeProblems: ProbeProblems(ws), Findings: res.Findings, Thresholds: rs,
	}, warnings, nil
}

// StoredScenario is the scenario stored with run, for its load.warmup and
// thresholds. When the run has none that parses it is an empty scenario,
// with a note for the user — none for an imported run, which never has one.
func StoredScenario(run store.Run) (sc *scenarios.Scenario, note string) {
	if run.Scenario == "" {
		if run.Kind != "imported" {
			note = fmt.Sprintf("run %s has no stored scenario: no warm-up (set --warmup), no thresholds", run.ID)
		}
		return &scenarios.Scenario{}, note
	}
	s, err := scenarios.Parse([]byte(run.Scenario), run.Name+".yaml")
	if err != nil {
		return &scenarios.Scenario{}, fmt.Sprintf("the stored scenario of run %s does not parse: no warm-up (set --warmup), no thresholds", run.ID)
	}
	return s, ""
}
