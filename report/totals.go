package report

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/longhaul-dev/longhaul/window"
)

// Totals summarises windows as they arrive: Summary gives the same result as
// window.Merge over every window added, but only the merged histograms are
// kept (one per op plus one overall), so memory does not grow with the run.
// The zero value is ready to use; not safe for concurrent use.
type Totals struct {
	s    window.Summary
	busy time.Duration
	all  *hdrhistogram.Histogram
	ops  map[string]*hdrhistogram.Histogram
}

// Add merges w into the totals. Gap windows are only counted. On a
// histogram that does not decode, w's counts are still added and the error
// says which window it was.
func (t *Totals) Add(w window.Window) error {
	if t.all == nil {
		t.all = window.NewHistogram()
		t.ops = map[string]*hdrhistogram.Histogram{}
		t.s.Ops = map[string]window.OpStats{}
	}
	t.s.AddCounts(w)
	if w.Gap {
		return nil
	}
	t.busy += w.Duration()
	var firstErr error
	if h, err := window.DecodeHistogram(w.Histogram); err != nil {
		firstErr = fmt.Errorf("window %d: %w", w.Index, err)
	} else {
		t.all.Merge(h)
	}
	for name, o := range w.Ops {
		if t.ops[name] == nil {
			t.ops[name] = window.NewHistogram()
		}
		h, err := window.DecodeHistogram(o.Histogram)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("window %d op %s: %w", w.Index, name, err)
			}
			continue
		}
		t.ops[name].Merge(h)
	}
	return firstErr
}

// Summary returns the summary of every window added so far. RPS is requests
// over the summed window durations, as in window.Merge.
func (t *Totals) Summary() window.Summary {
	s := t.s
	s.Ops = make(map[string]window.OpStats, len(t.s.Ops))
	if t.all == nil {
		return s
	}
	s.LatencyMs = window.LatencyOf(t.all)
	secs := t.busy.Seconds()
	if secs > 0 {
		s.RPS = float64(s.Requests-s.ConnectFailures) / secs
	}
	for name, o := range t.s.Ops {
		o.LatencyMs = window.LatencyOf(t.ops[name])
		if secs > 0 {
			o.RPS = float64(o.Requests) / secs
		}
		s.Ops[name] = o
	}
	return s
}
