package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/thresholds"
)

// Analysis is the outcome of analysing one stored run (longhaul analyze):
// what was read, with which warm-up, and what was found.
type Analysis struct {
	RunID string
	// Windows is how many windows were read (gaps included).
	Windows int
	Warmup  time.Duration
	// ProbeProblems explain missing readings; Findings are the analysis'.
	ProbeProblems []ProbeProblem
	Findings      []analysis.Finding
	// Thresholds are the scenario's thresholds judged again.
	Thresholds []thresholds.Result
}

// AnalysisObject is the JSON shape of an Analysis: one object whose type is
// always "analysis". ProbeProblems and Findings are never null.
type AnalysisObject struct {
	Type          string             `json:"type"`
	RunID         string             `json:"run_id"`
	Windows       int                `json:"windows"`
	WarmupSeconds float64            `json:"warmup_s"`
	ProbeProblems []ProbeProblem     `json:"probe_problems"`
	Findings      []analysis.Finding `json:"findings"`
	// Thresholds is omitted when the scenario has none.
	Thresholds []thresholds.Result `json:"thresholds,omitempty"`
}

// WriteAnalysisText prints an Analysis: a header line, the probe problems
// (if any), the findings, most severe first, and the thresholds (if any).
func WriteAnalysisText(out io.Writer, an Analysis) error {
	b := bufio.NewWriter(out)
	fmt.Fprintf(b, "run %s: %d windows analysed, warm-up %s\n", an.RunID, an.Windows, an.Warmup)
	WriteProbeProblems(b, an.ProbeProblems)
	WriteFindings(b, an.Findings)
	WriteThresholds(b, an.Thresholds)
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write analysis: %w", err)
	}
	return nil
}

// WriteAnalysisJSON prints an Analysis as one AnalysisObject line.
func WriteAnalysisJSON(out io.Writer, an Analysis) error {
	o := AnalysisObject{
		Type: "analysis", RunID: an.RunID, Windows: an.Windows, WarmupSeconds: an.Warmup.Seconds(),
		ProbeProblems: an.ProbeProblems, Findings: an.Findings, Thresholds: an.Thresholds,
	}
	if o.ProbeProblems == nil {
		o.ProbeProblems = []ProbeProblem{}
	}
	if o.Findings == nil {
		o.Findings = []analysis.Finding{}
	}
	line, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode analysis: %w", err)
	}
	if _, err := fmt.Fprintf(out, "%s\n", line); err != nil {
		return fmt.Errorf("write analysis: %w", err)
	}
	return nil
}
