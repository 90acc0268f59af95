package window

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Summary describes a set of windows (usually a whole run) as one: counts are
// summed and percentiles come from the merged histograms, never from
// averaging the windows' percentiles.
type Summary struct {
	Windows  int       `json:"windows"`
	Gaps     int       `json:"gaps"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Requests int64     `json:"requests"`
	OK       int64     `json:"ok"`
	Errors   Errors    `json:"errors"`
	Dropped  int64     `json:"dropped"`
	Skipped  int64     `json:"skipped"`
	// ConnectFailures ⊆ Errors: requests that found no connection; they
	// are not in RPS (see Window).
	ConnectFailures int64              `json:"connect_failures,omitempty"`
	RPS             float64            `json:"rps"`
	LatencyMs       Latency            `json:"latency_ms"`
	Ops             map[string]OpStats `json:"ops"`
}

// Merge summarises ws. RPS is requests that reached the target over the summed window durations (so a
// gap between incarnations does not dilute it). Gap windows are counted in
// Gaps and otherwise ignored.
func Merge(ws []Window) (Summary, error) {
	s, _, _, err := merge(ws)
	return s, err
}

// Distributions returns the latency distribution (Curve) of ws' requests,
// and of each op's, from their merged histograms.
func Distributions(ws []Window) (all []CurvePoint, ops map[string][]CurvePoint, err error) {
	_, h, oh, err := merge(ws)
	if err != nil {
		return nil, nil, err
	}
	ops = make(map[string][]CurvePoint, len(oh))
	for name, x := range oh {
		ops[name] = Curve(x)
	}
	return Curve(h), ops, nil
}

// AddCounts adds w's counts to s: a gap window to Gaps only; any other
// to Windows, the time span, the request and outcome counts and each op's
// (OpStats.AddCounts). Latencies and RPS are left to the caller, who merges
// the histograms and sums the durations.
func (s *Summary) AddCounts(w Window) {
	if w.Gap {
		s.Gaps++
		return
	}
	s.Windows++
	if s.Start.IsZero() || w.Start.Before(s.Start) {
		s.Start = w.Start
	}
	if w.End.After(s.End) {
		s.End = w.End
	}
	s.Requests += w.Requests
	s.OK += w.OK
	s.Errors.AddAll(w.Errors)
	s.Dropped += w.Dropped
	s.Skipped += w.Skipped
	s.ConnectFailures += w.ConnectFailures
	s.Ops = addOpCounts(s.Ops, w.Ops)
}

// addOpCounts adds the counts of ops to sums op by op (OpStats.AddCounts)
// and returns sums, made when it is nil and there is an op to add.
func addOpCounts(sums, ops map[string]OpStats) map[string]OpStats {
	for name, o := range ops {
		if sums == nil {
			sums = map[string]OpStats{}
		}
		acc := sums[name]
		acc.AddCounts(o)
		sums[name] = acc
	}
	return sums
}

// merge is Merge, also returning the merged histograms.
func merge(ws []Window) (Summary, *hdrhistogram.Histogram, map[string]*hdrhistogram.Histogram, error) {
	s := Summary{Ops: map[string]OpStats{}}
	all := NewHistogram()
	ops := map[string]*hdrhistogram.Histogram{}
	var busy time.Duration
	for _, w := range ws {
		s.AddCounts(w)
		if w.Gap {
			continue
		}
		busy += w.Duration()
		h, err := DecodeHistogram(w.Histogram)
		if err != nil {
			return s, nil, nil, fmt.Errorf("window %d: %w", w.Index, err)
		}
		all.Merge(h)
		for name, o := range w.Ops {
			oh, err := DecodeHistogram(o.Histogram)
			if err != nil {
				return s, nil, nil, fmt.Errorf("window %d op %s: %w", w.Index, name, err)
			}
			if ops[name] == nil {
				ops[name] = NewHistogram()
			}
			ops[name].Merge(oh)
		}
	}
	s.LatencyMs = LatencyOf(all)
	secs := busy.Seconds()
	if secs > 0 {
		s.RPS = float64(s.Requests-s.ConnectFailures) / secs
	}
	for name, o := range s.Ops {
		o.LatencyMs = LatencyOf(ops[name])
		if secs > 0 {
			o.RPS = float64(o.Requests) / secs
		}
		s.Ops[name] = o
	}
	return s, all, ops, nil
}
