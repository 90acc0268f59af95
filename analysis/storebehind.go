package analysis

import "github.com/longhaul-dev/longhaul/window"

// KindStoreBehind: the results store did not take windows for a while
// during the run; the worker kept them and wrote them late, in order. Not
// a fault of the target: it says why the live view paused and that no
// measurement was lost.
const KindStoreBehind = "store_behind"

// storeBehind returns one info finding per window.EventStoreBehind event
// (each time the store fell behind and came back).
func (inc *incarnation) storeBehind() []Finding {
	var out []Finding
	for _, w := range inc.all {
		for _, ev := range w.Events {
			if ev.Kind != window.EventStoreBehind {
				continue
			}
			out = append(out, Finding{
				Kind: KindStoreBehind, Severity: Info, Incarnation: inc.num,
				Summary:  ev.Detail,
				Evidence: Evidence{FirstWindow: w.Index, LastWindow: w.Index, At: ev.At},
			})
		}
	}
	return out
}
