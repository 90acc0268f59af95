package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/targetlog"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// DriveInput is one incarnation's drive: windows FirstIndex..Total-1 of the
// run on Env.
type DriveInput struct {
	RunID       string
	Incarnation int
	FirstIndex  int
	// Total is the run's number of window slots (duration / window, rounded up).
	Total     int
	Overrides Overrides
	Env       Environment
	// Seed is DriveRequest.Seed (0: random).
	Seed uint64
}

// Progress is the drive's heartbeat: the last window committed to the store,
// and what a retried attempt carries on with.
// LastIndex is FirstIndex-1 until the first window closes.
type Progress struct {
	Incarnation int
	LastIndex   int
	// LastEnd is when window LastIndex ended (before the first, when the
	// drive began): where the gap of the window a lost worker had in
	// progress starts.
	LastEnd time.Time `json:",omitempty"`
	// DatabaseRestarts counts the times this drive, all attempts, started
	// the stopped database again (bounded by MaxDatabaseRestarts).
	DatabaseRestarts int `json:",omitempty"`
	// Env is the environment as the last restart of its database left it
	// (its new process), nil before any: a retried attempt checks that
	// one, not the one the workflow gave the drive.
	Env *Environment `json:",omitempty"`
}

// DriveResult says where the drive ended.
type DriveResult struct {
	// NextIndex is the first window slot not driven (Total on a full drive).
	NextIndex int
	// Windows committed and Gaps recorded by this drive (all its attempts).
	Windows int
	Gaps    int
	// StoppedBy is set when a threshold with abort: true failed and the
	// drive stopped early: why, in one line. The run is over.
	StoppedBy string `json:",omitempty"`
	// Env is the environment as the drive left it when a database restart
	// changed it (the database's new process, published port or start);
	// nil when it did not. The workflow drives, restarts the target and
	// tears down with it from then on.
	Env *Environment `json:",omitempty"`
}

// LostDetails travel with an ErrTypeEnvironmentLost error: driving may go on
// from NextIndex in a new incarnation.
type LostDetails struct {
	NextIndex int
	Windows   int
	Gaps      int
	Reason    string
	// TargetExited: the environment is there but its target stopped (the
	// check found its process or container gone, the database up): a
	// restart (target.restart) can bring it back with its data.
	TargetExited bool `json:",omitempty"`
	// Env: as DriveResult.Env (a resumed drive that restarted the
	// database, then found the target stopped).
	Env *Environment `json:",omitempty"`
}

// errTargetFailed is returned from the sink when the environment stopped
// answering mid-drive.
type errTargetFailed struct{ cause error }

func (e errTargetFailed) Error() string { return "target stopped answering: " + e.cause.Error() }

