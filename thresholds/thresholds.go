// Package thresholds judges a run against the limits its scenario sets
// (scenarios.Threshold) and decides the gate a pipeline trusts: passed or
// failed.
//
// Recipe:
//
//  1. At the end of a run, Evaluate the scenario's thresholds on the run's
//     windows: one Result per threshold, with the value it was judged on.
//  2. While the run goes on, feed each closed window to a Watcher of the
//     thresholds that abort (scope window, abort: true); it says when one
//     fails, and the caller stops the load.
//  3. Judge the results together with the run's findings and the --fail-on
//     severity: Gate.Passed is the pipeline's answer (exit code 0 or 3).
//
// Scope run judges the windows after each incarnation's warm-up merged into
// one summary — percentiles from the merged HDR histograms (window.Merge),
// never averaged. Scope window judges each window after warm-up alone and
// fails at the first run of Windows consecutive breaching windows; windows
// without a reading are passed over. A threshold with no reading at all
// fails: a gate that cannot see is not a pass.
//
// The package is pure: no I/O, no clock.
package thresholds

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// Result is one threshold judged on a run.
type Result struct {
	// Threshold is the threshold as a person reads it ("p99_ms{op=list} max 250").
	Threshold string `json:"threshold"`
	Metric    string `json:"metric"`
	// Op is the op the metric was measured on; empty for all ops together.
	Op string `json:"op"`
	// Bound is "max" (Value must not exceed Limit) or "min".
	Bound string  `json:"bound"`
	Limit float64 `json:"limit"`
	// Value is what the threshold was judged on: the run's value (scope
	// run), or the window value that completed the breach, or the worst
	// window's when none did (scope window). Nil when there was no reading.
	Value *float64 `json:"value"`
	OK    bool     `json:"ok"`
	Scope string   `json:"scope"`
	// Windows is the number of consecutive breaching windows that fail a
	// window-scoped threshold.
	Windows int `json:"windows,omitempty"`
	// Window (scope window) is the index of the window that completed the
	// breach, or of the worst window when the threshold held; nil for scope run.
	Window      *int `json:"window"`
	Incarnation int  `json:"incarnation,omitempty"`
	Abort       bool `json:"abort,omitempty"`
	// Note says why there is no Value.
	Note string `json:"note,omitempty"`
}

// String is one line: "p99_ms{op=list} max 250: 182.4 ok",
// "error_rate max 0.01: 0.034 FAILED", with the window for scope window.
func (r Result) String() string {
	if r.OK {
		return r.Threshold + ": " + r.Measured() + " ok"
	}
	return r.Threshold + ": " + r.Measured() + " FAILED"
}

// Measured says what was measured: "182.4", "25 in window 4", "no value
// (no process probe readings)".
func (r Result) Measured() string {
	if r.Value == nil {
		if r.Note != "" {
			return "no value (" + r.Note + ")"
		}
		return "no value"
	}
	s := FormatValue(*r.Value)
	if r.Window != nil {
		s += " in window " + strconv.Itoa(*r.Window)
		if r.Incarnation > 1 {
			s += fmt.Sprintf(" of incarnation %d", r.Incarnation)
		}
	}
	return s
}

// StopReason is the run's reason when r, a threshold with abort: true,
// stopped it: "stopped early: threshold p99_ms max 250 (any window) failed
// with 312.4 in window 7".
func StopReason(r Result) string {
	s := "stopped early: threshold " + r.Threshold + " failed"
	if r.Value != nil {
		s += " with " + FormatValue(*r.Value)
	}
	if r.Window != nil {
		s += " in window " + strconv.Itoa(*r.Window)
	}
	return s
}

// FormatValue prints a figure with 4 significant digits and no exponent
// for everyday magnitudes (0.0123, 182.4, 2310, 52430000).
func FormatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1e-4:
		digits := 3 - int(math.Floor(math.Log10(a)))
		return strconv.FormatFloat(v, 'f', digits, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Breaches returns the results that did not pass.
func Breaches(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if !r.OK {
			out = append(out, r)
		}
	}
	return out
}

