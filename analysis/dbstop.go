package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// KindDatabaseStop: the target's database stopped during the run (it was
// killed, crashed or restarted), from the window.EventDatabaseExit events
// the drive recorded when its environment check found the database's
// process or container not running.
const KindDatabaseStop = "database_stop"

// recoveredErrorShare is the error share of a window under which the target
// counts as answering again after its database stopped.
const recoveredErrorShare = 0.01

// databaseStops returns one finding per time the database stopped in the
// incarnation: when, how, the errors the target answered until it recovered
// (the first later window with at most recoveredErrorShare errors), and
// whether it did before the incarnation ended. Critical when it did not (the
// run lost its database), else a warning: the soak went on, and the windows
// in between say what the clients saw. Warm-up windows count: a database
// that stops is a fact whenever it happens.
func (inc *incarnation) databaseStops(runStart time.Time) []Finding {
	var out []Finding
	for _, w := range inc.withStoppedGaps() {
		for _, ev := range w.Events {
			if ev.Kind != window.EventDatabaseExit {
				continue
			}
			out = append(out, inc.databaseStop(w, ev, runStart))
		}
	}
	return out
}

// withStoppedGaps is inc.all with inc.stoppedGaps among them, by index.
func (inc *incarnation) withStoppedGaps() []*window.Window {
	if len(inc.stoppedGaps) == 0 {
		return inc.all
	}
	ws := append(slices.Clone(inc.all), inc.stoppedGaps...)
	slices.SortStableFunc(ws, func(x, y *window.Window) int { return cmp.Compare(x.Index, y.Index) })
	return ws
}

// databaseStop is the finding for ev, recorded in w: a window of inc.all,
// or a gap (a drive resuming after its worker died found the database
// stopped), whose errors are then those of the windows after it.
func (inc *incarnation) databaseStop(w *window.Window, ev window.Event, runStart time.Time) Finding {
	k, _ := slices.BinarySearchFunc(inc.all, w.Index, func(x *window.Window, i int) int { return cmp.Compare(x.Index, i) })
	var errs window.Errors
	recovered := -1
	last := w.Index // the last window with the stop's errors
	for j := k; j < len(inc.all); j++ {
		x := inc.all[j]
		n := x.Errors.Total() - x.Errors.Interrupted
		if x != w && x.Requests > 0 && float64(n) <= recoveredErrorShare*float64(x.Requests-x.Errors.Interrupted) {
			recovered = j
			break
		}
		errs.AddAll(x.Errors)
		last = x.Index
	}
	errs.Interrupted = 0
	at := ev.At
	if at.IsZero() {
		at = w.End
	}
	how, verb := ev.How(), stoppedVerb(ev)
	if ev.RestartedElsewhere {
		// Seen only by its new start: no exit status to give.
		how, verb = "not by longhaul", "was restarted"
	}
	when := fmt.Sprintf("in window %d (%s)", w.Index, how)
	if !runStart.IsZero() && !at.IsZero() {
		when = fmt.Sprintf("%s into the run (window %d; %s)", clockOf(at.Sub(runStart)), w.Index, how)
	}
	if w.Gap {
		// No window saw it stop: it happened while the drive's worker was
		// gone, at the latest when the resumed drive found it.
		lost := "lost with its worker: found stopped when the drive resumed"
		when = fmt.Sprintf("in window %d (%s; %s)", w.Index, lost, how)
		if !runStart.IsZero() && !at.IsZero() {
			by := ""
			if ev.At.IsZero() {
				by = "by "
			}
			when = fmt.Sprintf("%s%s into the run (window %d, %s; %s)", by, clockOf(at.Sub(runStart)), w.Index, lost, how)
		}
	}
	f := Finding{
		Kind:        KindDatabaseStop,
		Severity:    Warning,
		Incarnation: inc.num,
		Evidence: Evidence{
			FirstWindow: w.Index, LastWindow: last, At: ev.At, Output: lastN(ev.Output, crashLines),
			Notes: map[string]float64{"errors": float64(errs.Total())},
		},
	}
	what := fmt.Sprintf("the database %s %s", verb, when)
	if ev.Restarted {
		what += "; longhaul restarted it in place"
	}
	byClass := errs.String()
	switch {
	case recovered >= 0:
		f.Summary = fmt.Sprintf("%s; the target answered %s errors (%s) until it recovered in window %d", what, fmtCount(float64(errs.Total())), byClass, inc.all[recovered].Index)
		f.Evidence.Notes["recovered_window"] = float64(inc.all[recovered].Index)
	default:
		f.Severity = Critical
		f.Summary = fmt.Sprintf("%s; the target did not recover before the run ended (%s errors since: %s)", what, fmtCount(float64(errs.Total())), byClass)
	}
	if errs.Total() == 0 {
		f.Summary = fmt.Sprintf("%s; no request failed", what)
	}
	return f
}
