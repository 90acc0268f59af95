package thresholds

import (
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul/analysis"
)

// Gate is the pipeline's answer about a completed run.
type Gate struct {
	Passed bool
	// FailOn is the severity at or above which a finding fails the gate
	// ("" when findings do not count).
	FailOn analysis.Severity
	// Thresholds are the thresholds that failed.
	Thresholds []Result
	// Findings are the findings at or above FailOn.
	Findings []analysis.Finding
	// Incomplete is the run's status when it did not complete (failed,
	// cancelled): such a run never passes, whatever its thresholds say.
	Incomplete string
}

// Gate outcomes as the reports print them.
const (
	Passed = "passed"
	Failed = "failed"
)

// Outcome is Passed or Failed.
func (g Gate) Outcome() string {
	if g.Passed {
		return Passed
	}
	return Failed
}

// Reasons lists why the gate failed, one short phrase each.
func (g Gate) Reasons() []string {
	var out []string
	if g.Incomplete != "" {
		out = append(out, "the run "+g.Incomplete)
	}
	for _, r := range g.Thresholds {
		out = append(out, "threshold "+r.Threshold+" failed: "+r.Measured())
	}
	for _, f := range g.Findings {
		out = append(out, fmt.Sprintf("%s finding %s (--fail-on %s)", f.Severity, f.Kind, g.FailOn))
	}
	return out
}

// String is "passed", or "failed: " and the reasons.
func (g Gate) String() string {
	if g.Passed {
		return Passed
	}
	return Failed + ": " + strings.Join(g.Reasons(), "; ")
}

// Judge decides the gate: it fails when a threshold failed, or when a
// finding is at least as severe as failOn ("" ignores findings; info never
// counts, so a note about thin data cannot fail a pipeline).
func Judge(rs []Result, fs []analysis.Finding, failOn analysis.Severity) Gate {
	g := Gate{FailOn: failOn, Thresholds: Breaches(rs)}
	if failOn.Rank() >= analysis.Warning.Rank() {
		for _, f := range fs {
			if f.Severity.Rank() >= failOn.Rank() {
				g.Findings = append(g.Findings, f)
			}
		}
	}
	g.Passed = len(g.Thresholds) == 0 && len(g.Findings) == 0
	return g
}

// ParseFailOn reads a --fail-on value: "warning" or "critical" (or "" and
// "none": findings do not fail the gate).
func ParseFailOn(s string) (analysis.Severity, error) {
	switch s {
	case "", "none":
		return "", nil
	case string(analysis.Warning), string(analysis.Critical):
		return analysis.Severity(s), nil
	}
	return "", fmt.Errorf("--fail-on %q: use warning or critical (findings at or above it fail the gate) or none", s)
}