// Drive drives load on the run's environment for the remaining windows. Each
// window is probed, committed to the store and only then reported in the
// heartbeat; a retry resumes after the last committed window.
//
// Resume, the subtle part: a retried attempt (the worker died, or the drive
// failed) takes the last committed index from the heartbeat and the store
// (whichever is later: the worker may have died between commit and
// heartbeat). The window that was in progress is lost: it is recorded as a
// gap and driving resumes at the slot after it, so no committed window is
// ever rewritten and no (run, index) appears twice.
//
// Thresholds with abort: true are judged as each window is committed; when
// one fails the load stops (the window in progress closes short and is
// committed too) and the result says why in StoppedBy. A resumed attempt
// that finds the environment's database stopped starts it again in place
// (at most MaxDatabaseRestarts times per drive, counted across attempts in
// the heartbeat) and drives on. If the environment is otherwise gone, the
// attempt ends with ErrTypeEnvironmentLost and the workflow restarts the
// target or provisions a new incarnation that continues from
// LostDetails.NextIndex.
func (a *Activities) Drive(ctx context.Context, in DriveInput) (DriveResult, error) {
	log := a.logger().With("run", in.RunID, "incarnation", in.Incarnation)
	s, run, err := a.scenario(ctx, in.RunID, in.Overrides)
	if err != nil {
		return DriveResult{}, err
	}
	res := DriveResult{NextIndex: in.FirstIndex}
	mask := targetlog.NewMasker(targetlog.Secrets(run.Scenario, os.LookupEnv))

	rp, err := a.resumePoint(ctx, in)
	if err != nil {
		return res, err
	}
	resuming, last, lastEnd := rp.resuming, rp.last, rp.lastEnd
	res.Windows, res.Gaps = rp.windows, rp.gaps
	// dbRestarts counts the database's restarts over all of this drive's
	// attempts, so the bound holds per drive: an attempt starts with what
	// the last one's heartbeat said, and with the environment as that
	// one's last restart left it.
	dbRestarts := rp.dbRestarts
	// moved records that a database restart changed in.Env: the heartbeat
	// and the result carry it then.
	envMoved := false
	moved := func() {
		envMoved = true
		e := in.Env
		res.Env = &e
	}
	if rp.env != nil {
		in.Env = *rp.env
		moved()
	}
	first := last + 1
	if resuming {
		// The environment is checked first: a target (or database) found
		// stopped now stopped while no worker watched it, and its event
		// (how, when known, and its last lines) goes into the lost
		// window's gap, the one window that covers that time, so the
		// crash is a finding like one seen as it happened.
		var events []window.Event
		checkErr := a.check(ctx, in.Env)
		fault := faultEvent(checkErr)
		if fault != nil && fault.Kind == window.EventDatabaseExit && dbRestarts < MaxDatabaseRestarts {
			// The database longhaul runs is started again in place, as
			// the drive does when its check finds it stopped: its data is
			// kept, and so is the incarnation. The target is checked
			// again: it may have stopped with its database.
			var restarted bool
			foundAt := a.now()
			if in.Env, restarted = a.restartDatabase(ctx, in.Env, fault, first, false); restarted {
				moved()
				dbRestarts++
				if fault.At.IsZero() && !lastEnd.IsZero() {
					// Its "down for" counts from when it was found: when it
					// stopped is not known, only since when no one watched.
					fault.Detail += fmt.Sprintf(" from when it was found; it stopped in the %.0f s before, while no worker watched it", foundAt.Sub(lastEnd).Seconds())
				}
				events = append(events, *fault)
				checkErr = a.check(ctx, in.Env)
				fault = faultEvent(checkErr)
			}
		}
		if fault != nil {
			events = append(events, *fault)
		}
		for i := range events {
			events[i].Detail = mask.String(events[i].Detail)
			events[i].Output = mask.Lines(events[i].Output)
		}
		if first < in.Total {
			gap := window.Window{RunID: in.RunID, Incarnation: in.Incarnation, Index: first, Start: lastEnd, End: a.now(), Gap: true, Events: events}
			if gap.Start.IsZero() {
				gap.Start = gap.End // not known: no heartbeat said when the drive began
			}
			if err := a.Store.PutWindow(ctx, gap); err != nil {
				return res, fmt.Errorf("drive run %s: record gap %d: %w", in.RunID, first, err)
			}
			inc(a.counter("longhaul_soak_gaps_total"))
			res.Gaps++
			log.Warn("resuming a drive: the window in progress was lost", "gap", first)
			first++
		}
		if checkErr != nil {
			log.Warn("resuming a drive: environment is gone", "err", checkErr)
			msg := fmt.Sprintf("environment %s of run %s is gone: %v", in.Env.ID, in.RunID, checkErr)
			exited := fault != nil && fault.Kind == window.EventTargetExit
			return res, temporal.NewNonRetryableApplicationError(msg, ErrTypeEnvironmentLost, checkErr,
				LostDetails{NextIndex: first, Windows: res.Windows, Gaps: res.Gaps, Reason: checkErr.Error(), TargetExited: exited, Env: res.Env})
		}
	}
	res.NextIndex = first
	if first >= in.Total {
		return res, nil
	}
	watch, stoppedBy, err := a.abortWatcher(ctx, s, in, first)
	if err != nil {
		return res, err
	}
	if stoppedBy != "" {
		// An earlier attempt committed the failing window and died before it stopped.
		res.StoppedBy = stoppedBy
		return res, nil
	}
	// Cancelling driveCtx (not ctx) stops the load for a failed threshold:
	// the driver then closes and hands over its last window as on a
	// cancellation, and the activity still ends normally.
	driveCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()

	var prober Prober
	// probesDown is recorded in every window when the probes could not
	// start at all: the run's report and page then say why its windows
	// have no server-side readings, instead of a log line only.
	var probesDown []window.ProbeFailure
	var profiler ProfileTaker
	if a.Probes != nil {
		p, err := a.Probes(ctx, in.Env, s.Probes)
		if err != nil {
			log.Warn("probes unavailable; windows will have no server-side readings", "err", err)
			probesDown = []window.ProbeFailure{{Probe: "probes", Error: err.Error()}}
		} else {
			prober = p
			defer prober.Close()
			profiler, _ = p.(ProfileTaker)
		}
	}
	if profiler != nil {
		// Deferred after Close, so it runs first: the heap at the drive's end.
		defer func() {
			a.storeProfiles(context.WithoutCancel(ctx), in, profiler.FinishProfiles())
		}()
	}

	// progress is the heartbeat once window last (ended at end) is committed.
	progress := func(last int, end time.Time) Progress {
		p := Progress{Incarnation: in.Incarnation, LastIndex: last, LastEnd: end, DatabaseRestarts: dbRestarts}
		if envMoved {
			env := in.Env
			p.Env = &env
		}
		return p
	}
	hb := newHeartbeater(ctx, progress(first-1, a.now()))
	defer hb.stop()

	committed := a.counter("longhaul_soak_windows_total")
	pushURL := in.Overrides.PushURL
	if pushURL == "" {
		pushURL = a.PushURL
	}
	push := newLivePush(pushURL, in.RunID, s.Name, HostID(a.hostQueue()), log)
	failures := 0
	maxFailures := a.CheckFailures
	if maxFailures <= 0 {
		maxFailures = DefaultCheckFailures
	}
	reported := map[string]bool{} // event kinds already recorded by this drive
	commits := &commitQueue{
		put: a.Store.PutWindow, now: a.now, limit: a.StoreBehindLimit, log: log,
		committed: func(w window.Window) {
			inc(committed)
			res.Windows++
			res.NextIndex = w.Index + 1
			hb.record(progress(w.Index, w.End))
		},
	}
	marks := a.outputMarks(in.Env, log)
	sink := func(w window.Window) error {
		w.RunID, w.Incarnation = in.RunID, in.Incarnation
		// First: how far the target's output got by the window's end,
		// before the probes take their time.
		marks.mark(ctx, w.Index, true)
		if prober != nil {
			// Not cut short by cancellation either: the last window of a
			// cancelled drive gets its readings too (Sample bounds its own time).
			prober.Sample(context.WithoutCancel(ctx), &w)
		}
		w.ProbeFailures = append(w.ProbeFailures, probesDown...)
		// The environment is checked before the window is committed, so
		// that a target found stopped is recorded in the window it
		// stopped in (with how and its last output) in the same write.
		var checkErr error
		checked := w.Index+1 < in.Total && ctx.Err() == nil && res.StoppedBy == ""
		if checked {
			checkErr = a.checkWindow(ctx, in.Env)
			var fe interface{ FaultEvent() window.Event }
			if errors.As(checkErr, &fe) {
				ev := fe.FaultEvent()
				// The database longhaul runs is started again in place
				// (bounded), or found where someone else restarted it, and
				// the probes follow it; the environment is whole again,
				// and a later stop is recorded too.
				restarted := false
				if ev.Kind == window.EventDatabaseExit {
					if in.Env, restarted = a.databaseBack(ctx, in.Env, checkErr, &ev, w.Index, &dbRestarts, prober); restarted {
						moved()
						checkErr = nil
					}
				}
				if !reported[ev.Kind] {
					reported[ev.Kind] = !restarted
					ev.Detail = mask.String(ev.Detail)
					ev.Output = mask.Lines(ev.Output)
					w.Events = append(w.Events, ev)
				}
			}
		}
		// The commit must not be cut short by cancellation: a window the
		// driver closed is measured data. A store that does not answer
		// holds the window (and the ones after it) in memory; the load
		// goes on.
		if err := commits.add(ctx, w); err != nil {
			return fmt.Errorf("commit window %d: %w", w.Index, err)
		}
		if profiler != nil {
			a.storeProfiles(context.WithoutCancel(ctx), in, profiler.Profiles(w))
		}
		if push != nil {
			push.Window(ctx, w)
		}
		if watch != nil && res.StoppedBy == "" {
			if failed := watch.Observe(w); len(failed) > 0 {
				res.StoppedBy = thresholds.StopReason(failed[0])
				log.Info("a threshold failed; stopping the run early", "window", w.Index, "threshold", failed[0].Threshold)
				stopLoad()
			}
		}
		if !checked || w.Index+1 >= in.Total || ctx.Err() != nil || res.StoppedBy != "" {
			return nil
		}
		if checkErr != nil {
			failures++
			log.Warn("environment check failed", "window", w.Index, "failures", failures, "err", checkErr)
			if failures >= maxFailures {
				return errTargetFailed{checkErr}
			}
		} else {
			failures = 0
		}
		return nil
	}

	// A worker that is stopping (a deploy's SIGTERM; see the worker's
	// WorkerStopTimeout) hands the drive over: the load stops, the window
	// in progress closes short and is committed like any other, and the
	// attempt fails retryably, so the next worker of the host resumes
	// after it. Before this, that window was lost as after a kill -9.
	var handedOver atomic.Bool
	go func() {
		select {
		case <-activity.GetWorkerStopChannel(ctx):
			handedOver.Store(true)
			log.Info("this worker is stopping: closing the window in progress and handing the drive over")
			stopLoad()
		case <-driveCtx.Done():
		}
	}()

	route := openRoute(in.Env, log, "driver")
	defer route.Close()
	marks.mark(ctx, first, false)
	log.Info("driving", "first", first, "total", in.Total, "target", route.URL, "in_namespace", route.inNamespace())
	err = a.Driver.Drive(driveCtx, DriveRequest{
		RunID: in.RunID, Incarnation: in.Incarnation, FirstIndex: first,
		TargetURL: route.URL, EnvDir: in.Env.EnvDir, Dial: route.Dial, Scenario: s, Logger: log, Seed: driveSeed(in.Seed, first),
		Metrics: push.Metrics(),
	}, sink)
	// Windows still waiting for the store are written before the drive
	// reports where it ended; if they cannot be, the drive fails and is
	// retried from the last window written.
	if derr := commits.drain(ctx, time.Second); derr != nil && err == nil {
		err = derr
	}
	var tf errTargetFailed
	switch {
	case res.StoppedBy != "" && ctx.Err() == nil && (err == nil || errors.Is(err, context.Canceled)):
		return res, nil
	case handedOver.Load() && ctx.Err() == nil && res.NextIndex < in.Total && (err == nil || errors.Is(err, context.Canceled)):
		return res, temporal.NewApplicationError(fmt.Sprintf("the worker stopped: drive handed over after window %d", res.NextIndex-1), ErrTypeHandedOver, res)
	case errors.As(err, &tf):
		return res, temporal.NewNonRetryableApplicationError(tf.Error(), ErrTypeTargetFailed, tf.cause, res)
	case errors.Is(err, ErrBadInput):
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadScenario, nil, res)
	case ctx.Err() != nil:
		// Cancelled (or the heartbeat timed out): every closed window is committed.
		return res, ctx.Err()
	case err != nil:
		return res, fmt.Errorf("drive run %s from window %d: %w", in.RunID, first, err)
	}
	return res, nil
}

