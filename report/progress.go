package report

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress is a one-line progress bar for a whole run, redrawn in place on a
// terminal (normally stderr). A nil *Progress is valid and draws nothing, so
// callers need not check whether output is a terminal. Safe for concurrent
// use.
type Progress struct {
	mu      sync.Mutex
	out     io.Writer
	start   time.Time
	total   time.Duration // 0: unknown (runs until stopped)
	width   int           // of the whole line, in columns
	now     func() time.Time
	shown   bool
	stopped bool
}

// fdWriter is what a terminal file (*os.File) offers.
type fdWriter interface {
	io.Writer
	Fd() uintptr
}

// NewProgress returns a bar for a run of length total (0 if unknown)
// starting at start, drawn on out — or nil when out is not a terminal, so
// that redirected output never carries escape codes.
func NewProgress(out io.Writer, start time.Time, total time.Duration) *Progress {
	f, ok := out.(fdWriter)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	width := 80
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
		width = w
	}
	return newProgress(out, start, total, width, time.Now)
}

func newProgress(out io.Writer, start time.Time, total time.Duration, width int, now func() time.Time) *Progress {
	return &Progress{out: out, start: start, total: total, width: width, now: now}
}

// Draw redraws the bar in place.
func (p *Progress) Draw() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw()
}

// Clear erases the bar, leaving the cursor at the start of its line.
func (p *Progress) Clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

// Around clears the bar, runs f (which prints lines elsewhere on the same
// terminal), and redraws the bar, with no redraw in between. With a nil
// Progress it just runs f.
func (p *Progress) Around(f func()) {
	if p == nil {
		f()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	f()
	p.draw()
}

// Stop clears the bar for good: later Draw and Around calls draw nothing.
func (p *Progress) Stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.stopped = true
}

// Run redraws the bar every interval until ctx is done, then stops it.
func (p *Progress) Run(ctx context.Context, every time.Duration) {
	if p == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	p.Draw()
	for {
		select {
		case <-ctx.Done():
			p.Stop()
			return
		case <-t.C:
			p.Draw()
		}
	}
}

func (p *Progress) clear() {
	if p.shown {
		io.WriteString(p.out, "\r\x1b[K")
		p.shown = false
	}
}

func (p *Progress) draw() {
	if p.stopped {
		return
	}
	io.WriteString(p.out, "\r"+p.line()+"\x1b[K")
	p.shown = true
}

// line renders the bar: "[=====>     ]  42%  0:12:30 / 0:30:00", or without
// a total "running 0:12:30".
func (p *Progress) line() string {
	elapsed := max(p.now().Sub(p.start), 0).Truncate(time.Second)
	if p.total <= 0 {
		return "running " + clock(elapsed)
	}
	frac := min(float64(elapsed)/float64(p.total), 1)
	text := fmt.Sprintf(" %3.0f%%  %s / %s", frac*100, clock(elapsed), clock(p.total.Truncate(time.Second)))
	barWidth := min(p.width-len(text)-3, 50)
	if barWidth < 5 {
		return strings.TrimSpace(text)
	}
	filled := int(frac * float64(barWidth))
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(strings.Repeat("=", filled))
	if filled < barWidth {
		b.WriteByte('>')
		b.WriteString(strings.Repeat(" ", barWidth-filled-1))
	}
	b.WriteByte(']')
	b.WriteString(text)
	return b.String()
}
