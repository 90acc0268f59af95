package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// TextOptions tune a TextWriter. The zero value is ready to use.
type TextOptions struct {
	// Start is the run's start; a window line shows the time from it to the
	// window's end. Zero means the first window's start.
	Start time.Time
	// Progress, when set, is cleared before each line and redrawn after, so
	// the bar (on stderr) and the lines (on stdout) share a terminal cleanly.
	Progress *Progress
	// Columns are the probe columns to show from the first line (ColumnsOf
	// the windows, for a stored run). A column that first appears later is
	// added then, and the header printed again.
	Columns Columns
	// Table is the table whose rows ColTable shows (FastestGrowingTable of
	// the windows, for a stored run); "" means the table that has grown
	// most so far.
	Table string
}

// TextWriter prints one aligned line per window under a header, and a
// summary table at the end. Latencies are in milliseconds.
//
// Windows with probe readings get probe columns (see Columns) after the
// latency columns: CPU µs per request, RSS, post-GC heap ("*" marks a
// forced-GC checkpoint), a Node.js target's off-heap memory and event-loop
// delay p99, a Go target's GC pause p99, PostgreSQL rows read per request
// and the rows of the fastest-growing table; then, as far as the line has
// room, a Go target's bytes allocated and GC cycles per request and
// PostgreSQL transactions per request (a legend names those left out).
// Only columns with a reading are shown; to keep such a line within about
// 120 columns the latency part is narrower and leaves out p95 (it is in the
// summary and the JSON).
type TextWriter struct {
	out         *bufio.Writer
	opts        TextOptions
	header      bool
	incarnation int
	cols        Columns
	wanted      Columns // the columns with a reading, cols and those left out for width
	tables      tableGrowth
	forced      bool // a forced-GC checkpoint was shown
}

// NewText returns a text writer on out.
func NewText(out io.Writer, opts TextOptions) *TextWriter {
	return &TextWriter{out: bufio.NewWriter(out), opts: opts}
}

// windowHeader names the columns of a window line without probe columns;
// probeWindowHeader those of one with them (before the probe headers).
const (
	windowHeader      = "window      elapsed      req/s   p50 ms   p90 ms   p95 ms   p99 ms p99.9 ms   max ms   errors  dropped"
	probeWindowHeader = "  win elapsed   req/s  p50 ms   p99 ms p99.9 ms   max ms errors dropped"
)

// Window prints w's line (after the header, the first time).
func (t *TextWriter) Window(w window.Window) error {
	var err error
	t.opts.Progress.Around(func() {
		if t.opts.Start.IsZero() {
			t.opts.Start = w.Start
		}
		if !t.header {
			t.cols = fit(t.opts.Columns)
			t.wanted = t.opts.Columns
		}
		t.wanted |= columnsOf(w)
		cols := fit(t.cols | columnsOf(w))
		grown := cols != t.cols
		t.cols = cols
		t.tables.add(w)
		switch {
		case !t.header:
			t.header = true
			t.incarnation = w.Incarnation
			if w.Incarnation > 0 {
				fmt.Fprintf(t.out, "incarnation %d\n", w.Incarnation)
			}
			t.writeHeader()
		case w.Incarnation != t.incarnation:
			t.incarnation = w.Incarnation
			fmt.Fprintf(t.out, "incarnation %d\n", w.Incarnation)
			if grown {
				t.writeHeader()
			}
		case grown:
			t.writeHeader()
		}
		table := t.opts.Table
		if table == "" && t.cols&ColTable != 0 {
			table = t.tables.fastest()
		}
		if t.cols&ColHeap != 0 && w.Probes.HeapBytes != nil && w.Probes.HeapForcedGC {
			t.forced = true
		}
		writeWindowLine(t.out, w, w.End.Sub(t.opts.Start), t.cols, table)
		err = t.out.Flush()
	})
	return err
}

// writeLegend explains the marks the lines used.
func (t *TextWriter) writeLegend() {
	if t.forced {
		fmt.Fprintln(t.out, "heap MiB marked * : post-GC heap at a forced-GC checkpoint")
	}
	if out := t.wanted &^ t.cols; out != 0 {
		fmt.Fprintf(t.out, "left out for width: %s (in the JSON output)\n", columnNames(out))
	}
}