// driveSeed is the seed of a drive that starts at window first: a resumed
// drive must not replay the start of the sequence (its creates would
// collide with those already made), so the seed moves with it.
func driveSeed(seed uint64, first int) uint64 {
	if seed == 0 || first == 0 {
		return seed
	}
	return seed + uint64(first)*0x9e3779b97f4a7c15
}

// abortWatcher returns a watcher of the scenario's thresholds with abort:
// true (nil when there are none), brought up to date with the windows this
// incarnation committed before first, so that a resumed or continued drive
// counts consecutive windows across attempts. stoppedBy is set when one of
// those windows already failed a threshold.
func (a *Activities) abortWatcher(ctx context.Context, s *scenarios.Scenario, in DriveInput, first int) (*thresholds.Watcher, string, error) {
	var aborting []scenarios.Threshold
	for _, th := range s.Thresholds {
		if th.Abort {
			aborting = append(aborting, th)
		}
	}
	if len(aborting) == 0 {
		return nil, "", nil
	}
	w := thresholds.NewWatcher(aborting, s.Load.Warmup.D())
	ws, err := a.Store.Windows(ctx, in.RunID, store.WindowQuery{Incarnation: in.Incarnation})
	if err != nil {
		return nil, "", fmt.Errorf("drive run %s: read committed windows: %w", in.RunID, err)
	}
	for _, x := range ws {
		if x.Index >= first {
			break
		}
		if failed := w.Observe(x); len(failed) > 0 {
			return w, thresholds.StopReason(failed[0]), nil
		}
	}
	return w, "", nil
}

