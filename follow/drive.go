package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/google/uuid"

	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// Drive is a drive from this process (longhaul drive): no workflow, the
// driver runs here and each window is printed and stored as it closes.
type Drive struct {
	Scenario *scenarios.Scenario
	Source   []byte
	Plan     *scenarios.Plan
	Load     scenarios.Load
	Target   *url.URL
	Format   report.Format
	// Metrics receives the driver's live metrics (nil: none).
	Metrics *metrics.Set
	// Where names the store in the closing line.
	Where string
}

// FollowDrive drives d's load at its target, printing each window (then
// the summary) and storing it as a run of kind "drive". The first Ctrl-C
// stops gracefully: requests in flight finish, the last window and the
// summary are still printed and stored. A window is printed before it is
// stored, so none is lost from the output; a store failure stops the run.
// Its error wraps driver.ErrInvalid for a plan the driver refuses, and is
// an Exit for a run that did not complete.
func FollowDrive(ctx context.Context, t Terminal, st store.Store, d Drive) error {
	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("new run id: %w", err)
	}
	// Writes after a Ctrl-C must still land: they use a context that the
	// interrupt does not cancel.
	storeCtx := context.WithoutCancel(ctx)
	now := time.Now()
	run := store.Run{
		ID: id.String(), Name: d.Scenario.Name, Kind: "drive", Status: store.Running,
		Scenario: string(d.Source), TargetURL: d.Target.Redacted(), Incarnations: 1,
		CreatedAt: now, StartedAt: now,
	}
	if err := st.PutRun(storeCtx, run); err != nil {
		return fmt.Errorf("record the run in %s: %w", d.Where, err)
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	watchDone := make(chan struct{})
	defer close(watchDone)
	interrupted := watchInterrupts(t, watchDone, stopRun, d.Load.Timeout.D())

	var progress *report.Progress
	if d.Format == report.Text {
		progress = report.NewProgress(t.Stderr, now, d.Load.Duration.D())
	}
	out, err := report.NewWindowWriter(d.Format, t.Stdout, report.TextOptions{Progress: progress})
	if err != nil {
		return err
	}
	progressCtx, stopProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() { defer close(progressDone); progress.Run(progressCtx, 500*time.Millisecond) }()

	sink := driveSink{t: t, st: st, ctx: storeCtx, out: out, stop: stopRun, where: d.Where}
	logger := slog.New(slog.NewTextHandler(t.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, runErr := driver.Run(runCtx, driver.Options{
		Target: d.Target, Plan: d.Plan, Load: d.Load, RunID: run.ID, Metrics: d.Metrics, Logger: logger,
		Protocol: d.Scenario.Environment.Protocol, TLS: d.Scenario.Environment.DriverTLS(""),
	}, sink.window)
	stopProgress()
	<-progressDone

	if err := out.Summary(sink.totals.Summary()); err != nil && sink.printErr == nil {
		sink.printErr = err
	}
	status, reason := store.Completed, ""
	switch {
	case runErr != nil:
		status, reason = store.Failed, runErr.Error()
	case sink.storeErr != nil:
		status, reason = store.Failed, "store: "+sink.storeErr.Error()
	case interrupted() || ctx.Err() != nil:
		status, reason = store.Cancelled, "interrupted"
	case res.Stopped:
		status, reason = store.Cancelled, "stopped before its duration"
	}
	// A store that cannot record the end (a full disk) leaves the run
	// "running" there: say so, and fail, rather than report it completed.
	statusErr := st.SetStatus(storeCtx, run.ID, status, reason, time.Now())
	if statusErr != nil {
		fmt.Fprintf(t.Stderr, "longhaul: the store %s could not record that run %s %s: %v; its %d windows stored before are kept, and it shows as running there\n",
			d.Where, run.ID, status, statusErr, sink.stored)
	}
	fmt.Fprintf(t.Stderr, "run %s %s: %d windows stored in %s\n", run.ID, status, sink.stored, d.Where)

	switch {
	case runErr != nil && errors.Is(runErr, driver.ErrInvalid):
		return runErr
	case runErr != nil:
		return fmt.Errorf("drive: %w", runErr)
	case sink.printErr != nil:
		return fmt.Errorf("write output: %w", sink.printErr)
	case status != store.Completed || statusErr != nil:
		return Exit{ExitFailed}
	}
	return nil
}

// driveSink takes the driver's windows: it prints, totals and stores each.
type driveSink struct {
	t     Terminal
	st    store.Store
	ctx   context.Context
	out   report.WindowWriter
	stop  func() // stops the run after a store failure
	where string // the store, for messages

	totals             report.Totals
	stored             int
	storeErr, printErr error
}

// window prints first, so a window is never lost from the output; a store
// failure stops the run gracefully (the windows still in flight are
// printed) rather than dropping the rest.
func (s *driveSink) window(w window.Window) error {
	if err := s.out.Window(w); err != nil && s.printErr == nil {
		s.printErr = err
	}
	if err := s.totals.Add(w); err != nil {
		fmt.Fprintf(s.t.Stderr, "longhaul: summary: %v\n", err)
	}
	if s.storeErr != nil {
		return nil
	}
	if err := s.st.PutWindow(s.ctx, w); err != nil {
		s.storeErr = err
		fmt.Fprintf(s.t.Stderr, "longhaul: the store %s could not take window %d: %v; stopping the run (the windows still in flight are printed, not stored)\n", s.where, w.Index, err)
		s.stop()
		return nil
	}
	s.stored++
	return nil
}

// watchInterrupts calls stop on the first SIGINT/SIGTERM, until done is
// closed, and reports whether one came. A later one says what is being
// waited for.
func watchInterrupts(t Terminal, done <-chan struct{}, stop func(), timeout time.Duration) (interrupted func() bool) {
	var (
		mu  sync.Mutex
		got bool
	)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-t.Interrupts:
				mu.Lock()
				again := got
				got = true
				mu.Unlock()
				if again {
					if timeout == 0 {
						timeout = driver.DefaultTimeout
					}
					fmt.Fprintf(t.Stderr, "longhaul: stopping: waiting up to %s for requests in flight\n", timeout)
				}
				stop()
			}
		}
	}()
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}
