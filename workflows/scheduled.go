package workflows

import (
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
	return res, err
}
