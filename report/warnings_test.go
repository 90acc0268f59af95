package report

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

type exitErr struct{ ev window.Event }

func (e exitErr) Error() string            { return "environment gone: " + e.ev.Detail }
func (e exitErr) FaultEvent() window.Event { return e.ev }

func TestWarningLines(t *testing.T) {
	gone := fmt.Errorf("check: %w", exitErr{window.Event{Kind: window.EventTargetExit, Detail: "the target process 19419 exited (signal 9: killed)"}})
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want string // on the terminal; "" for nothing
	}{
		{"a target that died", func(l *slog.Logger) {
			l.With("run", "01a2", "incarnation", 1).Warn("environment check failed", "window", 4, "failures", 1, "err", gone)
		}, "window 4: the target process 19419 exited (signal 9: killed)\n"},
		{"a probe that failed", func(l *slog.Logger) {
			l.Warn("probe failed; its readings stay empty until it recovers", "probe", "process", "failures", 1, "err", errors.New("no such process"))
		}, "probe process: probe failed; its readings stay empty until it recovers: no such process\n"},
		{"window from the logger", func(l *slog.Logger) {
			l.With("window", 7).Warn("store behind", "err", errors.New("connection refused\nretrying"))
		}, "window 7: store behind: connection refused; retrying\n"},
		{"an error", func(l *slog.Logger) { l.Error("teardown failed", "err", errors.New("busy")) }, "error: teardown failed: busy\n"},
		{"info stays in the file", func(l *slog.Logger) { l.Info("driving", "window", 1) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var term, file bytes.Buffer
			h := NewWarningLines(&term, slog.LevelWarn, slog.NewTextHandler(&file, &slog.HandlerOptions{Level: slog.LevelInfo}))
			tt.log(slog.New(h))
			if got := term.String(); got != tt.want {
				t.Errorf("terminal %q, want %q", got, tt.want)
			}
			if strings.Contains(term.String(), "level=") || strings.Contains(term.String(), "time=") {
				t.Errorf("a raw record reached the terminal: %q", term.String())
			}
			if !strings.Contains(file.String(), "level=") {
				t.Errorf("the file did not get the structured record: %q", file.String())
			}
		})
	}
}

// Lines clear and redraw a progress bar on the same terminal.
func TestWarningLinesAroundProgress(t *testing.T) {
	var term bytes.Buffer
	h := NewWarningLines(&term, slog.LevelWarn, nil)
	p := newProgress(&term, t0, 0, 40, func() time.Time { return t0 })
	p.Draw()
	h.SetProgress(p)
	slog.New(h).Warn("x", "window", 2)
	got := term.String()
	i := strings.Index(got, "window 2: x\n")
	if i < 0 {
		t.Fatalf("no line in %q", got)
	}
	if !strings.Contains(got[:i], "\r") || len(got) == i+len("window 2: x\n") {
		t.Errorf("the bar was not cleared before the line and redrawn after it: %q", got)
	}
}
