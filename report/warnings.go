package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/longhaul-dev/longhaul/window"
)

// WarningLines is the slog.Handler of longhaul's own logger on a person's
// terminal. A record at Level or above becomes one readable line in the flow
// of the window table — "window 4: the target process 19419 exited (signal 9:
// killed)" — never a raw key=value record; every record the File handler
// accepts also goes there, structured, for later reading.
//
// The line is: "window N: " when the record (or the logger) has a window
// attribute; then the fault's own description when an attribute is an
// error carrying a window.Event (provision.ExitError), else the message and
// the err attribute's text. Errors get an "error: " prefix.
//
// Safe for concurrent use. SetProgress makes lines clear and redraw a
// progress bar drawn on the same terminal.
type WarningLines struct {
	shared *warningShared
	attrs  []slog.Attr // from WithAttrs, outermost first
	file   slog.Handler
}

type warningShared struct {
	mu       sync.Mutex
	out      io.Writer
	level    slog.Leveler
	progress *Progress
}

// NewWarningLines returns a handler writing readable lines of records at
// level or above to out and every record file accepts to file (nil: none).
func NewWarningLines(out io.Writer, level slog.Leveler, file slog.Handler) *WarningLines {
	if level == nil {
		level = slog.LevelWarn
	}
	return &WarningLines{shared: &warningShared{out: out, level: level}, file: file}
}

var _ slog.Handler = (*WarningLines)(nil)

// SetProgress sets (or, with nil, unsets) the progress bar that lines are
// written around. It applies to every handler derived by WithAttrs/WithGroup.
func (h *WarningLines) SetProgress(p *Progress) {
	h.shared.mu.Lock()
	h.shared.progress = p
	h.shared.mu.Unlock()
}

// Enabled implements slog.Handler.
func (h *WarningLines) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.shared.level.Level() || (h.file != nil && h.file.Enabled(ctx, l))
}

// Handle implements slog.Handler.
func (h *WarningLines) Handle(ctx context.Context, r slog.Record) error {
	var ferr error
	if h.file != nil && h.file.Enabled(ctx, r.Level) {
		ferr = h.file.Handle(ctx, r)
	}
	if r.Level < h.shared.level.Level() {
		return ferr
	}
	line := h.line(r)
	s := h.shared
	s.mu.Lock()
	p := s.progress
	s.mu.Unlock()
	p.Around(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, _ = io.WriteString(s.out, line+"\n")
	})
	return ferr
}

// line renders r as one readable line.
func (h *WarningLines) line(r slog.Record) string {
	var win, errText, probe, what string
	var detail string
	look := func(a slog.Attr) {
		switch a.Key {
		case "window", "index":
			if win == "" {
				win = a.Value.String()
			}
		case "probe":
			probe = a.Value.String()
		case "what":
			// What a record is about ("local environment … (run …)" for
			// the worker's sweep): a line without it says too little.
			what = a.Value.String()
		case "err", "error":
			if e, ok := a.Value.Any().(error); ok {
				var fe interface{ FaultEvent() window.Event }
				if errors.As(e, &fe) {
					detail = fe.FaultEvent().Detail
				}
				errText = e.Error()
			} else {
				errText = a.Value.String()
			}
		}
	}
	for _, a := range h.attrs {
		look(a)
	}
	r.Attrs(func(a slog.Attr) bool { look(a); return true })

	var b strings.Builder
	if r.Level >= slog.LevelError {
		b.WriteString("error: ")
	}
	if win != "" {
		fmt.Fprintf(&b, "window %s: ", win)
	}
	switch {
	case detail != "":
		b.WriteString(detail)
	default:
		if probe != "" {
			fmt.Fprintf(&b, "probe %s: ", probe)
		}
		b.WriteString(r.Message)
		if what != "" {
			b.WriteString(": ")
			b.WriteString(what)
		}
		if errText != "" {
			b.WriteString(": ")
			b.WriteString(errText)
		}
	}
	return strings.ReplaceAll(b.String(), "\n", "; ")
}

// WithAttrs implements slog.Handler.
func (h *WarningLines) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	if h.file != nil {
		c.file = h.file.WithAttrs(as)
	}
	return &c
}

// WithGroup implements slog.Handler. Readable lines ignore groups (their
// attributes are still looked at); the file gets them.
func (h *WarningLines) WithGroup(name string) slog.Handler {
	c := *h
	if h.file != nil {
		c.file = h.file.WithGroup(name)
	}
	return &c
}
