package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
)

// exitGate: the run completed, but a threshold failed or a finding met
// --fail-on. Pipelines branch on it.
const exitGate = 3

// failOnFlag is --fail-on, shared by the commands that start runs (run,
// and schedules).
type failOnFlag struct{ value string }

func (f *failOnFlag) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.value, "fail-on", "", "fail the gate (exit 3) when a finding is at least this severe: warning or critical")
}

// severity is the flag's severity ("" for none); a bad value is bad input.
func (f failOnFlag) severity() (analysis.Severity, error) {
	s, err := thresholds.ParseFailOn(f.value)
	return s, asBadInput(err)
}

// runVerdict is what a finished run says to its caller: its thresholds, the
// gate, and the exit code (0 passed, 1 failed or cancelled, 3 completed but
// the gate failed).
type runVerdict struct {
	run        store.Run
	thresholds []thresholds.Result
	gate       thresholds.Gate
}

func readVerdict(ctx context.Context, st store.Store, run store.Run, fs []analysis.Finding) (runVerdict, error) {
	rs, err := st.Thresholds(ctx, run.ID)
	if err != nil {
		return runVerdict{}, fmt.Errorf("read thresholds of run %s: %w", run.ID, err)
	}
	g, _ := report.JudgeRun(run, rs, fs)
	return runVerdict{run: run, thresholds: rs, gate: g}, nil
}

// err maps the verdict to the command's error (and so its exit code).
func (v runVerdict) err() error {
	switch {
	case v.run.Status != store.Completed:
		return errSilent{exitFailed}
	case !v.gate.Passed:
		return errSilent{exitGate}
	}
	return nil
}

// gated reports whether the run has anything for a gate to judge.
func (v runVerdict) gated() bool { return len(v.thresholds) > 0 || v.run.FailOn != "" }
