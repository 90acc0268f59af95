package analysis

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// TestUnclosedConnections: CLOSE_WAIT connections that pile up are a
// finding; a count that comes and goes (a few in passing at a window's
// close), or rises by less than MinRise, is not.
func TestUnclosedConnections(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	run := func(closeWait func(i int, r *rand.Rand) int64) []window.Window {
		r := rand.New(rand.NewPCG(1, 2))
		ws := crashRun(1, 30, t0)
		for i := range ws {
			ws[i].Probes.Connections = &window.Connections{Established: 100 + int64(r.IntN(5)), CloseWait: closeWait(i, r)}
		}
		return ws
	}
	tests := []struct {
		name     string
		cw       func(i int, r *rand.Rand) int64
		timeouts int64 // per window
		want     bool
	}{
		{"a server that never closes", func(i int, r *rand.Rand) int64 { return int64(6*i + r.IntN(3)) }, 0, true},
		{"never closes, beside a few timeouts", func(i int, r *rand.Rand) int64 { return int64(6*i + r.IntN(3)) }, 1, true},
		{"a healthy server: a few in passing", func(i int, r *rand.Rand) int64 { return int64(r.IntN(4)) }, 0, false},
		{"a rise below MinRise", func(i int, r *rand.Rand) int64 { return int64(i / 3) }, 0, false},
		// A server stuck at its memory limit: each timed-out request's
		// connection waits in CLOSE_WAIT for its handler.
		{"a stuck server's timed-out requests", func(i int, r *rand.Rand) int64 { return int64(6*i + r.IntN(3)) }, 8, false},
		// Filled in the first windows, then stuck at the open-file limit
		// (seen for real: 5,695 → 15,581 in 5 s, then flat).
		{"held at the open-file limit", func(i int, r *rand.Rand) int64 { return min(5700+1800*int64(i), 15581) }, 0, true},
		{"a burst that went away", func(i int, r *rand.Rand) int64 {
			if i >= 10 && i < 15 {
				return 200
			}
			return 0
		}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := run(tc.cw)
			for i := range ws {
				ws[i].Errors.Timeout = tc.timeouts
			}
			res := Analyze(ws, DefaultOptions())
			var got *Finding
			for i, f := range res.Findings {
				if f.Kind == KindUnclosedConnections {
					got = &res.Findings[i]
				}
			}
			if (got != nil) != tc.want {
				t.Fatalf("finding: got %v, want %v (findings %+v)", got != nil, tc.want, res.Findings)
			}
			if got == nil {
				return
			}
			if tc.name == "held at the open-file limit" {
				if !strings.Contains(got.Summary, "held 15,581 connections its clients had closed (CLOSE_WAIT) over the run") {
					t.Errorf("summary %q", got.Summary)
				}
				return
			}
			if got.Severity != Warning || got.Evidence.Unit != "connections" || got.Evidence.Slope < 30 || got.Evidence.Slope > 42 {
				t.Errorf("severity %s, slope %.1f %s: want a warning at about 36 connections/min (6 per 10 s window)", got.Severity, got.Evidence.Slope, got.Evidence.SlopeUnit)
			}
			for _, s := range []string{"CLOSE_WAIT", "never closes", "per minute"} {
				if !strings.Contains(got.Summary, s) {
					t.Errorf("summary %q lacks %q", got.Summary, s)
				}
			}
		})
	}
	// No readings (a URL target, or an old run): no finding, no note.
	if res := Analyze(crashRun(1, 30, t0), DefaultOptions()); len(res.Findings) > 0 {
		for _, f := range res.Findings {
			if f.Kind == KindUnclosedConnections {
				t.Errorf("a finding without readings: %+v", f)
			}
		}
	}
}
