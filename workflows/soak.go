// Package workflows holds longhaul's Temporal workflows. A soak is
// SoakWorkflow: provision an environment, drive load for the scenario's
// duration, analyse, tear down, with the run's status kept in the store.
//
// Recipe:
//
//  1. Create the run record (store.PutRun) with the scenario's YAML, or let
//     the workflow's first activity create it from SoakInput.Scenario.
//  2. Start SoakWorkflow (client.ExecuteWorkflow with WorkflowName) on
//     activities.GeneralQueue with a SoakInput.
//  3. Run workers with NewWorker: each polls the general queue and its host's
//     queue. Follow the run through the store (windows appear as they close).
//
// The workflow is deterministic and replay-tested: it uses workflow.Now and
// workflow.GetVersion, never iterates a map, and carries ids and small
// summaries only (windows and histograms live in the store).
package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/store"
)

// WorkflowName is the registered name of SoakWorkflow; it stays fixed when
// the Go function is renamed.
const WorkflowName = "SoakWorkflow"

// ErrTypeSoakFailed is the type of the application error a failed soak ends with.
const ErrTypeSoakFailed = "SoakFailed"

// MaxIncarnations bounds how many times a soak re-provisions a lost
// environment before it gives up.
const MaxIncarnations = 5

// SoakInput starts (or, with Resume, continues) a soak.
type SoakInput struct {
	RunID string
	Name  string
	// Scenario is the YAML as given (≤ 1 MiB, ${env:...} unresolved); it is
	// only needed when no run record exists yet, and dropped on continue-as-new.
	Scenario string
	// Duration and Window are the effective load duration and window length
	// (the scenario's, or the command-line overrides); both must be > 0.
	Duration time.Duration
	Window   time.Duration
	// Provider overrides the scenario's environment.provider when set.
	Provider string
	// TargetEnv is added to the target's environment.
	TargetEnv map[string]string
	// HostQueue, when set, is the host the soak runs on (a comparison's
	// round: the comparison claimed the host for all its rounds); the soak
	// then claims none of its own.
	HostQueue string
	// Seed seeds the request sequence (op picks, template randomness); 0
	// picks a random one. Both rounds of a comparison's pair share it.
	Seed uint64
	// Build is a comparison side's build (nil for a plain soak).
	Build *store.Build
	// PushURL is where the drive pushes the run's live metrics
	// (activities.Overrides.PushURL); empty: the worker's --push-url.
	PushURL string `json:",omitempty"`
	// Protocol overrides the scenario's environment.protocol (h1, h2,
	// h2c; `longhaul run --protocol`); empty: the scenario's.
	Protocol string `json:",omitempty"`
	// HostWait is how long the soak waits for its host's worker to come
	// back (a drive or provision not picked up on the host queue) before it
	// gives the host up and provisions a new incarnation on another host
	// (DefaultHostWait when 0). A comparison's round (HostQueue given)
	// waits for its host however long it takes.
	HostWait time.Duration `json:",omitempty"`
	// Resume carries the state across continue-as-new; nil on a fresh start.
	Resume *SoakState
}

// SoakState is where a soak stands; it is the state continue-as-new carries.
type SoakState struct {
	HostQueue   string
	Incarnation int
	// NextIndex is the first window slot not yet driven.
	NextIndex int
	Env       *activities.Environment
	Windows   int
	Gaps      int
	// HoldsSlot is set while the soak holds a measurement slot on its host
	// (claimed by ClaimSlot; released once the final status is recorded).
	HoldsSlot bool `json:",omitempty"`
	// Restarts counts the times the target crashed and was started again
	// (target.restart); each restart is an incarnation too.
	Restarts int `json:",omitempty"`
}

// SoakResult is the outcome of a soak. A failed soak returns it as the
// details of an ErrTypeSoakFailed error; a cancelled one as a canceled error.
type SoakResult struct {
	RunID        string
	Status       store.Status
	Reason       string
	Windows      int // committed by the drives (gaps not included)
	Gaps         int
	Incarnations int
	Findings     int
}

