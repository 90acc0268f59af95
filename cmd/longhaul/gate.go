package main

import (
	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/thresholds"
)

// exitGate: the run completed, but a threshold failed or a finding met
// --fail-on. Pipelines branch on it.
const exitGate = 3

// failOnFlag is --fail-on, shared by the commands that start runs (run,
// and schedules).
type failOnFlag struct{ value string }

func (f *failOnFlag) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.value, "fail-on", "", "fail the gate (exit 3) when a finding is at least this severe: warning, critical, or none (the default)")
}

// severity is the flag's severity ("" for none); a bad value is bad input.
func (f failOnFlag) severity() (analysis.Severity, error) {
	s, err := thresholds.ParseFailOn(f.value)
	return s, asBadInput(err)
}
