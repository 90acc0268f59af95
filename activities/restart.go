package activities

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// TargetRestarter is a Provisioner that can start the crashed target of an
// environment again as its next incarnation, keeping the database and its
// data (package provision's local and docker providers, through the
// worker's adapter). req.Incarnation is the new incarnation; the returned
// Environment has it, and the same ID.
type TargetRestarter interface {
	RestartTarget(ctx context.Context, env Environment, req ProvisionRequest) (Environment, error)
}

// RestartPolicyInput names the run whose scenario says whether a crashed
// target is restarted.
type RestartPolicyInput struct{ RunID string }

// RestartPolicy returns how many times the run's target may be restarted
// after a crash (the scenario's target.restart: max with policy on-failure,
// else 0). It runs on the general queue; the workflow decides with it.
func (a *Activities) RestartPolicy(ctx context.Context, in RestartPolicyInput) (int, error) {
	s, _, err := a.scenario(ctx, in.RunID, Overrides{})
	if err != nil {
		return 0, err
	}
	return s.Environment.Target.Restarts(), nil
}

// RestartInput asks for the crashed target of Env to be started again.
type RestartInput struct {
	RunID string
	// Env is the environment as the crashed incarnation had it.
	Env Environment
	// Index is the first window slot the crashed drive did not drive: the
	// slot lost while the target was down, recorded as a gap. Total is the
	// run's number of slots.
	Index, Total int
	// Provider, TargetEnv and Build are the soak's, as for Provision.
	Provider  string
	TargetEnv map[string]string
	Build     *store.Build
}

// RestartResult is the new incarnation and where driving goes on.
type RestartResult struct {
	Env Environment
	// NextIndex is the first slot to drive; Gaps the gaps recorded (1: the
	// slot lost while the target was down).
	NextIndex int
	Gaps      int
	// DownSeconds is how long the target was down: from its crash (or the
	// end of the last window it answered in) until it was healthy again.
	DownSeconds float64
}

// RestartTarget starts the crashed target of a run's environment again
// (target.restart): the output of the crashed incarnation is kept with the
// run, the provisioner restarts the target in the same environment (its
// database and data kept) and waits until it is healthy, the run records
// the new incarnation, and the slot lost meanwhile becomes a gap of the new
// incarnation. It runs on the environment's host and is idempotent: a retry
// restarts the target again and finds the gap already recorded.
func (a *Activities) RestartTarget(ctx context.Context, in RestartInput) (RestartResult, error) {
	next := in.Env.Incarnation + 1
	log := a.logger().With("run", in.RunID, "incarnation", next)
	s, run, err := a.scenario(ctx, in.RunID, Overrides{})
	if err != nil {
		return RestartResult{}, err
	}
	restarter, ok := a.Provisioner.(TargetRestarter)
	if !ok {
		return RestartResult{}, temporal.NewNonRetryableApplicationError("this worker's provisioner cannot restart a target", ErrTypeProvision, nil)
	}
	spec, prebuilt := s.Environment, ""
	if in.Build != nil {
		spec, prebuilt = ApplyBuild(spec, *in.Build)
	}
	a.retried(ctx, "restart the target", in.RunID, next)
	stop := keepAlive(ctx, "restarting the target")
	defer stop()
	a.keepLogs(ctx, in.Env)
	env, err := restarter.RestartTarget(ctx, in.Env, ProvisionRequest{
		RunID: in.RunID, Incarnation: next, Spec: spec,
		Provider: in.Provider, ExtraEnv: in.TargetEnv, Publish: PublishedPorts(s.Probes), Prebuilt: prebuilt,
	})
	if err != nil {
		if ctx.Err() != nil {
			return RestartResult{}, ctx.Err()
		}
		return RestartResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("restart the target of run %s (incarnation %d): %v", in.RunID, next, err), ErrTypeProvision, nil)
	}
	if err := a.recordEnvironment(ctx, run, env); err != nil {
		return RestartResult{}, fmt.Errorf("restart the target of run %s: record environment: %w", in.RunID, err)
	}
	res := RestartResult{Env: env, NextIndex: in.Index}
	crashedAt, lastEnd, err := a.crashTimes(ctx, in.RunID, in.Env.Incarnation)
	if err != nil {
		return res, err
	}
	up := a.now()
	if !crashedAt.IsZero() {
		res.DownSeconds = up.Sub(crashedAt).Seconds()
	}
	if in.Index < in.Total {
		if err := a.recordRestartGap(ctx, in.RunID, next, in.Index, lastEnd, up); err != nil {
			return res, err
		}
		res.NextIndex, res.Gaps = in.Index+1, 1
	}
	log.Warn(fmt.Sprintf("the target restarted (incarnation %d), down for %.1f s", next, res.DownSeconds), "window", in.Index)
	return res, nil
}