// Slots returns the number of window slots in a run of duration d cut into
// windows of length w (the last one may be shorter).
func Slots(d, w time.Duration) int {
	if w <= 0 || d <= 0 {
		return 0
	}
	return int((d + w - 1) / w)
}

// Timeouts of the activities. Variables, not constants, only so tests can
// shorten them; workflow code reads them, never writes.
var (
	// generalTimeout bounds the small store-bound activities.
	generalTimeout = 30 * time.Second
	// provisionTimeout allows for a build (docker image, npm install, ...).
	provisionTimeout = 30 * time.Minute
	// teardownTimeout and teardownScheduleTimeout: a host that never comes
	// back must not keep the run open forever.
	teardownTimeout         = 5 * time.Minute
	teardownScheduleTimeout = 10 * time.Minute
	// driveMargin is added to the remaining load duration for StartToClose:
	// in-flight requests, the last window's commit, probes.
	driveMargin = 5 * time.Minute
	// storeOutage is how long the store-bound activities (Begin,
	// SetStatus, Analyze, …) are retried: a results store that does not
	// answer at a run's start or end is ridden out as long as a drive keeps
	// its windows waiting for it (activities.DefaultStoreBehindLimit), so
	// an outage there fails the run no sooner than one mid-run does.
	storeOutage = activities.DefaultStoreBehindLimit
	// storeRetryMax is the longest pause between two attempts: a store
	// that is back is used again within about this long.
	storeRetryMax = 15 * time.Second
)

// storeBound is ctx with the options of an activity on the general queue
// that reads or writes the results store and takes up to startToClose:
// retried with backoff (at most storeRetryMax apart) until storeOutage
// has passed since the first attempt; a bad scenario (or a run the store
// does not have) fails at once.
func storeBound(ctx workflow.Context, startToClose time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              activities.GeneralQueue,
		StartToCloseTimeout:    startToClose,
		ScheduleToCloseTimeout: storeOutage + startToClose,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: storeRetryMax,
			// More attempts than fit in storeOutage: ScheduleToClose ends
			// the retries. (Not 0, unlimited, which the SDK's test
			// environment turns into 10.)
			MaximumAttempts:        int32(storeOutage/storeRetryMax) + 10,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadScenario},
		},
	})
}

// Change ids of workflow.GetVersion for the heartbeats of Provision and
// Teardown, and for measurement slots (a soak claims a slot on a host
// instead of taking whichever worker answers, and gives up a host whose
// worker does not come back within HostWait).
const (
	provisionHeartbeatChange = "provision-heartbeat"
	teardownHeartbeatChange  = "teardown-heartbeat"
	slotsChange              = "measurement-slots"
	// targetRestartChange: a crashed target is started again when the
	// scenario's target.restart allows (RestartPolicy, RestartTarget).
	targetRestartChange = "target-restart"
)

// DefaultHostWait is SoakInput.HostWait when 0.
const DefaultHostWait = 10 * time.Minute

// Timings of a slot claim; variables only so tests can shorten them.
var (
	// queuedAfter: a claim not granted this long after it was asked for
	// marks the run queued (most claims are granted at once).
	queuedAfter = 2 * time.Second
	// slotRetryMax is the longest pause between two claims of a queued run
	// (each claim asks whichever worker polls next): a slot freed on any
	// host is taken within about this long.
	slotRetryMax = 5 * time.Second
)

// QueuedReason is the reason recorded with the queued status.
const QueuedReason = "waiting for a free measurement slot: every worker host is driving as many soaks as it has slots"

// ProvisionHeartbeatTimeout is the heartbeat timeout of Provision and
// Teardown (from workflow version "provision-heartbeat" 1 on): they heartbeat
// while they build, start and wait, so a worker killed meanwhile is noticed
// this long after its last heartbeat and the activity is retried, instead of
// after its StartToClose (30 minutes for a provision). A variable only so
// end-to-end tests can shorten it; workflow code reads it, never writes.
var ProvisionHeartbeatTimeout = 30 * time.Second

