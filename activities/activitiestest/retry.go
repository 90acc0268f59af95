package activitiestest

import (
	"io"
	"log/slog"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/longhaul-dev/longhaul/activities"
)

// DriveRetried runs a.Drive with in as the soak workflow does, with up to
// attempts attempts: an attempt that fails (its worker died: the fake
// Driver's Before returned an error) is retried at once, and the retry
// reads the last heartbeat, as on a real worker. It returns the last
// attempt's result.
func DriveRetried(t testing.TB, a *activities.Activities, in activities.DriveInput, attempts int32) (activities.DriveResult, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	// Not the default 3 s: a real provisioner's restart (a database's
	// crash recovery) takes longer on a busy machine.
	env.SetTestTimeout(2 * time.Minute)
	if a.Logger == nil {
		a.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	activities.Register(env, a)
	env.RegisterWorkflow(retriedDrive)
	env.ExecuteWorkflow(retriedDrive, in, attempts)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the drive's workflow did not complete")
	}
	var res activities.DriveResult
	err := env.GetWorkflowResult(&res)
	return res, err
}

func retriedDrive(ctx workflow.Context, in activities.DriveInput, attempts int32) (activities.DriveResult, error) {
	var a *activities.Activities
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: attempts},
	})
	var res activities.DriveResult
	err := workflow.ExecuteActivity(ctx, a.Drive, in).Get(ctx, &res)
	return res, err
}