// resume is where an attempt starts.
type resume struct {
	// resuming is set when an earlier attempt had started driving.
	resuming bool
	// last is the last committed slot (FirstIndex-1 if none), lastEnd its end.
	last    int
	lastEnd time.Time
	// windows and gaps already in the store for this drive.
	windows, gaps int
	// dbRestarts and env are the last heartbeat's DatabaseRestarts and Env.
	dbRestarts int
	env        *Environment
}

// resumePoint finds where this attempt starts: after the later of the last
// heartbeat and the last window in the store.
func (a *Activities) resumePoint(ctx context.Context, in DriveInput) (resume, error) {
	r := resume{last: in.FirstIndex - 1}
	if activity.GetInfo(ctx).Attempt <= 1 {
		return r, nil
	}
	if activity.HasHeartbeatDetails(ctx) {
		var p Progress
		if err := activity.GetHeartbeatDetails(ctx, &p); err == nil && p.Incarnation == in.Incarnation {
			r.resuming = true
			r.last = max(r.last, p.LastIndex)
			r.lastEnd = p.LastEnd
			r.dbRestarts, r.env = p.DatabaseRestarts, p.Env
		}
	}
	ws, err := a.Store.Windows(ctx, in.RunID, store.WindowQuery{Incarnation: in.Incarnation, FromIndex: in.FirstIndex})
	if err != nil {
		return r, fmt.Errorf("drive run %s: read committed windows: %w", in.RunID, err)
	}
	for _, w := range ws {
		if w.Gap {
			r.gaps++
		} else {
			r.windows++
		}
		if w.Index >= r.last {
			r.resuming = true
			r.last = w.Index
			r.lastEnd = w.End
		}
	}
	return r, nil
}

