package analysis

import (
	"fmt"
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
	for k, w := range inc.all {
		for _, ev := range w.Events {
			if ev.Kind != window.EventDatabaseExit {
				continue
			}
			out = append(out, inc.databaseStop(k, ev, runStart))
		}
	}
	return out
}

func (inc *incarnation) databaseStop(k int, ev window.Event, runStart time.Time) Finding {
	w := inc.all[k]
	var errs window.Errors
	recovered := -1
	for j := k; j < len(inc.all); j++ {
		x := inc.all[j]
		n := x.Errors.Total() - x.Errors.Interrupted
		if j > k && x.Requests > 0 && float64(n) <= recoveredErrorShare*float64(x.Requests-x.Errors.Interrupted) {
			recovered = j
			break
		}
		errs.AddAll(x.Errors)
	}
	errs.Interrupted = 0
	at := ev.At
	if at.IsZero() {
		at = w.End
	}
	when := fmt.Sprintf("in window %d (%s)", w.Index, ev.How())
	if !runStart.IsZero() && !at.IsZero() {
		when = fmt.Sprintf("%s into the run (window %d; %s)", clockOf(at.Sub(runStart)), w.Index, ev.How())
	}
	last := inc.all[len(inc.all)-1].Index
	if recovered >= 0 {
		last = inc.all[recovered-1].Index
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
	what := fmt.Sprintf("the database %s %s", stoppedVerb(ev), when)
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