// DriveHeartbeatTimeout is a few windows long (3 × window, at least 60 s): a
// dead worker is noticed that long after its last heartbeat, and its drive
// resumes after one gap. The floor is what lets a drive heartbeat through a
// Temporal server's restart: the SDK retries a failed heartbeat for 0.8 of
// the timeout and then cancels the activity, and a `longhaul server` on
// PostgreSQL stopped, down 10 s and started again was out of reach for
// 24 s and more (bench/faults temporalrestart: at 10 s and 30 s timeouts
// the drive lost its window in progress).
func DriveHeartbeatTimeout(window time.Duration) time.Duration {
	return max(3*window, 60*time.Second)
}

// soak is one execution's state.
type soak struct {
	in         SoakInput
	st         SoakState
	total      int
	continuing bool
	// stoppedBy says why a threshold with abort: true ended the run early.
	stoppedBy string
}

// SoakWorkflow runs one soak. See the package doc.
func SoakWorkflow(ctx workflow.Context, in SoakInput) (res SoakResult, err error) {
	s := &soak{in: in, total: Slots(in.Duration, in.Window)}
	if in.Resume != nil {
		s.st = *in.Resume
	}
	// Teardown and the final status run whatever happens: completion,
	// failure or cancellation (in a disconnected context).
	defer func() {
		if s.continuing {
			return
		}
		res, err = s.finish(ctx, err)
	}()
	return s.run(ctx)
}