func (t *TextWriter) writeHeader() {
	if t.cols == 0 {
		fmt.Fprintln(t.out, windowHeader)
		return
	}
	fmt.Fprintln(t.out, probeWindowHeader+probeHeader(t.cols))
}

func writeWindowLine(out io.Writer, w window.Window, elapsed time.Duration, cols Columns, table string) {
	// A full window closes a few milliseconds after its boundary; its line
	// shows the boundary, so the column keeps its width. A partial window's
	// line keeps the milliseconds: it ends where the run was stopped.
	if !w.Partial {
		elapsed = elapsed.Round(time.Second)
	}
	if w.Gap {
		index, width := 6, 12
		if cols != 0 {
			index, width = 5, 7
		}
		fmt.Fprintf(out, "%*d %*s  gap: this window was lost, no measurements\n", index, w.Index, width, clock(elapsed))
		return
	}
	l := w.LatencyMs
	var line string
	if cols == 0 {
		line = fmt.Sprintf("%6d %12s %10s %8s %8s %8s %8s %8s %8s %8d %8d", w.Index,
			clock(elapsed), rps(w.RPS), ms(l.P50), ms(l.P90), ms(l.P95), ms(l.P99), ms(l.P999), ms(l.Max), w.Errors.Total(), w.Dropped)
	} else {
		line = fmt.Sprintf("%5d %7s %7s %7s %8s %8s %8s %6d %7d", w.Index,
			clock(elapsed), rps(w.RPS), ms(l.P50), ms(l.P99), ms(l.P999), ms(l.Max), w.Errors.Total(), w.Dropped) +
			probeCells(cols, w, table)
	}
	if e := w.Errors.String(); e != "" {
		line += "  " + e
	}
	if w.ConnectFailures > 0 {
		line += fmt.Sprintf(" (%d not connected)", w.ConnectFailures)
	}
	if w.Partial {
		line += "  partial: cut short, left out of the findings"
	}
	fmt.Fprintln(out, line)
}

// Summary prints the summary table: overall, then one row per op.
func (t *TextWriter) Summary(s window.Summary) error {
	var err error
	t.opts.Progress.Around(func() {
		t.writeLegend()
		if t.header {
			fmt.Fprintln(t.out)
		}
		writeSummary(t.out, s)
		err = t.out.Flush()
	})
	return err
}

func writeSummary(out io.Writer, s window.Summary) {
	var head strings.Builder
	fmt.Fprintf(&head, "summary: %d windows", s.Windows)
	if s.Gaps > 0 {
		fmt.Fprintf(&head, " (+%d lost)", s.Gaps)
	}
	if !s.Start.IsZero() {
		fmt.Fprintf(&head, ", %s", clock(s.End.Sub(s.Start)))
	}
	fmt.Fprintf(&head, ", %d requests (%d ok, %d errors: %s), %s req/s, %d dropped (%s of intended starts)",
		s.Requests, s.OK, s.Errors.Total(), shareOf(s.Errors.Total(), s.Requests), rps(s.RPS), s.Dropped, shareOf(s.Dropped, s.Requests+s.Skipped+s.Dropped))
	if s.Skipped > 0 {
		fmt.Fprintf(&head, ", %d skipped (empty pool)", s.Skipped)
	}
	if s.ConnectFailures > 0 {
		fmt.Fprintf(&head, ", %d found no connection (not in req/s)", s.ConnectFailures)
	}
	fmt.Fprintln(out, head.String())

	names := opNames(s.Ops)
	width := len("all")
	for _, n := range names {
		width = max(width, len(n))
	}
	fmt.Fprintf(out, "%-*s %10s %10s %8s %8s %8s %8s %8s %8s  %s\n",
		width, "op", "requests", "req/s", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms", "errors")
	row := func(name string, requests int64, r float64, l window.Latency, e window.Errors) {
		errs := e.String()
		if errs == "" {
			errs = "0"
		}
		fmt.Fprintf(out, "%-*s %10d %10s %8s %8s %8s %8s %8s %8s  %s\n",
			width, name, requests, rps(r), ms(l.P50), ms(l.P90), ms(l.P95), ms(l.P99), ms(l.P999), ms(l.Max), errs)
	}
	row("all", s.Requests, s.RPS, s.LatencyMs, s.Errors)
	for _, n := range names {
		o := s.Ops[n]
		row(n, o.Requests, o.RPS, o.LatencyMs, o.Errors)
	}
}
