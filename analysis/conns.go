package analysis

import (
	"fmt"
)

// KindUnclosedConnections: the target's connections that its clients closed
// and it did not (CLOSE_WAIT) kept growing: sessions or keep-alive
// connections the server never releases.
const KindUnclosedConnections = "unclosed_connections"

// unclosedConnections reads the target's CLOSE_WAIT connections at each
// window's close (window.Probes.Connections). A client that closes its end
// of a connection leaves the server's end in CLOSE_WAIT until the server
// closes it too; a healthy server does so at once, so the count stays near 0
// however many sessions come and go. A count that only grows is a server
// that never closes what its clients left: each one holds a socket, a file
// descriptor and whatever its session owns, until the process runs out of
// descriptors ("too many open files") or memory.
//
// A finding needs MinWindows readings and either a rise (Mann–Kendall
// one-sided p ≤ Alpha and a last quarter whose median is at least MinRise
// above, and Factor times, the first quarter's) or a count held high (a
// median over the run of at least HighCount, not falling): a server that
// never closes can fill its CLOSE_WAIT within the first windows and then
// plateau at its open-file limit, where no rise is left to see. The count
// must also exceed the requests that timed out up to the last window: the driver closes a
// connection whose request timed out, and a server stuck on that request
// (thrashing at its memory limit, waiting on a lock) keeps it in CLOSE_WAIT
// until its handler returns. That is a slow server, which the latency and
// the timeouts already show, not one that never closes. It is a warning:
// the run itself may not have suffered yet, and the count says what to fix.
func (a *analyzer) unclosedConnections(inc *incarnation) (Finding, bool) {
	o := a.opts.Connections
	var pos []int
	var t, cw []float64
	var timedOut int64
	for i, w := range inc.ws {
		timedOut += w.Errors.Timeout
		if c := w.Probes.Connections; c != nil {
			pos = append(pos, i)
			t = append(t, inc.t[i])
			cw = append(cw, float64(c.CloseWait))
		}
	}
	n := len(cw)
	if n < o.MinWindows {
		return Finding{}, false
	}
	q := quarter(n)
	before, after := a.medianOf(cw[:q]), a.medianOf(cw[n-q:])
	mk := a.mannKendall(cw)
	level := a.medianOf(cw)
	rising := mk.PUp <= o.Alpha && after-before >= o.MinRise && after >= o.Factor*max(before, 1) && after-before > float64(timedOut)
	held := level >= o.HighCount && after >= before && after > float64(timedOut)
	if !rising && !held {
		return Finding{}, false
	}
	line, ok := a.theilSen(t, cw)
	perMin := 0.0
	if ok {
		perMin = line.Slope * 60
	}
	last := inc.ws[pos[n-1]].Probes.Connections
	first, lastW := inc.span(pos[0], pos[n-1])
	ev := Evidence{FirstWindow: first, LastWindow: lastW, Before: before, After: after, Unit: "connections",
		Slope: perMin, SlopeUnit: "connections/min", PValue: mk.PUp,
		Notes: map[string]float64{"close_wait_last": float64(last.CloseWait), "established_last": float64(last.Established), "windows": float64(n),
			"requests_timed_out": float64(timedOut)}}
	what := fmt.Sprintf("the target kept %s connections its clients had closed (CLOSE_WAIT) by the end, up from %s (+%s per minute, Mann–Kendall %s)",
		fmtCount(float64(last.CloseWait)), fmtCount(before), fmtCount(max(perMin, 0)), fmtP(mk.PUp))
	if !rising {
		what = fmt.Sprintf("the target held %s connections its clients had closed (CLOSE_WAIT) over the run (median; %s at the end), where a server that closes them keeps none",
			fmtCount(level), fmtCount(float64(last.CloseWait)))
		ev.Notes["close_wait_median"] = level
	}
	summary := what + ": it never closes them — sessions or keep-alive connections it does not release, each holding a socket and a file descriptor until the process runs out"
	return Finding{Kind: KindUnclosedConnections, Severity: Warning, Summary: summary, Incarnation: inc.num, Evidence: ev}, true
}