func (s *soak) run(ctx workflow.Context) (SoakResult, error) {
	// Version marker for future changes to the steps below; branch on it.
	_ = workflow.GetVersion(ctx, "soak-steps", workflow.DefaultVersion, 1)
	var a *activities.Activities
	if s.total <= 0 {
		return SoakResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("duration %s and window %s give no window to drive", s.in.Duration, s.in.Window), ErrTypeSoakFailed, nil)
	}

	general := storeBound(ctx, generalTimeout)
	if s.st.HostQueue == "" {
		info := workflow.GetInfo(ctx)
		begin := activities.BeginInput{RunID: s.in.RunID, Name: s.in.Name, Scenario: s.in.Scenario, WorkflowID: info.WorkflowExecution.ID}
		if err := workflow.ExecuteActivity(general, a.Begin, begin).Get(ctx, nil); err != nil {
			return SoakResult{}, err
		}
		// Version 1 takes the host from the input when a comparison gave
		// one; version 0 always claimed a host here.
		hostInput := workflow.GetVersion(ctx, "soak-host-input", workflow.DefaultVersion, 1) >= 1
		if hostInput && s.in.HostQueue != "" {
			s.st.HostQueue = s.in.HostQueue
		} else if workflow.GetVersion(ctx, slotsChange, workflow.DefaultVersion, 1) >= 1 {
			if err := s.claimSlot(ctx); err != nil {
				return SoakResult{}, err
			}
		} else if err := workflow.ExecuteActivity(general, a.HostQueue).Get(ctx, &s.st.HostQueue); err != nil {
			return SoakResult{}, err
		}
	}
	if s.st.Env == nil {
		if err := s.provisionSomewhere(ctx); err != nil {
			return SoakResult{}, err
		}
		if err := workflow.ExecuteActivity(general, a.SetStatus, activities.StatusInput{RunID: s.in.RunID, Status: store.Running}).Get(ctx, nil); err != nil {
			return SoakResult{}, err
		}
	}

	for s.st.NextIndex < s.total {
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			s.continuing = true
			next := s.in
			next.Scenario = "" // the run record has it
			st := s.st
			next.Resume = &st
			return SoakResult{}, workflow.NewContinueAsNewError(ctx, SoakWorkflow, next)
		}
		var dr activities.DriveResult
		err := workflow.ExecuteActivity(s.driveCtx(ctx), a.Drive, activities.DriveInput{
			RunID: s.in.RunID, Incarnation: s.st.Incarnation, FirstIndex: s.st.NextIndex, Total: s.total,
			Overrides: activities.Overrides{Duration: s.in.Duration, Window: s.in.Window, PushURL: s.in.PushURL, Protocol: s.in.Protocol}, Env: *s.st.Env,
			Seed: s.in.Seed,
		}).Get(ctx, &dr)
		if err == nil {
			s.movedEnv(dr.Env)
			s.st.Windows += dr.Windows
			s.st.Gaps += dr.Gaps
			// Version 1: a drive stopped by a failed threshold (abort: true)
			// ends the run, completed, with the breach as its reason. Only
			// such a drive asks for the version, so histories without one
			// replay unchanged.
			if dr.StoppedBy != "" && workflow.GetVersion(ctx, "threshold-abort", workflow.DefaultVersion, 1) >= 1 {
				s.stoppedBy = dr.StoppedBy
				s.st.NextIndex = max(s.st.NextIndex, dr.NextIndex)
				break
			}
			if dr.NextIndex <= s.st.NextIndex {
				break // the driver stopped short; do not spin
			}
			s.st.NextIndex = dr.NextIndex
			continue
		}
		if s.hostGone(err) {
			// The host's worker did not come back within HostWait: its
			// environment is out of reach. Go on on another host.
			var lost activities.LostDetails
			ab := activities.AbandonInput{RunID: s.in.RunID, Incarnation: s.st.Incarnation, FirstIndex: s.st.NextIndex, Total: s.total}
			if err := workflow.ExecuteActivity(general, a.AbandonIncarnation, ab).Get(ctx, &lost); err != nil {
				return SoakResult{}, err
			}
			workflow.GetLogger(ctx).Warn("host gone; provisioning a new incarnation elsewhere", "host", s.st.HostQueue, "incarnation", s.st.Incarnation)
			s.st.Windows += lost.Windows
			s.st.Gaps += lost.Gaps
			s.st.NextIndex = max(s.st.NextIndex, lost.NextIndex)
			if err := s.moveHost(ctx); err != nil {
				return SoakResult{}, err
			}
			if err := s.provisionSomewhere(ctx); err != nil {
				return SoakResult{}, err
			}
			continue
		}
		var lost activities.LostDetails
		if !isAppError(err, activities.ErrTypeEnvironmentLost, &lost) {
			if isAppError(err, activities.ErrTypeTargetFailed, &dr) {
				s.movedEnv(dr.Env)
				s.st.Windows += dr.Windows
				s.st.Gaps += dr.Gaps
				s.st.NextIndex = max(s.st.NextIndex, dr.NextIndex)
				// Version 1: the target is started again when the scenario
				// allows one more restart. Only a crash asks for the
				// version, so histories without one replay unchanged.
				if s.st.NextIndex < s.total && workflow.GetVersion(ctx, targetRestartChange, workflow.DefaultVersion, 1) >= 1 {
					restarted, rerr := s.restartTarget(ctx, err)
					if rerr != nil {
						return SoakResult{}, rerr
					}
					if restarted {
						continue
					}
				}
			}
			return SoakResult{}, err
		}
		s.movedEnv(lost.Env)
		s.st.Windows += lost.Windows
		s.st.Gaps += lost.Gaps
		s.st.NextIndex = max(s.st.NextIndex, lost.NextIndex)
		// Version 1 of target-restart: a target that stopped while no
		// worker watched it is restarted like one that crashed under
		// load, its database kept, when the scenario allows. Only such a
		// loss asks for the version.
		if lost.TargetExited && s.st.NextIndex < s.total && workflow.GetVersion(ctx, targetRestartChange, workflow.DefaultVersion, 1) >= 1 {
			restarted, rerr := s.restartTarget(ctx, err)
			if rerr != nil {
				return SoakResult{}, rerr
			}
			if restarted {
				continue
			}
		}
		// The environment went down while no worker watched it: replace it.
		workflow.GetLogger(ctx).Warn("environment lost; provisioning a new incarnation", "incarnation", s.st.Incarnation, "reason", lost.Reason)
		s.teardown(ctx)
		if s.provisioned() >= MaxIncarnations {
			return SoakResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("environment lost %d times; last: %s", s.st.Incarnation, lost.Reason), ErrTypeSoakFailed, nil)
		}
		if err := s.provisionSomewhere(ctx); err != nil {
			return SoakResult{}, err
		}
	}
	return s.result(store.Completed, s.stoppedBy), nil
}

// movedEnv takes the environment as a drive left it when it restarted
// the database (nil: unchanged), so the next drive, a target restart and
// the teardown see the database's new process and port. (A result without
// it, as every history before it has, changes nothing on replay.)
func (s *soak) movedEnv(env *activities.Environment) {
	if env != nil && s.st.Env != nil && env.ID == s.st.Env.ID {
		s.st.Env = env
	}
}