// Evaluate judges every threshold on the run's windows (any order, any
// incarnations). warmup is the scenario's load.warmup: in each
// incarnation, windows that start before its first window's start + warmup
// are left out. The error is a window whose histogram does not decode.
func Evaluate(ths []scenarios.Threshold, ws []window.Window, warmup time.Duration) ([]Result, error) {
	if len(ths) == 0 {
		return nil, nil
	}
	kept := afterWarmup(ws, warmup)
	var sum *window.Summary
	out := make([]Result, 0, len(ths))
	for _, th := range ths {
		if th.Scope != scenarios.ScopeWindow {
			if sum == nil {
				s, err := window.Merge(kept)
				if err != nil {
					return nil, fmt.Errorf("thresholds: %w", err)
				}
				sum = &s
			}
			out = append(out, judgeRun(th, kept, *sum))
			continue
		}
		j := newJudge(th, 0) // kept is already past warm-up
		for i := range kept {
			j.observe(&kept[i])
		}
		out = append(out, j.result())
	}
	return out, nil
}

// afterWarmup sorts ws by incarnation and index (a window stored twice keeps
// its last copy), drops gaps and each incarnation's warm-up.
func afterWarmup(ws []window.Window, warmup time.Duration) []window.Window {
	sorted := slices.Clone(ws)
	slices.SortStableFunc(sorted, func(a, b window.Window) int {
		return cmp.Or(cmp.Compare(a.Incarnation, b.Incarnation), cmp.Compare(a.Index, b.Index))
	})
	out := sorted[:0]
	var w warm
	for _, x := range sorted {
		if k := len(out); k > 0 && out[k-1].Incarnation == x.Incarnation && out[k-1].Index == x.Index {
			out = out[:k-1] // the later copy replaces it below
		}
		if x.Gap || w.within(&x, warmup) {
			continue
		}
		out = append(out, x)
	}
	return out
}

// warm tracks where the current incarnation's warm-up ends.
type warm struct {
	inc   int
	end   time.Time
	begun bool
}

// within reports whether w starts within its incarnation's warm-up. The
// incarnation's start is its first window that is not a gap.
func (s *warm) within(w *window.Window, warmup time.Duration) bool {
	if warmup <= 0 || w.Gap {
		return false
	}
	if !s.begun || w.Incarnation != s.inc {
		s.inc, s.begun, s.end = w.Incarnation, true, w.Start.Add(warmup)
	}
	return w.Start.Before(s.end)
}

// judgeRun judges a run-scoped threshold on the summary of the kept windows.
func judgeRun(th scenarios.Threshold, kept []window.Window, s window.Summary) Result {
	r := newResult(th)
	v, note := runValue(th, kept, s)
	if note != "" {
		r.Note = note
		return r
	}
	r.Value = &v
	r.OK = !th.Breached(v)
	return r
}

func newResult(th scenarios.Threshold) Result {
	limit, isMax := th.Limit()
	bound := "min"
	if isMax {
		bound = "max"
	}
	r := Result{Threshold: th.String(), Metric: th.Metric, Op: th.Op, Bound: bound, Limit: limit, Scope: th.Scope, Abort: th.Abort}
	if r.Scope == "" {
		r.Scope = scenarios.ScopeRun
	}
	if r.Scope == scenarios.ScopeWindow {
		r.Windows = max(th.Windows, 1)
	}
	return r
}

