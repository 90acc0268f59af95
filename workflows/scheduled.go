package workflows

import (
	"errors"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/store"
)

// ScheduledWorkflowName is the registered name of ScheduledSoakWorkflow,
// the workflow a Temporal Schedule starts (package schedule).
const ScheduledWorkflowName = "ScheduledSoakWorkflow"

// ScheduledInput is the action of a schedule: everything `longhaul run`
// would have put in the run record and the SoakInput, fixed when the
// schedule is created or updated.
type ScheduledInput struct {
	// Schedule is the schedule's name; its runs carry it.
	Schedule string
	// Cron is the schedule's cron expressions as given (the server keeps
	// them only as calendars), for describe.
	Cron []string
	// File is the scenario file as given when the schedule was created.
	File string
	Name string
	// Scenario is the YAML as given (${env:...} unresolved); ScenarioDir
	// the directory relative paths in it resolve against.
	Scenario    string
	ScenarioDir string
	Duration    time.Duration
	Window      time.Duration
	Provider    string
	TargetEnv   map[string]string
	// FailOn is recorded with each run (its gate's finding severity).
	FailOn string
	// Notify is the URL each run's notifications are POSTed to ("": none).
	Notify string
	// UIURL is the base URL of the browser UI, for links in notifications.
	UIURL string
	// Compare, when set, makes each firing a comparison of two builds
	// (a nightly A/B) instead of a soak; the fields above other than
	// Schedule, Cron, File and Name are then unused.
	Compare *ScheduledCompare
}

// ScheduledCompare is a scheduled comparison: its record and workflow
// input as `longhaul compare` would have made them, ids unset (each firing
// gets its own).
type ScheduledCompare struct {
	Record store.Comparison
	// Scenario is the YAML (Record leaves it out of JSON, hence payloads).
	Scenario string
	Input    CompareInput
}

// ScheduledResult is the outcome of one scheduled run.
type ScheduledResult struct {
	RunID  string
	Commit string
	Soak   SoakResult
}

// ScheduledSoakWorkflow is one firing of a schedule: it creates the run
// record (with the schedule's name and the commit the target's git ref
// resolves to now), runs the soak as a child workflow pinned to that commit,
// and returns its result. While the child runs, this workflow runs too, so
// the schedule's overlap policy (skip by default) sees a soak in progress.
func ScheduledSoakWorkflow(ctx workflow.Context, in ScheduledInput) (ScheduledResult, error) {
	var res ScheduledResult
	// A uuid v7 like the ids `longhaul run` gives, drawn once and replayed.
	if err := workflow.SideEffect(ctx, func(workflow.Context) any {
		id, err := uuid.NewV7()
		if err != nil {
			return uuid.NewString()
		}
		return id.String()
	}).Get(&res.RunID); err != nil {
		return res, err
	}
	var a *activities.Activities
	general := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           activities.GeneralQueue,
		StartToCloseTimeout: 2 * time.Minute, // a git ls-remote of a slow remote
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrTypeBadScenario}},
	})
	// Version 1 records the firings skipped while this run goes: it marks
	// the schedule's skip count now and, when the run ends whatever its
	// outcome, records each skip (activities.RecordSkipped says how).
	// Histories from before have no marker and replay without both steps.
	if workflow.GetVersion(ctx, "scheduled-skips", workflow.DefaultVersion, 1) >= 1 {
		var mark activities.FiringMark
		if err := workflow.ExecuteActivity(general, a.MarkFirings, activities.MarkFiringsInput{Schedule: in.Schedule}).Get(ctx, &mark); err != nil {
			workflow.GetLogger(ctx).Warn("schedule's firings not marked", "schedule", in.Schedule, "error", err)
		}
		if mark.OK {
			defer func() {
				dctx, _ := workflow.NewDisconnectedContext(ctx)
				recordSkipped(dctx, in, res.RunID, mark)
			}()
		}
	}
	if in.Compare != nil {
		// Only a compare schedule's histories have this marker (and the
		// branch): the soak schedules' histories replay unchanged.
		_ = workflow.GetVersion(ctx, "scheduled-compare", workflow.DefaultVersion, 1)
		return res, scheduledCompare(ctx, general, in, res.RunID)
	}
	soakID := "longhaul-soak-" + res.RunID
	var begun activities.BeginScheduledResult
	err := workflow.ExecuteActivity(general, a.BeginScheduled, activities.BeginScheduledInput{
		RunID: res.RunID, WorkflowID: soakID, Schedule: in.Schedule, Name: in.Name,
		Scenario: in.Scenario, ScenarioDir: in.ScenarioDir, FailOn: in.FailOn,
	}).Get(ctx, &begun)
	if err != nil {
		return res, err
	}
	res.Commit = begun.Commit
	soak := SoakInput{
		RunID: res.RunID, Name: in.Name, Duration: in.Duration, Window: in.Window,
		Provider: in.Provider, TargetEnv: in.TargetEnv,
	}
	if begun.Pin {
		soak.Build = &store.Build{Ref: begun.Commit, Commit: begun.Commit}
	}
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          soakID,
		TaskQueue:           activities.GeneralQueue,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
	})
	err = workflow.ExecuteChildWorkflow(child, WorkflowName, soak).Get(ctx, &res.Soak)
	res.Soak.RunID = res.RunID
	// Version 1 notifies (in.Notify) when the soak has ended, whatever
	// its outcome; a delivery that keeps failing is recorded and never
	// changes the run's result.
	if in.Notify != "" && workflow.GetVersion(ctx, "scheduled-notify", workflow.DefaultVersion, 1) >= 1 {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		notifySoak(dctx, in, res.RunID)
	}
	return res, err
}