// provisioned is how many environments the soak provisioned: its
// incarnations but the restarts of a crashed target, which MaxIncarnations
// does not bound (target.restart.max does).
func (s *soak) provisioned() int { return s.st.Incarnation - s.st.Restarts }

// restartTarget starts the crashed target of the soak's environment again
// as its next incarnation, when the scenario's target.restart allows one
// more restart (restarted false: it allows none; the crash ends the run as
// without the policy). crash is the drive's error: the run's reason when
// the restarts are used up or restarting fails.
func (s *soak) restartTarget(ctx workflow.Context, crash error) (restarted bool, err error) {
	var a *activities.Activities
	general := storeBound(ctx, generalTimeout)
	var allowed int
	if err := workflow.ExecuteActivity(general, a.RestartPolicy, activities.RestartPolicyInput{RunID: s.in.RunID}).Get(ctx, &allowed); err != nil {
		return false, err
	}
	if allowed == 0 {
		return false, nil
	}
	if s.st.Restarts >= allowed {
		return false, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s (restarted %s already, as many as target.restart.max allows)", failureReason(crash), times(s.st.Restarts)), ErrTypeSoakFailed, crash)
	}
	// On the host, like Provision: heartbeats while it waits for the
	// target's health; an attempt lost with its worker is retried (a
	// restart is idempotent).
	hctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              s.st.HostQueue,
		StartToCloseTimeout:    provisionTimeout,
		ScheduleToStartTimeout: s.hostWait(),
		HeartbeatTimeout:       ProvisionHeartbeatTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{activities.ErrTypeBadScenario, activities.ErrTypeProvision}},
	})
	in := activities.RestartInput{
		RunID: s.in.RunID, Env: *s.st.Env, Index: s.st.NextIndex, Total: s.total,
		Provider: s.in.Provider, TargetEnv: s.in.TargetEnv, Build: s.in.Build,
	}
	var res activities.RestartResult
	if err := workflow.ExecuteActivity(hctx, a.RestartTarget, in).Get(ctx, &res); err != nil {
		if temporal.IsCanceledError(err) {
			return false, err
		}
		return false, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s; restarting it failed: %s", failureReason(crash), failureReason(err)), ErrTypeSoakFailed, err)
	}
	s.st.Restarts++
	s.st.Incarnation = res.Env.Incarnation
	s.st.Env = &res.Env
	s.st.Gaps += res.Gaps
	s.st.NextIndex = max(s.st.NextIndex, res.NextIndex)
	workflow.GetLogger(ctx).Warn("target restarted", "incarnation", s.st.Incarnation, "restarts", s.st.Restarts, "down_seconds", res.DownSeconds)
	return true, nil
}

// times says n times in words: "1 time", "2 times".
func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// claimSlot takes a measurement slot for the soak and makes its host the
// soak's host.
func (s *soak) claimSlot(ctx workflow.Context) error {
	g, err := claimSlot(ctx, s.in.RunID, store.Pending, s.setStatus)
	if err != nil {
		return err
	}
	s.st.HostQueue, s.st.HoldsSlot = g.HostQueue, true
	return nil
}

// releaseSlot gives the soak's slot up.
func (s *soak) releaseSlot(ctx workflow.Context) {
	if s.st.HoldsSlot && releaseSlot(ctx, s.in.RunID) {
		s.st.HoldsSlot = false
	}
}

// moveHost gives up a host whose worker is gone (its environment cannot be
// torn down from here: that host's `longhaul sweep`, or its worker's
// sweeper when it returns, removes it) and claims a slot on another.
func (s *soak) moveHost(ctx workflow.Context) error {
	if s.provisioned() >= MaxIncarnations {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("host %s gone and %d incarnations used", activities.HostID(s.st.HostQueue), s.provisioned()), ErrTypeSoakFailed, nil)
	}
	s.st.Env = nil
	s.releaseSlot(ctx)
	s.st.HostQueue = ""
	return s.claimSlot(ctx)
}

