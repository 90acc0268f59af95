package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// JSONWriter prints NDJSON: one object per window per line, then one
// {"type":"summary"} object. A window object has exactly the keys index,
// start, end, requests, errors (by class), dropped, rps, latency_ms (p50,
// p90, p95, p99, p999, max) and ops (the same shape per op name); incarnation,
// skipped, gap, probes and custom appear only when nonzero. Times are RFC 3339 in
// UTC; rates are rounded to three decimals.
type JSONWriter struct {
	out *bufio.Writer
	enc *json.Encoder
}

// NewJSON returns an NDJSON writer on out.
func NewJSON(out io.Writer) *JSONWriter {
	b := bufio.NewWriter(out)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	return &JSONWriter{out: b, enc: enc}
}

// Window prints w as one line.
func (j *JSONWriter) Window(w window.Window) error { return j.write(WindowJSON(w)) }

// Summary prints s as one line.
func (j *JSONWriter) Summary(s window.Summary) error { return j.write(SummaryJSON(s)) }

func (j *JSONWriter) write(v any) error {
	if err := j.enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	if err := j.out.Flush(); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// WindowObject is the JSON shape of one window (see JSONWriter).
type WindowObject struct {
	Index     int                 `json:"index"`
	Start     time.Time           `json:"start"`
	End       time.Time           `json:"end"`
	Requests  int64               `json:"requests"`
	Errors    window.Errors       `json:"errors"`
	Dropped   int64               `json:"dropped"`
	RPS       float64             `json:"rps"`
	LatencyMs window.Latency      `json:"latency_ms"`
	Ops       map[string]OpObject `json:"ops"`

	Incarnation int   `json:"incarnation,omitempty"`
	Skipped     int64 `json:"skipped,omitempty"`
	// ConnectFailures: requests that found no connection (in Errors under
	// their class, not in RPS).
	ConnectFailures int64          `json:"connect_failures,omitempty"`
	Gap             bool           `json:"gap,omitempty"`
	Probes          *window.Probes `json:"probes,omitempty"`
	// ProbeFailures: the probes failing when the window closed, and why.
	ProbeFailures []window.ProbeFailure `json:"probe_failures,omitempty"`
	// Custom: an imported run's other series (window.Window.Custom).
	Custom map[string]float64 `json:"custom,omitempty"`
}

// OpObject is the JSON shape of one op in a window or summary.
type OpObject struct {
	Requests  int64          `json:"requests"`
	Errors    window.Errors  `json:"errors"`
	RPS       float64        `json:"rps"`
	LatencyMs window.Latency `json:"latency_ms"`
	Skipped   int64          `json:"skipped,omitempty"`
}

// SummaryObject is the JSON shape of a summary: Type is always "summary".
type SummaryObject struct {
	Type      string              `json:"type"`
	Windows   int                 `json:"windows"`
	Start     time.Time           `json:"start"`
	End       time.Time           `json:"end"`
	Requests  int64               `json:"requests"`
	Errors    window.Errors       `json:"errors"`
	Dropped   int64               `json:"dropped"`
	RPS       float64             `json:"rps"`
	LatencyMs window.Latency      `json:"latency_ms"`
	Ops       map[string]OpObject `json:"ops"`

	Gaps    int   `json:"gaps,omitempty"`
	Skipped int64 `json:"skipped,omitempty"`
	// ConnectFailures: requests that found no connection (not in RPS).
	ConnectFailures int64 `json:"connect_failures,omitempty"`
}

// WindowJSON returns w in its JSON shape.
func WindowJSON(w window.Window) WindowObject {
	o := WindowObject{
		Index: w.Index, Start: w.Start.UTC(), End: w.End.UTC(),
		Requests: w.Requests, Errors: w.Errors, Dropped: w.Dropped,
		RPS: round3(w.RPS), LatencyMs: w.LatencyMs, Ops: opsJSON(w.Ops),
		Incarnation: w.Incarnation, Skipped: w.Skipped, Gap: w.Gap,
		ConnectFailures: w.ConnectFailures,
		ProbeFailures:   w.ProbeFailures, Custom: w.Custom,
	}
	if w.Probes != (window.Probes{}) {
		p := w.Probes
		o.Probes = &p
	}
	return o
}

// SummaryJSON returns s in its JSON shape.
func SummaryJSON(s window.Summary) SummaryObject {
	return SummaryObject{
		Type: "summary", Windows: s.Windows, Start: s.Start.UTC(), End: s.End.UTC(),
		Requests: s.Requests, Errors: s.Errors, Dropped: s.Dropped,
		RPS: round3(s.RPS), LatencyMs: s.LatencyMs, Ops: opsJSON(s.Ops),
		Gaps: s.Gaps, Skipped: s.Skipped, ConnectFailures: s.ConnectFailures,
	}
}

func opsJSON(ops map[string]window.OpStats) map[string]OpObject {
	out := make(map[string]OpObject, len(ops)) // never null
	for name, o := range ops {
		out[name] = OpObject{Requests: o.Requests, Errors: o.Errors, RPS: round3(o.RPS), LatencyMs: o.LatencyMs, Skipped: o.Skipped}
	}
	return out
}