// crashTimes reads when incarnation's target crashed (its last
// target-exit event, else the end of its last window) and the end of its
// last window.
func (a *Activities) crashTimes(ctx context.Context, runID string, incarnation int) (crashedAt, lastEnd time.Time, err error) {
	ws, err := a.Store.Windows(ctx, runID, store.WindowQuery{Incarnation: incarnation})
	if err != nil {
		return crashedAt, lastEnd, fmt.Errorf("restart the target of run %s: read windows: %w", runID, err)
	}
	for _, w := range ws {
		lastEnd = w.End
		for _, ev := range w.Events {
			if ev.Kind != window.EventTargetExit {
				continue
			}
			crashedAt = ev.At
			if crashedAt.IsZero() {
				crashedAt = w.End
			}
		}
	}
	if crashedAt.IsZero() {
		crashedAt = lastEnd
	}
	return crashedAt, lastEnd, nil
}

// recordRestartGap records slot index of the new incarnation as a gap (the
// target was down), from the end of the crashed incarnation's last window
// to when the target was up again, unless a retried restart recorded it.
func (a *Activities) recordRestartGap(ctx context.Context, runID string, incarnation, index int, from, to time.Time) error {
	ws, err := a.Store.Windows(ctx, runID, store.WindowQuery{Incarnation: incarnation, FromIndex: index})
	if err != nil {
		return fmt.Errorf("restart the target of run %s: read windows: %w", runID, err)
	}
	if len(ws) > 0 && ws[0].Index == index {
		return nil
	}
	if from.IsZero() {
		from = to
	}
	gap := window.Window{RunID: runID, Incarnation: incarnation, Index: index, Start: from, End: to, Gap: true}
	if err := a.Store.PutWindow(ctx, gap); err != nil {
		return fmt.Errorf("restart the target of run %s: record gap %d: %w", runID, index, err)
	}
	inc(a.counter("longhaul_soak_gaps_total"))
	return nil
}

// DatabaseRestarter is a Provisioner that can start an environment's
// private database again in place after it stopped (package provision's
// local and docker providers, through the worker's adapter): the same data
// directory or container, so crash recovery keeps the data. The returned
// Environment is env with the database's new process (or published port).
type DatabaseRestarter interface {
	RestartDatabase(ctx context.Context, env Environment) (Environment, error)
}

// MaxDatabaseRestarts is how many times one drive starts the environment's
// stopped database again. longhaul runs that database for the soak, so it
// restarts it as a service manager would (systemd's Restart=on-failure),
// without the scenario asking: the soak is about the target, and the
// target's recovery from a database restart is what the windows then show.
// The bound is fixed and small rather than target.restart's max, which is
// about the target: a database that keeps stopping (a crash loop, a full
// disk) is a finding, and the run ends after the next stop, as before.
const MaxDatabaseRestarts = 3

// databaseBack brings env's database back after the environment check at
// the close of window index found it stopped (ev, the check's
// database_exit event, and checkErr, its error), and says so in ev and on
// the terminal. It returns the environment as it now is and whether the
// database is back; when it is not, env is returned unchanged and the
// check's failure stands.
//
// Two cases. The database stopped: longhaul starts it again in place
// (restartDatabase), at most MaxDatabaseRestarts times per drive (*restarts
// counts them). Or someone else restarted it between two checks (a docker
// restart too fast for any check to see it stopped: checkErr says
// RestartedElsewhere): it runs, and the provider is asked only where it is
// now (its container's new published port), which costs no restart.
//
// Either way the prober then follows the database (DatabaseFollower): its
// database probe reads at the new address, and the host-load and thread
// probes count the new process as the database's, with the profiler and
// every other probe's state kept.
func (a *Activities) databaseBack(ctx context.Context, env Environment, checkErr error, ev *window.Event, index int, restarts *int, prober Prober) (Environment, bool) {
	var re interface{ RestartedElsewhere() bool }
	elsewhere := errors.As(checkErr, &re) && re.RestartedElsewhere()
	if !elsewhere && *restarts >= MaxDatabaseRestarts {
		return env, false
	}
	next, ok := a.restartDatabase(ctx, env, ev, index, elsewhere)
	if !ok {
		return env, false
	}
	if !elsewhere {
		*restarts++
	}
	if f, ok := prober.(DatabaseFollower); ok {
		if err := f.FollowDatabase(ctx, env, next); err != nil {
			a.logger().With("run", env.RunID, "incarnation", env.Incarnation).
				Warn("the probes could not read the restarted database yet; the next window tries again", "window", index, "err", err)
		}
	}
	return next, true
}