// provisionSomewhere provisions the next incarnation on the soak's host;
// if that host's worker is gone (the provision not picked up within
// HostWait) it moves to another host and provisions there.
func (s *soak) provisionSomewhere(ctx workflow.Context) error {
	for {
		err := s.provision(ctx)
		if !s.hostGone(err) {
			return err
		}
		workflow.GetLogger(ctx).Warn("host gone before its environment was up; moving", "host", s.st.HostQueue)
		if err := s.moveHost(ctx); err != nil {
			return err
		}
	}
}

// hostGone reports whether err says an activity on the soak's host queue
// was not picked up within HostWait: no worker of that host is left. Only a
// soak that claimed its own slot moves; a comparison's round stays.
func (s *soak) hostGone(err error) bool {
	var to *temporal.TimeoutError
	return err != nil && s.st.HoldsSlot && errors.As(err, &to) && to.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
}

// hostWait is how long an activity waits on the host queue for a worker
// there (0, no limit, unless the soak holds its own slot).
func (s *soak) hostWait() time.Duration {
	if !s.st.HoldsSlot {
		return 0
	}
	if s.in.HostWait > 0 {
		return s.in.HostWait
	}
	return DefaultHostWait
}

func (s *soak) setStatus(ctx workflow.Context, st store.Status, reason string) error {
	var a *activities.Activities
	sctx := storeBound(ctx, generalTimeout)
	return workflow.ExecuteActivity(sctx, a.SetStatus, activities.StatusInput{RunID: s.in.RunID, Status: st, Reason: reason}).Get(ctx, nil)
}

// provision brings up the next incarnation on the host queue.
func (s *soak) provision(ctx workflow.Context) error {
	var a *activities.Activities
	opts := workflow.ActivityOptions{
		TaskQueue:              s.st.HostQueue,
		StartToCloseTimeout:    provisionTimeout,
		ScheduleToStartTimeout: s.hostWait(),
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 2, NonRetryableErrorTypes: []string{activities.ErrTypeBadScenario, activities.ErrTypeProvision}},
	}
	// Version 1: Provision heartbeats; an attempt lost with its worker is
	// retried (a third attempt allowed: the retry removes what the lost one
	// left, so attempts are cheap).
	if workflow.GetVersion(ctx, provisionHeartbeatChange, workflow.DefaultVersion, 1) >= 1 {
		opts.HeartbeatTimeout = ProvisionHeartbeatTimeout
		opts.RetryPolicy.MaximumAttempts = 3
	}
	hctx := workflow.WithActivityOptions(ctx, opts)
	var env activities.Environment
	in := activities.ProvisionInput{RunID: s.in.RunID, Incarnation: s.st.Incarnation + 1, Provider: s.in.Provider, TargetEnv: s.in.TargetEnv, Build: s.in.Build}
	if err := workflow.ExecuteActivity(hctx, a.Provision, in).Get(ctx, &env); err != nil {
		return err
	}
	s.st.Incarnation++
	s.st.Env = &env
	return nil
}

// driveCtx gives the drive its options: on the host queue, StartToClose the
// remaining duration plus a margin, a heartbeat timeout a few windows long,
// a bounded retry (each retry resumes after the last committed window), and
// WaitForCancellation so that a cancelled soak commits its last window
// before teardown.
func (s *soak) driveCtx(ctx workflow.Context) workflow.Context {
	remaining := time.Duration(s.total-s.st.NextIndex) * s.in.Window
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              s.st.HostQueue,
		StartToCloseTimeout:    remaining + driveMargin + 2*s.in.Window,
		ScheduleToStartTimeout: s.hostWait(),
		HeartbeatTimeout:       DriveHeartbeatTimeout(s.in.Window),
		WaitForCancellation:    true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    10,
			NonRetryableErrorTypes: []string{
				activities.ErrTypeTargetFailed, activities.ErrTypeEnvironmentLost, activities.ErrTypeBadScenario,
			},
		},
	})
}