// recordSkipped records the firings the schedule skipped while the run
// (or comparison) id went; a failure is logged, never the run's.
func recordSkipped(ctx workflow.Context, in ScheduledInput, id string, mark activities.FiringMark) {
	var a *activities.Activities
	general := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           activities.GeneralQueue,
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	rec := activities.RecordSkippedInput{Schedule: in.Schedule, RunID: id, Name: in.Name, Mark: mark}
	if in.Compare != nil {
		c := in.Compare.Record
		c.Scenario = ""
		rec.Compare = &c
	}
	if err := workflow.ExecuteActivity(general, a.RecordSkipped, rec).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("skipped firings not recorded", "schedule", in.Schedule, "run", id, "error", err)
	}
}

// Notification retries: 1 s, 2 s, 4 s … up to a minute apart, six tries.
const notifyAttempts = 6

// notifySoak sends the run's notification, if it has anything to say, and
// records how it went.
func notifySoak(ctx workflow.Context, in ScheduledInput, runID string) {
	var a *activities.Activities
	var notice activities.Notice
	err := workflow.ExecuteActivity(noticeOptions(ctx), a.PrepareNotice, activities.NoticeInput{RunID: runID, Schedule: in.Schedule, UIURL: in.UIURL}).Get(ctx, &notice)
	if err != nil {
		workflow.GetLogger(ctx).Error("notification not prepared", "run", runID, "error", err)
		return
	}
	deliver(ctx, in, notice, store.Notification{RunID: runID})
}

// notifyCompare sends the comparison's notification, if it has anything to
// say (it failed, a verdict is worse, its B/A ratios show a new change
// point), and records how it went with the comparison.
func notifyCompare(ctx workflow.Context, in ScheduledInput, id string) {
	var a *activities.Activities
	var notice activities.Notice
	err := workflow.ExecuteActivity(noticeOptions(ctx), a.PrepareCompareNotice, activities.CompareNoticeInput{ComparisonID: id, Schedule: in.Schedule, UIURL: in.UIURL}).Get(ctx, &notice)
	if err != nil {
		workflow.GetLogger(ctx).Error("notification not prepared", "comparison", id, "error", err)
		return
	}
	deliver(ctx, in, notice, store.Notification{ComparisonID: id})
}

// noticeOptions are those of preparing and recording a notification.
func noticeOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           activities.GeneralQueue,
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
}

// deliver POSTs notice to in.Notify, unless it has no events, retrying with
// backoff, and records how it went as rec (keyed by its run or comparison).
func deliver(ctx workflow.Context, in ScheduledInput, notice activities.Notice, rec store.Notification) {
	var a *activities.Activities
	log := workflow.GetLogger(ctx)
	if len(notice.Payload.Events) == 0 {
		return
	}
	post := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           activities.GeneralQueue,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: notifyAttempts, NonRetryableErrorTypes: []string{activities.ErrTypeNotifyRejected},
		},
	})
	rec.URL, rec.Events = in.Notify, notice.Payload.Events
	err := workflow.ExecuteActivity(post, a.Notify, activities.NotifyInput{URL: in.Notify, Payload: notice.Payload}).Get(ctx, &rec.Attempts)
	if err != nil {
		rec.Attempts = notifyAttempts
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == activities.ErrTypeNotifyRejected && app.HasDetails() {
			_ = app.Details(&rec.Attempts)
		}
		rec.Error = failureReason(err)
		log.Warn("notification not delivered", "run", rec.RunID, "comparison", rec.ComparisonID, "url", in.Notify, "error", err)
	} else {
		rec.OK = true
	}
	if err := workflow.ExecuteActivity(noticeOptions(ctx), a.RecordNotification, rec).Get(ctx, nil); err != nil {
		log.Error("notification not recorded", "run", rec.RunID, "comparison", rec.ComparisonID, "error", err)
	}
}

// scheduledCompare records a comparison with the schedule's name (id drawn
// by the workflow) and runs it as a child workflow. Each side's git ref is
// resolved when the comparison builds it, so each night compares the
// then-current commits; the record holds them.
func scheduledCompare(ctx, general workflow.Context, in ScheduledInput, id string) error {
	var a *activities.Activities
	rec := in.Compare.Record
	rec.ID, rec.WorkflowID, rec.Schedule = id, "longhaul-compare-"+id, in.Schedule
	rec.CreatedAt = workflow.Now(ctx)
	begin := activities.BeginScheduledCompareInput{Comparison: rec, Scenario: in.Compare.Scenario}
	if err := workflow.ExecuteActivity(general, a.BeginScheduledCompare, begin).Get(ctx, nil); err != nil {
		return err
	}
	cin := in.Compare.Input
	cin.ComparisonID = id
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          rec.WorkflowID,
		TaskQueue:           activities.GeneralQueue,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
	})
	var cr CompareResult
	err := workflow.ExecuteChildWorkflow(child, CompareWorkflowName, cin).Get(ctx, &cr)
	// Version 1 notifies (in.Notify) when the comparison has ended, as a
	// soak's run does: a delivery that keeps failing is recorded with the
	// comparison and never changes its result. Compare schedules made
	// before had no --notify, so their histories never reach the marker.
	if in.Notify != "" && workflow.GetVersion(ctx, "scheduled-compare-notify", workflow.DefaultVersion, 1) >= 1 {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		notifyCompare(dctx, in, id)
	}
	return err
}
