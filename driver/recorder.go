package driver

import (
	"fmt"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/longhaul-dev/longhaul/window"
)

// recorder collects what the VUs measure and turns it into windows.
//
// Memory is what makes a soak driver fail after hours, so it is sized
// deliberately. A dense 1 µs..60 s, 3-digit HDR histogram is 136 KiB;
// one per VU per op (and a second for double buffering) would be 43 MiB for
// 16 VUs × 10 ops and grow with the VU count. Instead:
//
//   - VUs record into a fixed number of shards (a few per CPU, never more than
//     the VUs), each guarded by its own mutex that is held for a few
//     nanoseconds and almost never contended.
//   - A shard holds one sparse PackedHistogram per op, whose size follows the
//     number of distinct latency buckets actually hit (a few KiB), and is
//     double-buffered: closing a window swaps the buffer under the lock and
//     merges the old one outside it, so VUs never wait for a merge.
//   - The merge goes into one dense histogram per op plus one overall, owned
//     by the collector and reset after every window.
//
// Everything is allocated once and reused, so memory stays flat over a run.
type recorder struct {
	names  []string // slot → op or setup step name (names may repeat across ops and steps: one slot each)
	shards []shard

	// Collector-owned: merge targets, reused every window.
	accOps []*hdrhistogram.Histogram
	accAll *hdrhistogram.Histogram
}

// shard is padded to its own cache lines so VUs on different CPUs do not
// false-share the mutexes.
type shard struct {
	mu    sync.Mutex
	cur   *shardData
	spare *shardData
	_     [40]byte
}

type shardData struct {
	ops []opData
}

type opData struct {
	hist     *hdrhistogram.PackedHistogram
	classes  [window.NumClasses]int64
	skipped  int64
	connFail int64 // of classes' errors, those that found no connection
}

func newShardData(slots int) *shardData {
	d := &shardData{ops: make([]opData, slots)}
	for i := range d.ops {
		d.ops[i].hist = hdrhistogram.NewPacked(window.MinMicros, window.MaxMicros, window.SignificantDigits)
	}
	return d
}

func newRecorder(names []string, shards int) *recorder {
	if shards < 1 {
		shards = 1
	}
	r := &recorder{names: names, shards: make([]shard, shards), accOps: make([]*hdrhistogram.Histogram, len(names)), accAll: window.NewHistogram()}
	for i := range r.shards {
		r.shards[i].cur = newShardData(len(names))
		r.shards[i].spare = newShardData(len(names))
	}
	for i := range r.accOps {
		r.accOps[i] = window.NewHistogram()
	}
	return r
}

// record counts one request of op slot in class c; its latency goes into the
// histograms when withLatency is set.
func (r *recorder) record(shardIdx, slot int, c window.Class, latency time.Duration, withLatency bool) {
	r.recordConn(shardIdx, slot, c, latency, withLatency, false)
}

// recordConn is record that also says whether the request failed to open its
// connection (Window.ConnectFailures).
func (r *recorder) recordConn(shardIdx, slot int, c window.Class, latency time.Duration, withLatency, connFailed bool) {
	us := int64(latency / time.Microsecond)
	if us < window.MinMicros {
		us = window.MinMicros
	} else if us > window.MaxMicros {
		us = window.MaxMicros
	}
	s := &r.shards[shardIdx]
	s.mu.Lock()
	o := &s.cur.ops[slot]
	o.classes[c]++
	if connFailed {
		o.connFail++
	}
	if withLatency {
		_ = o.hist.RecordValue(us) // cannot fail inside the bounds
	}
	s.mu.Unlock()
}

// skip counts one pick of op slot that sent nothing (its pool was empty).
func (r *recorder) skip(shardIdx, slot int) {
	s := &r.shards[shardIdx]
	s.mu.Lock()
	s.cur.ops[slot].skipped++
	s.mu.Unlock()
}

// collect closes the current window: it swaps every shard's buffer, merges
// what was recorded and fills w's counts, percentiles and histograms. Only
// one goroutine may call it at a time.
func (r *recorder) collect(w *window.Window) error {
	type opTotals struct {
		classes  [window.NumClasses]int64
		skipped  int64
		connFail int64
	}
	totals := make([]opTotals, len(r.names))
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		d := s.cur
		s.cur, s.spare = s.spare, d
		s.mu.Unlock()
		for slot := range d.ops {
			o := &d.ops[slot]
			t := &totals[slot]
			for c := range o.classes {
				t.classes[c] += o.classes[c]
				o.classes[c] = 0
			}
			t.skipped += o.skipped
			o.skipped = 0
			t.connFail += o.connFail
			o.connFail = 0
			if o.hist.TotalCount() > 0 {
				o.hist.MergeInto(r.accOps[slot])
				o.hist.MergeInto(r.accAll)
				o.hist.Reset()
			}
		}
	}

	w.Ops = make(map[string]window.OpStats, len(r.names))
	for slot, name := range r.names {
		t := &totals[slot]
		var st window.OpStats
		for c := window.Class(0); c < window.NumClasses; c++ {
			n := t.classes[c]
			st.Requests += n
			if c == window.OK {
				st.OK += n
			} else {
				st.Errors.Add(c, n)
			}
		}
		st.Skipped = t.skipped
		w.ConnectFailures += t.connFail
		w.Requests += st.Requests
		w.OK += st.OK
		w.Errors.AddAll(st.Errors)
		w.Skipped += st.Skipped
		if st.Requests == 0 && st.Skipped == 0 {
			continue
		}
		h := r.accOps[slot]
		st.LatencyMs = window.LatencyOf(h)
		b, err := window.EncodeHistogram(h)
		if err != nil {
			return fmt.Errorf("op %s: %w", name, err)
		}
		st.Histogram = b
		h.Reset()
		if prev, ok := w.Ops[name]; ok {
			// An op and a setup step share the name: report them as one.
			st = mergeOpStats(prev, st)
		}
		w.Ops[name] = st
	}
	w.LatencyMs = window.LatencyOf(r.accAll)
	b, err := window.EncodeHistogram(r.accAll)
	if err != nil {
		return err
	}
	w.Histogram = b
	r.accAll.Reset()
	return nil
}

func mergeOpStats(a, b window.OpStats) window.OpStats {
	ha, errA := window.DecodeHistogram(a.Histogram)
	hb, errB := window.DecodeHistogram(b.Histogram)
	a.AddCounts(b)
	if errA == nil && errB == nil {
		ha.Merge(hb)
		a.LatencyMs = window.LatencyOf(ha)
		if enc, err := window.EncodeHistogram(ha); err == nil {
			a.Histogram = enc
		}
	}
	return a
}
