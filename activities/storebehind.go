package activities

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// DefaultStoreBehindLimit is how long a drive keeps closed windows in
// memory while the results store does not take them (a PostgreSQL store
// restarting or unreachable, a full disk under a SQLite store) before it
// gives up. Ten minutes of 1 s windows is a few megabytes.
const DefaultStoreBehindLimit = 10 * time.Minute

// storeWriteTimeout bounds one attempt to write a window, so that an
// unreachable store (packets dropped, not refused) does not hold up the
// closing of the next window.
const storeWriteTimeout = 5 * time.Second

// commitQueue writes a drive's closed windows to the store in order. When
// a write fails, the window and every later one wait in memory and the
// load goes on; each later window retries the oldest first, so windows
// reach the store in order and none is lost to a blip. The first window
// written late carries a window.EventStoreBehind saying how long the store
// did not answer and which windows waited.
type commitQueue struct {
	put       func(context.Context, window.Window) error
	committed func(window.Window) // after each window is in the store
	now       func() time.Time
	limit     time.Duration
	log       *slog.Logger

	pending     []window.Window
	behindSince time.Time // zero while the store takes windows
	lastErr     error
}

// add queues w and writes what the store takes. It returns an error only
// when the store has not taken a window for longer than the limit: then
// the drive fails (and is retried from the last window written).
func (q *commitQueue) add(ctx context.Context, w window.Window) error {
	q.pending = append(q.pending, w)
	return q.flush(ctx)
}

// flush writes the waiting windows, oldest first, until one fails.
func (q *commitQueue) flush(ctx context.Context) error {
	for len(q.pending) > 0 {
		w := q.pending[0]
		if !q.behindSince.IsZero() {
			w.Events = append(w.Events, q.behindEvent(w))
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWriteTimeout)
		err := q.put(wctx, w)
		cancel()
		if err != nil {
			return q.failed(w, err)
		}
		if !q.behindSince.IsZero() {
			q.log.Warn(fmt.Sprintf("the results store is back after %s: %d windows written late, none lost",
				q.now().Sub(q.behindSince).Round(time.Second), len(q.pending)), "window", w.Index)
			// Only the first window written late carries the event: its
			// detail names the ones after it, written in this same flush.
			q.behindSince, q.lastErr = time.Time{}, nil
		}
		q.pending = q.pending[1:]
		q.committed(w)
	}
	return nil
}

func (q *commitQueue) failed(w window.Window, err error) error {
	q.lastErr = err
	if q.behindSince.IsZero() {
		q.behindSince = q.now()
		q.log.Warn("the results store did not take a window; the load goes on and closed windows wait in memory until it is back",
			"window", w.Index, "err", err)
	}
	limit := q.limit
	if limit <= 0 {
		limit = DefaultStoreBehindLimit
	}
	if behind := q.now().Sub(q.behindSince); behind > limit {
		return fmt.Errorf("the results store has not taken a window for %s (windows %d–%d wait, not written): %w",
			behind.Round(time.Second), q.pending[0].Index, q.pending[len(q.pending)-1].Index, err)
	}
	return nil
}

// behindEvent is the event the first window written late carries.
func (q *commitQueue) behindEvent(w window.Window) window.Event {
	last := q.pending[len(q.pending)-1].Index
	what := fmt.Sprintf("window %d", w.Index)
	if last > w.Index {
		what = fmt.Sprintf("windows %d–%d", w.Index, last)
	}
	detail := fmt.Sprintf("the results store did not take windows for %s; %s waited in memory and were written late, none lost",
		q.now().Sub(q.behindSince).Round(time.Second), what)
	if q.lastErr != nil {
		detail += " (" + oneLineErr(q.lastErr) + ")"
	}
	return window.Event{Kind: window.EventStoreBehind, At: q.behindSince, Detail: detail}
}

// drain writes what still waits at the end of a drive, retrying every
// retry until the store takes it all or the limit passes.
func (q *commitQueue) drain(ctx context.Context, retry time.Duration) error {
	for {
		if err := q.flush(ctx); err != nil || len(q.pending) == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("windows %d–%d not written: the results store did not take them before the drive ended: %w",
				q.pending[0].Index, q.pending[len(q.pending)-1].Index, q.lastErr)
		case <-time.After(retry):
		}
	}
}

// oneLineErr is an error's text on one line, bounded for an event's detail.
func oneLineErr(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
