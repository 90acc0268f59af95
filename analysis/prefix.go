package analysis

import (
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// Prefix returns the windows of a run that a soak stopped early would have
// had: those with Index < windows (when windows > 0) and ending no later
// than until after the run's first window start (when until > 0). It shows
// how soon a verdict holds: Analyze(Prefix(ws, 90, 0), opts) is the analysis
// after the first 90 windows. ws is not modified; the result shares its
// elements' backing memory.
func Prefix(ws []window.Window, windows int, until time.Duration) []window.Window {
	if windows <= 0 && until <= 0 {
		return ws
	}
	var start time.Time
	for _, w := range ws {
		if !w.Start.IsZero() && (start.IsZero() || w.Start.Before(start)) {
			start = w.Start
		}
	}
	out := make([]window.Window, 0, len(ws))
	for _, w := range ws {
		if windows > 0 && w.Index >= windows {
			continue
		}
		if until > 0 && !start.IsZero() && w.End.After(start.Add(until)) {
			continue
		}
		out = append(out, w)
	}
	return out
}
