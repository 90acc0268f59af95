package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// keepAlive heartbeats step every third of the activity's heartbeat timeout
// until the returned stop is called. Provision and Teardown wait on work that
// reports no progress of its own (a build, an image build, initdb, a health
// wait); the heartbeat says only that this worker is alive, so a worker
// killed meanwhile is noticed within the timeout instead of after
// StartToClose. Without a heartbeat timeout (a workflow from before it had
// one) or outside an activity it does nothing.
func keepAlive(ctx context.Context, step string) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		return func() {}
	}
	activity.RecordHeartbeat(ctx, step)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, step)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// retried logs, on a second or later attempt, that an earlier attempt was
// lost (its worker died or stopped heartbeating). The provisioners remove
// what such an attempt left before they start again.
func (a *Activities) retried(ctx context.Context, what, runID string, incarnation int) {
	if !activity.IsActivity(ctx) {
		return
	}
	if n := activity.GetInfo(ctx).Attempt; n > 1 {
		a.logger().Warn(what+": an earlier attempt was lost (its worker died?); starting over",
			"run", runID, "incarnation", incarnation, "attempt", n)
	}
}