// runValue is the metric over the whole run, or a note saying why there is none.
func runValue(th scenarios.Threshold, kept []window.Window, s window.Summary) (float64, string) {
	if s.Windows == 0 {
		return 0, "no windows after warm-up"
	}
	requests, errs, lat, rps := s.Requests, s.Errors.Total(), s.LatencyMs, s.RPS
	if th.Op != "" {
		o, ok := s.Ops[th.Op]
		if !ok {
			return 0, "op " + th.Op + " sent no requests"
		}
		requests, errs, lat, rps = o.Requests, o.Errors.Total(), o.LatencyMs, o.RPS
	}
	switch th.Metric {
	case "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms":
		if requests == 0 {
			return 0, "no requests"
		}
		return latency(th.Metric, lat), ""
	case "rps":
		return rps, ""
	case "error_rate":
		if requests == 0 {
			return 0, "no requests"
		}
		return float64(errs) / float64(requests), ""
	case "dropped_rate":
		if s.Requests+s.Dropped == 0 {
			return 0, "no requests"
		}
		return float64(s.Dropped) / float64(s.Requests+s.Dropped), ""
	case "cpu_us_per_request", "rows_read_per_request", "alloc_bytes_per_request", "gc_per_1k_requests":
		// A total over requests, not a mean of the windows' ratios: a
		// short last window weighs what its requests weigh.
		var sum float64
		var n int64
		for i := range kept {
			if v, ok := windowValue(th, &kept[i]); ok {
				sum += v * float64(kept[i].Requests)
				n += kept[i].Requests
			}
		}
		if n == 0 {
			return 0, "no " + probeOf(th.Metric) + " readings"
		}
		return sum / float64(n), ""
	case "rss_bytes", "heap_bytes":
		found := false
		var peak float64
		for i := range kept {
			if v, ok := windowValue(th, &kept[i]); ok && (!found || v > peak) {
				peak, found = v, true
			}
		}
		if !found {
			return 0, "no " + probeOf(th.Metric) + " readings"
		}
		return peak, ""
	}
	return 0, "unknown metric " + th.Metric
}

func probeOf(metric string) string {
	switch metric {
	case "cpu_us_per_request", "rss_bytes":
		return "process probe"
	case "alloc_bytes_per_request", "gc_per_1k_requests":
		return "Go runtime counter"
	case "heap_bytes":
		return "heap probe"
	case "rows_read_per_request":
		return "database probe"
	}
	return metric
}

func latency(metric string, l window.Latency) float64 {
	switch metric {
	case "p50_ms":
		return l.P50
	case "p90_ms":
		return l.P90
	case "p95_ms":
		return l.P95
	case "p99_ms":
		return l.P99
	case "p999_ms":
		return l.P999
	}
	return l.Max
}

// windowValue is the metric in one window; false when the window has no
// reading of it (a gap, no requests, a probe that did not answer).
func windowValue(th scenarios.Threshold, w *window.Window) (float64, bool) {
	if w.Gap {
		return 0, false
	}
	requests, errs, lat, rps := w.Requests, w.Errors.Total(), w.LatencyMs, w.RPS
	if th.Op != "" {
		o, ok := w.Ops[th.Op]
		if !ok {
			return 0, false
		}
		requests, errs, lat, rps = o.Requests, o.Errors.Total(), o.LatencyMs, o.RPS
	}
	p := w.Probes
	switch th.Metric {
	case "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms":
		return latency(th.Metric, lat), requests > 0
	case "rps":
		return rps, true
	case "error_rate":
		if requests == 0 {
			return 0, false
		}
		return float64(errs) / float64(requests), true
	case "dropped_rate":
		if w.Requests+w.Dropped == 0 {
			return 0, false
		}
		return float64(w.Dropped) / float64(w.Requests+w.Dropped), true
	case "cpu_us_per_request":
		if p.CPUMicrosPerRequest == nil || w.Requests == 0 {
			return 0, false
		}
		return *p.CPUMicrosPerRequest, true
	case "alloc_bytes_per_request":
		if p.AllocBytesPerRequest == nil || w.Requests == 0 {
			return 0, false
		}
		return *p.AllocBytesPerRequest, true
	case "gc_per_1k_requests":
		if p.GCPer1kRequests == nil || w.Requests == 0 {
			return 0, false
		}
		return *p.GCPer1kRequests, true
	case "rss_bytes":
		if p.RSSBytes == nil {
			return 0, false
		}
		return float64(*p.RSSBytes), true
	case "heap_bytes":
		if p.HeapBytes == nil {
			return 0, false
		}
		return float64(*p.HeapBytes), true
	case "rows_read_per_request":
		if p.Database == nil || w.Requests == 0 {
			return 0, false
		}
		return p.Database.RowsReadPerRequest, true
	}
	return 0, false
}

