package report

import (
	"fmt"
	"io"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
)

// JudgeRun is the gate of a finished run: its thresholds and, from
// Run.FailOn, its findings, and a run that did not complete never passes.
// ok is false while the run has not ended (there is no gate yet).
func JudgeRun(r store.Run, rs []thresholds.Result, fs []analysis.Finding) (g thresholds.Gate, ok bool) {
	if !r.Status.Done() {
		return thresholds.Gate{}, false
	}
	g = thresholds.Judge(rs, fs, analysis.Severity(r.FailOn))
	if r.Status != store.Completed {
		g.Passed, g.Incomplete = false, string(r.Status)
	}
	return g, true
}

// WriteThresholds prints judged thresholds, one per line with ok or FAILED
// first; nothing when there are none.
func WriteThresholds(out io.Writer, rs []thresholds.Result) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(out, "thresholds:")
	for _, r := range rs {
		mark := "ok"
		if !r.OK {
			mark = "FAILED"
		}
		fmt.Fprintf(out, "  %-6s  %s: %s\n", mark, r.Threshold, r.Measured())
	}
}

// WriteGate prints "gate: passed" or "gate: failed" with one reason per line.
func WriteGate(out io.Writer, g thresholds.Gate) {
	if g.Passed {
		fmt.Fprintln(out, "gate: passed")
		return
	}
	fmt.Fprintln(out, "gate: failed")
	for _, r := range g.Reasons() {
		fmt.Fprintf(out, "  %s\n", r)
	}
}

// GateObject is the JSON shape of a run's thresholds and gate: Type is
// "gate" on its own NDJSON line.
type GateObject struct {
	Type string `json:"type,omitempty"`
	// Gate is "passed" or "failed".
	Gate    string   `json:"gate"`
	FailOn  string   `json:"fail_on,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// Thresholds is never null: [] when the scenario has none.
	Thresholds []thresholds.Result `json:"thresholds"`
}

// GateJSON returns the gate and the thresholds in their JSON shape.
func GateJSON(g thresholds.Gate, rs []thresholds.Result) GateObject {
	if rs == nil {
		rs = []thresholds.Result{}
	}
	return GateObject{Gate: g.Outcome(), FailOn: string(g.FailOn), Reasons: g.Reasons(), Thresholds: rs}
}
