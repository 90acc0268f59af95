package analysis

import (
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// A store that fell behind is said once, as information: the windows are
// all there, and nothing about the target is judged from it.
func TestStoreBehindIsInformation(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	ws := crashRun(1, 30, t0)
	detail := "the results store did not take windows for 1m2s; windows 14–75 waited in memory and were written late, none lost"
	ws[14].Events = []window.Event{{Kind: window.EventStoreBehind, At: t0.Add(14 * time.Second), Detail: detail}}
	res := Analyze(ws, DefaultOptions())
	f := findKind(t, res, KindStoreBehind)
	if f.Severity != Info || f.Summary != detail || f.Evidence.FirstWindow != 14 {
		t.Errorf("got %s %q at window %d; want info with the event's detail at window 14", f.Severity, f.Summary, f.Evidence.FirstWindow)
	}
	for _, g := range res.Findings {
		if g.Severity != Info {
			t.Errorf("a clean run whose store fell behind has a %s finding %s: %q", g.Severity, g.Kind, g.Summary)
		}
	}
}