// outputMarker marks a drive's windows in the environment's output
// (OutputMarker); its zero value, for a provisioner that needs no marks,
// does nothing.
type outputMarker struct {
	m      OutputMarker
	env    Environment
	log    *slog.Logger
	failed bool
}

func (a *Activities) outputMarks(env Environment, log *slog.Logger) *outputMarker {
	m, _ := a.Provisioner.(OutputMarker)
	return &outputMarker{m: m, env: env, log: log}
}

// mark records where the output stands at window index's start or end. A
// mark that cannot be written costs that window its lines in `longhaul
// logs --window`, not the drive: it is warned about once.
func (o *outputMarker) mark(ctx context.Context, index int, end bool) {
	if o.m == nil {
		return
	}
	if err := o.m.MarkOutput(context.WithoutCancel(ctx), o.env, index, end); err != nil && !o.failed {
		o.failed = true
		o.log.Warn("marking the target's output at a window failed; its lines cannot be told by window", "window", index, "err", err)
	}
}

// checkWindow is the environment check at a window's close (the sink's),
// bounded by CheckTimeout.
func (a *Activities) checkWindow(ctx context.Context, env Environment) error {
	d := a.CheckTimeout
	if d <= 0 {
		d = DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := a.Provisioner.Check(cctx, env)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		// The provider did not answer in time (a docker engine busy under
		// load): say that in words; the raw error is an engine URL.
		return fmt.Errorf("no answer within %v from the %s provider; the next window checks again (%w)", d, env.Provider, context.DeadlineExceeded)
	}
	return err
}

