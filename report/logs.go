package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/longhaul-dev/longhaul/store"
)

// ErrNoLogs is returned by WriteLogs when the run has no kept output of
// the asked process and incarnation (or window).
var ErrNoLogs = errors.New("no kept output")

// ErrBadLogQuery marks a LogQuery that selects nothing whatever the run
// holds (LogQuery.Check): the user's to fix.
var ErrBadLogQuery = errors.New("bad logs query")

// badLogQuery is an ErrBadLogQuery whose text is only what is wrong.
type badLogQuery string

func (e badLogQuery) Error() string        { return string(e) }
func (e badLogQuery) Is(target error) bool { return target == ErrBadLogQuery }

// Check returns an ErrBadLogQuery saying what is wrong with q, asked of
// a live run's output (follow) or of the kept output.
func (q LogQuery) Check(follow bool) error {
	switch {
	case q.Incarnation < 0:
		return badLogQuery("--incarnation is 1 or more (0: all)")
	case q.OneWindow && q.Window < 0:
		return badLogQuery("--window is 0 or more (the run's first window is 0)")
	case follow && (q.Incarnation != 0 || q.OneWindow):
		return badLogQuery("--follow shows the live incarnation; --incarnation and --window pick kept output")
	}
	return nil
}

// LogQuery selects a run's kept output: of Source ("target" or
// "database") and Incarnation (0: every incarnation); with OneWindow only
// the lines printed during window Window.
type LogQuery struct {
	Source      string
	Incarnation int
	OneWindow   bool
	Window      int
}

// WriteLogs writes the kept output of a run's processes to out. With
// several incarnations each starts with a header line; a log whose start
// was cut says so first. With q.OneWindow it writes the lines printed
// during that window, or ErrNoLogs saying which windows it has lines of.
func WriteLogs(ctx context.Context, st store.Logs, runID string, q LogQuery, out io.Writer) error {
	ls, err := st.Logs(ctx, runID, true)
	if err != nil {
		return err
	}
	var picked []store.TargetLog
	for _, l := range ls {
		if l.Source == q.Source && (q.Incarnation == 0 || l.Incarnation == q.Incarnation) {
			picked = append(picked, l)
		}
	}
	if len(picked) == 0 {
		return fmt.Errorf("%w of the %s of run %s%s (kept when a provisioned environment is torn down; none for a target.url)", ErrNoLogs, q.Source, runID, incarnationSuffix(q.Incarnation))
	}
	if q.OneWindow {
		if err := windowInRange(ctx, st, runID, q); err != nil {
			return err
		}
		return writeWindow(picked, runID, q, out)
	}
	for _, l := range picked {
		if len(picked) > 1 {
			fmt.Fprintf(out, "==> %s output, incarnation %d <==\n", l.Source, l.Incarnation)
		}
		if l.Truncated {
			fmt.Fprintf(out, "[… only the last %d bytes of its output were kept]\n", l.Bytes)
		}
		text, err := logText(l)
		if err != nil {
			return err
		}
		if _, err := out.Write(text); err != nil {
			return err
		}
	}
	return nil
}

// windowCounter is a store that counts a run's windows (store.Store).
type windowCounter interface {
	Counts(ctx context.Context, runIDs []string) (map[string]store.RunCounts, error)
}

// windowInRange returns ErrNoLogs saying which windows the run has when
// it has no window q.Window (when st can count them).
func windowInRange(ctx context.Context, st store.Logs, runID string, q LogQuery) error {
	wc, ok := st.(windowCounter)
	if !ok {
		return nil
	}
	counts, err := wc.Counts(ctx, []string{runID})
	if err != nil {
		return err
	}
	if n := counts[runID].Windows; q.Window >= n {
		has := "no windows"
		if n > 0 {
			has = fmt.Sprintf("windows 0–%d", n-1)
		}
		return fmt.Errorf("%w of the %s of run %s during window %d: the run has %s", ErrNoLogs, q.Source, runID, q.Window, has)
	}
	return nil
}

// writeWindow writes the lines of q.Window from the first of logs that
// knows them (a window belongs to one incarnation).
func writeWindow(logs []store.TargetLog, runID string, q LogQuery, out io.Writer) error {
	first, last := -1, -1
	for _, l := range logs {
		span, ok := l.Window(q.Window)
		for _, w := range l.Windows {
			if first < 0 || w.Index < first {
				first = w.Index
			}
			last = max(last, w.Index)
		}
		if !ok {
			continue
		}
		text, err := logText(l)
		if err != nil {
			return err
		}
		if span.From < 0 || span.To > len(text) || span.From > span.To {
			return fmt.Errorf("%s output of run %s, incarnation %d: window %d's lines (%d–%d) are outside its %d bytes", l.Source, runID, l.Incarnation, q.Window, span.From, span.To, len(text))
		}
		lines := text[span.From:span.To]
		if len(lines) == 0 {
			fmt.Fprintf(out, "[the %s printed nothing during window %d]\n", q.Source, q.Window)
		}
		_, err = out.Write(lines)
		return err
	}
	known := "no window's lines are known (kept by a longhaul before timestamps per window, or a target.url)"
	if first >= 0 {
		known = fmt.Sprintf("its lines are known for windows %d–%d", first, last)
		if first == last {
			known = fmt.Sprintf("its lines are known for window %d", first)
		}
	}
	return fmt.Errorf("%w of the %s of run %s%s during window %d: %s", ErrNoLogs, q.Source, runID, incarnationSuffix(q.Incarnation), q.Window, known)
}

// logText is a kept log's text, gunzipped.
func logText(l store.TargetLog) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(l.Data))
	if err != nil {
		return nil, fmt.Errorf("%s output of run %s, incarnation %d: %w", l.Source, l.RunID, l.Incarnation, err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s output of run %s, incarnation %d: %w", l.Source, l.RunID, l.Incarnation, err)
	}
	return text, nil
}

// WindowLines returns the lines of source's output printed during window
// index, from a run's kept logs (store.Logs with data), and whether they
// are known: for a finding or a page that shows a window.
func WindowLines(ls []store.TargetLog, source string, index int) ([]string, bool) {
	for _, l := range ls {
		span, ok := l.Window(index)
		if l.Source != source || !ok {
			continue
		}
		text, err := logText(l)
		if err != nil || span.From < 0 || span.To > len(text) || span.From > span.To {
			return nil, false
		}
		return splitLines(text[span.From:span.To]), true
	}
	return nil, false
}

func splitLines(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte("\n"))
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}

func incarnationSuffix(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", incarnation %d", n)
}
