package follow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/targetlog"
)

// OutputFollower streams what one process (report.LogQuery.Source) of a
// live environment prints until ctx is done or the environment is gone.
// env is the run record's Environment (the provider's JSON): the command
// passes the provisioner's follower, so that this package needs no
// provider.
type OutputFollower func(ctx context.Context, env json.RawMessage, source string, w io.Writer) error

// LogsPoll is how often Logs looks at the run's record while it follows:
// to stop when the run ends and to move to a new incarnation.
const LogsPoll = time.Second

// Logs writes a run's output to w: for a run that has ended, the output
// kept with it (report.WriteLogs); for a live one, the end of what the
// process printed so far and then what it prints, like `tail -f`, until
// the run ends. When the run's environment is replaced (a new incarnation)
// it goes on with the new one after a header line. Secrets the scenario
// resolved from ${env:NAME} are masked in every line, as in kept output.
func Logs(ctx context.Context, st store.Store, runID string, q report.LogQuery, w io.Writer, follow OutputFollower, poll time.Duration) error {
	run, err := st.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if run.Status.Done() || follow == nil {
		return report.WriteLogs(ctx, st, runID, q, w)
	}
	if poll <= 0 {
		poll = LogsPoll
	}
	mw := &maskedLines{w: w, m: targetlog.NewMasker(targetlog.Secrets(run.Scenario, os.LookupEnv))}
	defer mw.flush()
	var (
		following json.RawMessage // the environment being followed
		cancel    context.CancelFunc
		done      chan error
		shown     int // environments followed so far
	)
	stop := func() error {
		if cancel == nil {
			return nil
		}
		cancel()
		err := <-done
		cancel, done = nil, nil
		return err
	}
	defer stop()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if !run.Status.Done() && len(run.Environment) > 0 && !bytes.Equal(run.Environment, following) {
			if err := stop(); err != nil {
				return err
			}
			following = run.Environment
			if shown++; shown > 1 {
				mw.flush()
				fmt.Fprintf(w, "==> %s output, incarnation %d <==\n", q.Source, incarnationOf(following))
			}
			fctx, c := context.WithCancel(ctx)
			cancel, done = c, make(chan error, 1)
			go func(env json.RawMessage, done chan<- error) { done <- follow(fctx, env, q.Source, mw) }(following, done)
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			// The follower stopped by itself: its environment is gone (torn
			// down, or replaced), or it could not follow at all.
			cancel, done = nil, nil
			if err != nil {
				return err
			}
		case <-t.C:
		}
		if run, err = st.GetRun(ctx, runID); err != nil {
			return err
		}
		if run.Status.Done() {
			// Give the follower a moment to copy the last lines, then stop.
			time.Sleep(poll)
			return stop()
		}
	}
}

// incarnationOf reads the incarnation number of an environment's JSON.
func incarnationOf(env json.RawMessage) int {
	var e struct {
		Incarnation int `json:"incarnation"`
	}
	_ = json.Unmarshal(env, &e)
	return e.Incarnation
}

// maskedLines masks secrets in whole lines: a secret split across two
// writes would slip through a writer that masked each write on its own.
// Written from the follower's goroutine only; flush after it stopped.
type maskedLines struct {
	w       io.Writer
	m       targetlog.Masker
	partial []byte
}

func (mw *maskedLines) Write(p []byte) (int, error) {
	mw.partial = append(mw.partial, p...)
	if i := bytes.LastIndexByte(mw.partial, '\n'); i >= 0 {
		if _, err := io.WriteString(mw.w, mw.m.String(string(mw.partial[:i+1]))); err != nil {
			return 0, err
		}
		mw.partial = append(mw.partial[:0], mw.partial[i+1:]...)
	}
	return len(p), nil
}

// flush writes a last line that has no newline yet.
func (mw *maskedLines) flush() {
	if len(mw.partial) > 0 {
		_, _ = io.WriteString(mw.w, mw.m.String(string(mw.partial))+"\n")
		mw.partial = mw.partial[:0]
	}
}