// judge follows one window-scoped threshold through a run's windows.
type judge struct {
	th     scenarios.Threshold
	warmup time.Duration
	need   int
	warm   warm

	inc, lastIndex int
	streak         int
	seen           bool
	// breach is the window value that completed the first breach.
	breach *reading
	// worst is the reading furthest on the wrong side of the limit.
	worst *reading
}

type reading struct {
	value      float64
	index, inc int
}

func newJudge(th scenarios.Threshold, warmup time.Duration) *judge {
	return &judge{th: th, warmup: warmup, need: max(th.Windows, 1)}
}

// observe takes the next window of the run (in incarnation, index order)
// and reports whether the threshold failed with it (true once, at the
// window that completed the first breach).
func (j *judge) observe(w *window.Window) bool {
	if w.Gap || j.warm.within(w, j.warmup) {
		return false
	}
	if !j.seen || w.Incarnation != j.inc {
		j.inc, j.streak, j.seen = w.Incarnation, 0, true
	}
	v, ok := windowValue(j.th, w)
	if !ok {
		return false
	}
	rd := reading{value: v, index: w.Index, inc: w.Incarnation}
	if j.worst == nil || worse(j.th, v, j.worst.value) {
		j.worst = &rd
	}
	if !j.th.Breached(v) {
		j.streak = 0
		return false
	}
	j.streak++
	if j.streak >= j.need && j.breach == nil {
		j.breach = &rd
		return true
	}
	return false
}

// worse reports whether a is further on the failing side of the limit than b.
func worse(th scenarios.Threshold, a, b float64) bool {
	if _, isMax := th.Limit(); isMax {
		return a > b
	}
	return a < b
}

func (j *judge) result() Result {
	r := newResult(j.th)
	rd := j.breach
	r.OK = rd == nil
	if rd == nil {
		rd = j.worst
	}
	if rd == nil {
		r.OK = false
		r.Note = "no window after warm-up had a reading"
		if probe := probeOf(j.th.Metric); probe != j.th.Metric {
			r.Note = "no " + probe + " readings"
		}
		return r
	}
	v, idx := rd.value, rd.index
	r.Value, r.Window, r.Incarnation = &v, &idx, rd.inc
	return r
}

// Watcher judges window-scoped thresholds as windows close, so a run can
// stop as soon as one fails. It is not safe for concurrent use.
type Watcher struct {
	judges []*judge
}

// NewWatcher watches the window-scoped thresholds among ths (the others
// are ignored); warmup is the scenario's load.warmup.
func NewWatcher(ths []scenarios.Threshold, warmup time.Duration) *Watcher {
	w := &Watcher{}
	for _, th := range ths {
		if th.Scope == scenarios.ScopeWindow {
			w.judges = append(w.judges, newJudge(th, warmup))
		}
	}
	return w
}

// Empty reports whether the watcher has no threshold to watch.
func (w *Watcher) Empty() bool { return len(w.judges) == 0 }

// Observe takes the next closed window, in incarnation and index order,
// and returns the thresholds that failed with it (each fails once).
func (w *Watcher) Observe(win window.Window) []Result {
	var failed []Result
	for _, j := range w.judges {
		if j.observe(&win) {
			failed = append(failed, j.result())
		}
	}
	return failed
}
