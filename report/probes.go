package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/longhaul-dev/longhaul/window"
)

// ProbeProblem sums up one probe's failures over a run: in how many windows
// it was failing, which, and its last error. It explains a reading that is
// missing from those windows (and an analysis' missing_evidence finding).
type ProbeProblem struct {
	// Probe is the probe's name (process, heap.metric, heap.gc_hook,
	// heap.inspector, database).
	Probe string `json:"probe"`
	// Windows is how many of Of measured windows (gaps excluded) it was
	// failing in; FirstWindow and LastWindow are the first and last of them.
	Windows     int `json:"windows"`
	Of          int `json:"of"`
	FirstWindow int `json:"first_window"`
	LastWindow  int `json:"last_window"`
	// Error is its error in the last window it failed in.
	Error string `json:"error"`
}

// ProbeProblems sums up the window.ProbeFailures of ws, one ProbeProblem per
// probe, sorted by probe name. It returns nil when no probe failed.
func ProbeProblems(ws []window.Window) []ProbeProblem {
	byProbe := map[string]*ProbeProblem{}
	measured := 0
	for _, w := range ws {
		if w.Gap {
			continue
		}
		measured++
		for _, f := range w.ProbeFailures {
			p := byProbe[f.Probe]
			if p == nil {
				p = &ProbeProblem{Probe: f.Probe, FirstWindow: w.Index}
				byProbe[f.Probe] = p
			}
			p.Windows++
			p.LastWindow = w.Index
			p.Error = f.Error
		}
	}
	if len(byProbe) == 0 {
		return nil
	}
	out := make([]ProbeProblem, 0, len(byProbe))
	for _, p := range byProbe {
		p.Of = measured
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b ProbeProblem) int {
		switch {
		case a.Probe < b.Probe:
			return -1
		case a.Probe > b.Probe:
			return 1
		}
		return 0
	})
	return out
}

// WriteProbeProblems prints one line per problem under "probe problems:",
// or nothing when there is none:
//
//	probe problems:
//	  heap.inspector: failing in 30 of 30 windows (0-29): inspector 127.0.0.1:9229: ...
func WriteProbeProblems(out io.Writer, ps []ProbeProblem) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintln(out, "probe problems:")
	for _, p := range ps {
		span := fmt.Sprintf("window %d", p.FirstWindow)
		if p.LastWindow != p.FirstWindow {
			span = fmt.Sprintf("windows %d-%d", p.FirstWindow, p.LastWindow)
		}
		fmt.Fprintf(out, "  %s: failing in %d of %d windows (%s): %s\n", p.Probe, p.Windows, p.Of, span, oneLine(p.Error))
	}
}
