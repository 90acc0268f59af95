package analysis

import (
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// KindCrash: the target stopped during the run (it exited, was killed by a
// signal or for running out of memory). Always critical.
const KindCrash = "crash"

// crashLines is how many lines of the target's last output a crash finding keeps.
const crashLines = 50

// crashes returns one critical finding per time the target stopped in the
// incarnation, from the window.EventTargetExit events the drive recorded
// (warm-up windows included: a crash is a crash whenever it happens). A
// crash needs no minimum of windows, so it is never "insufficient data".
// runStart is the start of the run's first window, for the time into the run.
// later are the incarnations after this one: when the next one follows
// the last crash (target.restart started the target again), the finding
// says so and how long the target was down.
func (inc *incarnation) crashes(runStart time.Time, later []*incarnation) []Finding {
	var out []Finding
	var served int64
	var lastAt time.Time // when the last crash happened
	for _, w := range inc.withStoppedGaps() {
		served += answered(w)
		for _, ev := range w.Events {
			if ev.Kind != window.EventTargetExit {
				continue
			}
			out = append(out, crashFinding(inc.num, w, ev, served, runStart))
			if lastAt = ev.At; lastAt.IsZero() {
				lastAt = w.End
			}
		}
	}
	if len(out) > 0 && len(later) > 0 && later[0].num == inc.num+1 {
		noteRestart(&out[len(out)-1], lastAt, later[0])
	}
	return out
}

// noteRestart adds to a crash finding that the target was started again
// as incarnation next and was down from the crash (at) until next's first
// window began (the target answered its health check just before), or,
// when next has no window (its worker died in its first), until the end of
// its first gap, the slot lost while it restarted.
func noteRestart(f *Finding, at time.Time, next *incarnation) {
	var up time.Time
	switch {
	case len(next.all) > 0:
		up = next.all[0].Start
	case next.firstGap != nil:
		up = next.firstGap.End
	}
	if at.IsZero() || up.IsZero() {
		return
	}
	down := up.Sub(at).Seconds()
	if down < 0 {
		return
	}
	f.Summary += fmt.Sprintf("; restarted (incarnation %d), down for %.1f s", next.num, down)
	f.Evidence.Notes["down_seconds"] = down
	f.Evidence.Notes["restarted_incarnation"] = float64(next.num)
}

// answered counts the requests of w that got a response, whatever its status.
func answered(w *window.Window) int64 {
	return w.OK + w.Errors.Status4xx + w.Errors.Status5xx + w.Errors.Unexpected
}

func crashFinding(num int, w *window.Window, ev window.Event, served int64, runStart time.Time) Finding {
	at := ev.At
	if at.IsZero() {
		at = w.End
	}
	when := fmt.Sprintf("in window %d", w.Index)
	if !runStart.IsZero() && !at.IsZero() {
		when = fmt.Sprintf("%s into the run (window %d)", clockOf(at.Sub(runStart)), w.Index)
	}
	if w.Gap {
		// A drive resuming after its worker died found it stopped: it
		// happened while no one watched, at the latest when it was found.
		lost := "lost with its worker: found stopped when the drive resumed"
		when = fmt.Sprintf("in window %d (%s)", w.Index, lost)
		if !runStart.IsZero() && !at.IsZero() {
			by := ""
			if ev.At.IsZero() {
				by = "by "
			}
			when = fmt.Sprintf("%s%s into the run (window %d, %s)", by, clockOf(at.Sub(runStart)), w.Index, lost)
		}
	}
	f := Finding{
		Kind:        KindCrash,
		Severity:    Critical,
		Incarnation: num,
		Summary: fmt.Sprintf("the target %s %s, after %s requests served (%s)",
			stoppedVerb(ev), when, fmtCount(float64(served)), ev.How()),
		Evidence: Evidence{
			FirstWindow: w.Index, LastWindow: w.Index,
			Notes:  map[string]float64{"requests_served": float64(served)},
			At:     ev.At,
			Output: lastN(ev.Output, crashLines),
		},
	}
	if ev.ExitCode != nil {
		f.Evidence.Notes["exit_code"] = float64(*ev.ExitCode)
	}
	if ev.Signal != 0 {
		f.Evidence.Notes["signal"] = float64(ev.Signal)
	}
	if ev.OOMKilled {
		f.Evidence.Notes["oom_killed"] = 1
	}
	return f
}

func stoppedVerb(ev window.Event) string {
	switch {
	case ev.OOMKilled, ev.Signal != 0:
		return "was killed"
	case ev.ExitCode != nil:
		return "exited"
	}
	return "stopped"
}

func lastN(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// clockOf formats d as h:mm:ss.
func clockOf(d time.Duration) string {
	d = d.Round(time.Second)
	if d < 0 {
		d = 0
	}
	h, m, s := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	return fmt.Sprintf("%d:%02d:%02d", h, m, s)
}
