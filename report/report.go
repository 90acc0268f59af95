// Package report turns longhaul's results — windows, summaries, runs and
// findings — into what a person or a program reads: aligned text, or NDJSON
// with a stable shape.
//
// Recipe:
//
//  1. Pick a WindowWriter for the user's format: NewText (one aligned line per
//     window, a summary table at the end) or NewJSON (one object per window
//     per line, then one {"type":"summary"} object).
//  2. Call Window as each window closes. Feed the same windows to a Totals,
//     which merges their histograms as they come, so a run of days keeps no
//     windows in memory.
//  3. At the end call Summary with Totals.Summary() (or window.Merge of the
//     stored windows): percentiles come from merged histograms, never from
//     averaged percentiles.
//
// For stored runs, WriteRunText/WriteRunJSON print a whole run (status,
// windows, summary, probe problems, findings) and WriteRunsText/WriteRunsJSON
// a list of runs. ProbeProblems sums up the probes that failed during a run
// (from each window's ProbeFailures); WriteFindings prints findings, and
// WriteAnalysisText/WriteAnalysisJSON the outcome of `longhaul analyze`.
// On a terminal, a Progress bar on stderr shows how far the run is; the text
// writer clears it before each line and redraws it after.
//
// Text window lines carry probe columns when the windows have probe
// readings (CPU µs per request, RSS, post-GC heap with forced-GC checkpoints
// marked, off-heap memory, event-loop delay or GC pause p99, rows read per
// request, rows of the fastest-growing table; as far as the line has room, a
// Go target's bytes allocated and GC cycles per request and transactions per
// request): see Columns.
//
// Every writer is deterministic for given input (sorted op names, UTC
// times), which the golden files in testdata pin down.
package report

import (
	"fmt"
	"io"

	"github.com/longhaul-dev/longhaul/window"
)

// Format names an output format.
type Format string

// Output formats.
const (
	Text Format = "text"
	JSON Format = "json"
)

// ParseFormat returns the Format named s ("text" or "json").
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case Text, JSON:
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown format %q: use text or json", s)
}

// WindowWriter prints a run as it happens: each window as it closes, then the
// summary. Implementations are not safe for concurrent use.
type WindowWriter interface {
	Window(w window.Window) error
	Summary(s window.Summary) error
}

var (
	_ WindowWriter = (*TextWriter)(nil)
	_ WindowWriter = (*JSONWriter)(nil)
)

// NewWindowWriter returns the writer for format f on out; opts apply to text.
func NewWindowWriter(f Format, out io.Writer, opts TextOptions) (WindowWriter, error) {
	switch f {
	case Text:
		return NewText(out, opts), nil
	case JSON:
		return NewJSON(out), nil
	}
	return nil, fmt.Errorf("unknown format %q: use text or json", f)
}
