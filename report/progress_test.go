package report

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	start := t0
	tests := []struct {
		name    string
		total   time.Duration
		elapsed time.Duration
		width   int
		want    string
	}{
		// width 40: the text takes 24 columns, the bar the rest but one.
		{"start", time.Minute, 0, 40, "[>            ]   0%  0:00:00 / 0:01:00"},
		{"half", time.Minute, 30 * time.Second, 40, "[======>      ]  50%  0:00:30 / 0:01:00"},
		{"done", time.Minute, 61 * time.Second, 40, "[=============] 100%  0:01:01 / 0:01:00"},
		{"narrow", time.Minute, 30 * time.Second, 20, "50%  0:00:30 / 0:01:00"},
		{"no total", 0, 90 * time.Second, 40, "running 0:01:30"},
	}
	for _, tt := range tests {
		p := newProgress(nil, start, tt.total, tt.width, func() time.Time { return start.Add(tt.elapsed) })
		if got := p.line(); got != tt.want {
			t.Errorf("%s: line() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Around clears the bar before the caller's output and redraws it after,
// so a window line never lands in the middle of the bar.
func TestProgressAround(t *testing.T) {
	var term bytes.Buffer
	now := t0.Add(30 * time.Second)
	p := newProgress(&term, t0, time.Minute, 40, func() time.Time { return now })
	p.Draw()
	p.Around(func() { term.WriteString("LINE\n") })
	p.Clear()
	got := strings.Split(term.String(), "\r")
	bar := "[======>      ]  50%  0:00:30 / 0:01:00\x1b[K"
	want := []string{"", bar, "\x1b[KLINE\n", bar, "\x1b[K"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("terminal output = %q, want %q", got, want)
	}
}

func TestProgressNilAndNotTerminal(t *testing.T) {
	var p *Progress
	p.Draw()
	p.Clear()
	ran := false
	p.Around(func() { ran = true })
	if !ran {
		t.Error("nil Progress: Around did not run f")
	}
	p.Run(context.Background(), time.Second) // returns at once
	if got := NewProgress(&bytes.Buffer{}, t0, time.Minute); got != nil {
		t.Error("NewProgress on a buffer: want nil (not a terminal)")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := NewProgress(f, t0, time.Minute); got != nil {
		t.Error("NewProgress on a regular file: want nil (not a terminal)")
	}
}

func TestProgressStopIsFinal(t *testing.T) {
	var term bytes.Buffer
	p := newProgress(&term, t0, time.Minute, 40, func() time.Time { return t0 })
	p.Draw()
	p.Stop()
	n := term.Len()
	p.Draw()
	p.Around(func() { term.WriteString("summary\n") })
	if got := term.String()[n:]; got != "summary\n" {
		t.Errorf("output after Stop = %q, want only the caller's line", got)
	}
}

func TestProgressRunClearsOnStop(t *testing.T) {
	var term syncBuffer
	p := newProgress(&term, t0, time.Minute, 40, func() time.Time { return t0 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx, time.Millisecond); close(done) }()
	time.Sleep(5 * time.Millisecond)
	cancel()
	<-done
	if s := term.String(); !strings.HasSuffix(s, "\r\x1b[K") || !strings.Contains(s, "0%") {
		t.Errorf("after Run stopped, terminal = %q: want drawn bars ending with a clear", s)
	}
}
