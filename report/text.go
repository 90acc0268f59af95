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
}

// TextWriter prints one aligned line per window under a header, and a
// summary table at the end. Latencies are in milliseconds.
type TextWriter struct {
	out         *bufio.Writer
	opts        TextOptions
	header      bool
	incarnation int
}

// NewText returns a text writer on out.
func NewText(out io.Writer, opts TextOptions) *TextWriter {
	return &TextWriter{out: bufio.NewWriter(out), opts: opts}
}

// windowHeader names the columns of a window line.
const windowHeader = "     elapsed      req/s   p50 ms   p95 ms   p99 ms p99.9 ms   max ms   errors  dropped"

// Window prints w's line (after the header, the first time).
func (t *TextWriter) Window(w window.Window) error {
	var err error
	t.opts.Progress.Around(func() {
		if t.opts.Start.IsZero() {
			t.opts.Start = w.Start
		}
		if !t.header {
			t.header = true
			t.incarnation = w.Incarnation
			if w.Incarnation > 0 {
				fmt.Fprintf(t.out, "incarnation %d\n", w.Incarnation)
			}
			fmt.Fprintln(t.out, windowHeader)
		} else if w.Incarnation != t.incarnation {
			t.incarnation = w.Incarnation
			fmt.Fprintf(t.out, "incarnation %d\n", w.Incarnation)
		}
		writeWindowLine(t.out, w, w.End.Sub(t.opts.Start))
		err = t.out.Flush()
	})
	return err
}

func writeWindowLine(out io.Writer, w window.Window, elapsed time.Duration) {
	if w.Gap {
		fmt.Fprintf(out, "%12s  gap: window %d was lost, no measurements\n", clock(elapsed), w.Index)
		return
	}
	l := w.LatencyMs
	line := fmt.Sprintf("%12s %10s %8s %8s %8s %8s %8s %8d %8d",
		clock(elapsed), rps(w.RPS), ms(l.P50), ms(l.P95), ms(l.P99), ms(l.P999), ms(l.Max), w.Errors.Total(), w.Dropped)
	if e := errorClasses(w.Errors); e != "" {
		line += "  " + e
	}
	fmt.Fprintln(out, line)
}

// Summary prints the summary table: overall, then one row per op.
func (t *TextWriter) Summary(s window.Summary) error {
	var err error
	t.opts.Progress.Around(func() {
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
	fmt.Fprintf(&head, ", %d requests (%d ok, %d errors), %s req/s, %d dropped",
		s.Requests, s.OK, s.Errors.Total(), rps(s.RPS), s.Dropped)
	if s.Skipped > 0 {
		fmt.Fprintf(&head, ", %d skipped (empty pool)", s.Skipped)
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
		errs := errorClasses(e)
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