// teardown removes the current environment; a failure is logged, not fatal:
// the sweeper removes what is left.
func (s *soak) teardown(ctx workflow.Context) {
	if s.st.Env == nil {
		return
	}
	var a *activities.Activities
	opts := workflow.ActivityOptions{
		TaskQueue:              s.st.HostQueue,
		StartToCloseTimeout:    teardownTimeout,
		ScheduleToStartTimeout: teardownScheduleTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 5},
	}
	// Version 1: Teardown heartbeats too (it is idempotent: a retry after a
	// lost attempt removes whatever is still there).
	if workflow.GetVersion(ctx, teardownHeartbeatChange, workflow.DefaultVersion, 1) >= 1 {
		opts.HeartbeatTimeout = ProvisionHeartbeatTimeout
	}
	tctx := workflow.WithActivityOptions(ctx, opts)
	if err := workflow.ExecuteActivity(tctx, a.Teardown, *s.st.Env).Get(tctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("teardown failed; `longhaul sweep` removes leftovers", "env", s.st.Env.ID, "error", err)
	}
	s.st.Env = nil
}

// finish tears down, analyses the run (a failed or cancelled one too, once
// it had an environment), records the final status and maps the outcome to
// the workflow's result: completed → SoakResult, failed → an
// ErrTypeSoakFailed error with the SoakResult as details, cancelled → a
// canceled error (the workflow ends Canceled).
func (s *soak) finish(ctx workflow.Context, runErr error) (SoakResult, error) {
	var a *activities.Activities
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	s.teardown(dctx)

	res := s.result(store.Completed, s.stoppedBy)
	switch {
	case ctx.Err() != nil || (runErr != nil && temporal.IsCanceledError(runErr)):
		res = s.result(store.Cancelled, "cancelled by request")
	case runErr != nil:
		res = s.result(store.Failed, failureReason(runErr))
	}
	// Version 1 also analyses a failed or cancelled soak that got as far as
	// an environment: its windows are measured data, and a leak that ends in
	// an OOM kill fails the very run it should be found in. (The window count
	// cannot decide it: a drive cancelled mid-way does not report its
	// windows.) Version 0 analysed completed soaks only.
	analyseAll := workflow.GetVersion(dctx, "analyse-every-soak", workflow.DefaultVersion, 1) >= 1
	if res.Status == store.Completed || (analyseAll && s.st.Incarnation > 0) {
		actx := storeBound(dctx, 10*time.Minute)
		var ar activities.AnalyzeResult
		if err := workflow.ExecuteActivity(actx, a.Analyze, activities.AnalyzeInput{RunID: s.in.RunID}).Get(actx, &ar); err != nil {
			// The measurements stand without findings; `longhaul analyze` can redo it.
			workflow.GetLogger(ctx).Error("analysis failed", "error", err)
		}
		res.Findings = ar.Findings
	}

	sctx := storeBound(dctx, generalTimeout)
	status := activities.StatusInput{RunID: s.in.RunID, Status: res.Status, Reason: res.Reason}
	if err := workflow.ExecuteActivity(sctx, a.SetStatus, status).Get(sctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("recording the final status failed", "status", res.Status, "error", err)
	}
	// The slot goes last, after the final status: the next soak on this
	// host starts after this one's recorded end.
	s.releaseSlot(dctx)

	switch res.Status {
	case store.Cancelled:
		return res, temporal.NewCanceledError(res)
	case store.Failed:
		return res, temporal.NewNonRetryableApplicationError(res.Reason, ErrTypeSoakFailed, nil, res)
	}
	return res, nil
}

func (s *soak) result(status store.Status, reason string) SoakResult {
	return SoakResult{
		RunID: s.in.RunID, Status: status, Reason: reason,
		Windows: s.st.Windows, Gaps: s.st.Gaps, Incarnations: s.st.Incarnation,
	}
}

// isAppError reports whether err carries an application error of type typ,
// decoding its details into details (if not nil).
func isAppError(err error, typ string, details any) bool {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != typ {
		return false
	}
	if details != nil && app.HasDetails() {
		_ = app.Details(details)
	}
	return true
}

// failureReason is the innermost application error's message: "target
// stopped answering: connection refused", not the activity-error wrapping.
func failureReason(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var to *temporal.TimeoutError
	if errors.As(err, &to) {
		return "timed out: " + to.Error()
	}
	return err.Error()
}