// check is checkWindow for a drive that resumes: a database that someone
// else restarted (RestartedElsewhere) is not a failure there. The
// environment is whole; only where the database listens changed, and the
// check at the close of the first window finds the same restart again,
// records it and the probes follow it (databaseBack). (A drive resumed
// after longhaul restarted the database in an earlier attempt has the
// environment as provisioned, so that check says the restart was not
// longhaul's: the attempt that made it did not outlive its worker.)
func (a *Activities) check(ctx context.Context, env Environment) error {
	err := a.checkWindow(ctx, env)
	var re interface{ RestartedElsewhere() bool }
	if errors.As(err, &re) && re.RestartedElsewhere() {
		return nil
	}
	return err
}

// DatabaseFollower is a Prober that can follow the environment's database
// after a restart without being made again (which would lose the
// profiler's state and every probe's baseline): before is the environment
// as the prober was made for (or last followed), after as it is now.
type DatabaseFollower interface {
	FollowDatabase(ctx context.Context, before, after Environment) error
}

var _ DatabaseFollower = (*serverProber)(nil)

// FollowDatabase points the database probe at after's database URL (a
// container's published port changes at a restart; probes.Sampler reads a
// baseline there at once), and the host-load and thread probes at its new
// process (a local server's new PID; a container keeps its id).
func (p *serverProber) FollowDatabase(ctx context.Context, before, after Environment) error {
	if after.DatabasePID != before.DatabasePID {
		p.host.FollowPID(before.DatabasePID, after.DatabasePID)
	}
	if p.threads != nil {
		p.threads.FollowDatabase(after.DatabasePID, after.DatabaseContainerID)
	}
	if after.DatabaseURL == "" {
		return nil
	}
	return p.s.FollowDatabase(ctx, after.DatabaseURL)
}

// restartDatabase starts env's stopped database again, or, elsewhere, finds
// the database someone else restarted (ev is the database_exit event the
// environment check found at the close of window index), and says so in
// ev and on the terminal: its Detail gets how long the database was down,
// and Restarted is set when longhaul started it. It returns the
// environment as it now is and whether the database is back; when it is
// not (this worker's provisioner cannot restart it, or the restart
// failed), env is returned unchanged.
func (a *Activities) restartDatabase(ctx context.Context, env Environment, ev *window.Event, index int, elsewhere bool) (Environment, bool) {
	log := a.logger().With("run", env.RunID, "incarnation", env.Incarnation)
	r, ok := a.Provisioner.(DatabaseRestarter)
	if !ok {
		return env, false
	}
	started := a.now()
	next, err := r.RestartDatabase(ctx, env)
	if err != nil {
		if elsewhere {
			log.Warn("the database was restarted and does not answer where it is now", "window", index, "err", err)
			ev.Detail += "; longhaul could not reach it since: " + err.Error()
			return env, false
		}
		log.Warn("the database stopped and did not start again", "window", index, "err", err)
		ev.Detail += "; longhaul could not start it again: " + err.Error()
		return env, false
	}
	if elsewhere {
		// The engine said how long it was down; the terminal's line:
		// "window 9: the database container 6894a21f510e was restarted,
		// not by longhaul (down for 1.1 s; ...); the probes follow it at
		// 127.0.0.1:32771".
		ev.Detail += "; the probes follow it" + databaseAddr(next)
		log.Warn(ev.Detail, "window", index)
		return next, true
	}
	inc(a.counter("longhaul_soak_database_restarts_total"))
	up := a.now()
	from := ev.At
	if from.IsZero() || from.After(started) {
		from = started
	}
	ev.Restarted = true
	ev.Detail += fmt.Sprintf("; longhaul restarted it in place, down for %.1f s", up.Sub(from).Seconds())
	// The terminal's line: "window 9: the database (postgres) process 4315
	// exited (signal 9: killed); longhaul restarted it in place, down for
	// 1.2 s". (The check that found it does not fail, so nothing else says it.)
	log.Warn(ev.Detail, "window", index)
	return next, true
}

// databaseAddr is " at HOST:PORT" of env's database URL, "" when it has
// none (no secret is in it: only the host and port).
func databaseAddr(env Environment) string {
	u, err := url.Parse(env.DatabaseURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return " at " + u.Host
}