// faultEvent is the event a failed check carries (package provision's
// ExitError: what stopped and how), nil for any other failure.
func faultEvent(checkErr error) *window.Event {
	var fe interface{ FaultEvent() window.Event }
	if !errors.As(checkErr, &fe) {
		return nil
	}
	ev := fe.FaultEvent()
	return &ev
}

// heartbeater reports the latest Progress on a ticker as well as on every
// window, so a long window (30 s) neither delays cancellation nor trips the
// heartbeat timeout, and a dead worker is noticed within the timeout.
type heartbeater struct {
	ctx  context.Context
	mu   sync.Mutex
	last Progress
	done chan struct{}
	wg   sync.WaitGroup
}

func newHeartbeater(ctx context.Context, p Progress) *heartbeater {
	h := &heartbeater{ctx: ctx, last: p, done: make(chan struct{})}
	activity.RecordHeartbeat(ctx, p)
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		every = 10 * time.Second
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				h.mu.Lock()
				p := h.last
				h.mu.Unlock()
				activity.RecordHeartbeat(ctx, p)
			}
		}
	}()
	return h
}

func (h *heartbeater) record(p Progress) {
	h.mu.Lock()
	h.last = p
	h.mu.Unlock()
	activity.RecordHeartbeat(h.ctx, p)
}

func (h *heartbeater) stop() {
	close(h.done)
	h.wg.Wait()
}

// storeProfiles keeps the profiles a drive took. Of the heap profiles only
// the incarnation's first and latest are kept: a leak's evidence is the
// heap at the start and at the end of its range, and a week-long soak
// would otherwise keep thousands. A profile that cannot be stored is
// logged; it is not a window, and the drive goes on.
func (a *Activities) storeProfiles(ctx context.Context, in DriveInput, ps []probes.TakenProfile) {
	log := a.logger().With("run", in.RunID, "incarnation", in.Incarnation)
	for _, tp := range ps {
		p := store.Profile{
			RunID: in.RunID, Kind: store.ProfileKind(tp.Kind), Incarnation: in.Incarnation, Index: tp.Index,
			Start: tp.Start, Duration: tp.Duration, Requests: tp.Requests, Data: tp.Data,
		}
		if err := a.Store.PutProfile(ctx, p); err != nil {
			log.Warn("a profile of the target was not stored", "kind", tp.Kind, "window", tp.Index, "err", err)
			continue
		}
		if p.Kind != store.ProfileHeap {
			continue
		}
		heaps, err := a.Store.Profiles(ctx, in.RunID, store.ProfileQuery{Kind: store.ProfileHeap})
		if err != nil {
			log.Warn("read the run's heap profiles", "err", err)
			continue
		}
		var mine []store.Profile
		for _, h := range heaps {
			if h.Incarnation == in.Incarnation {
				mine = append(mine, h)
			}
		}
		for i := 1; i < len(mine)-1; i++ {
			if err := a.Store.DeleteProfile(ctx, in.RunID, store.ProfileHeap, in.Incarnation, mine[i].Index); err != nil {
				log.Warn("drop a superseded heap profile", "window", mine[i].Index, "err", err)
			}
		}
	}
}
