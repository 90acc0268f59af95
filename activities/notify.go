package activities

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/notify"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
)

// ErrTypeNotifyRejected: the receiver refused a notification in a way a
// retry will not change (notify.ErrRejected). Non-retryable.
const ErrTypeNotifyRejected = "NotifyRejected"

// NoticeInput asks what a scheduled run's notification says.
type NoticeInput struct {
	RunID    string
	Schedule string
	// UIURL is the browser UI's base URL ("" for no links).
	UIURL string
}

// Notice is a notification to send; an empty Events means none.
type Notice struct {
	Payload notify.Payload
}

// PrepareNotice reads the ended run, its findings and its schedule's history,
// and returns the notification to send: its warning-or-worse findings, its
// failure, and the change points that appeared with it (each metric's series
// extended by this run, analysis.NewChangePoints).
func (a *Activities) PrepareNotice(ctx context.Context, in NoticeInput) (Notice, error) {
	run, err := a.Store.GetRun(ctx, in.RunID)
	if err != nil {
		return Notice{}, fmt.Errorf("notice of run %s: %w", in.RunID, err)
	}
	fs, err := a.Store.Findings(ctx, in.RunID)
	if err != nil {
		return Notice{}, fmt.Errorf("notice of run %s: %w", in.RunID, err)
	}
	var points []analysis.RunChangePoint
	if history.Included(run.Status) {
		h, err := history.Build(ctx, a.Store, in.Schedule, history.Options{})
		if err != nil {
			return Notice{}, fmt.Errorf("notice of run %s: %w", in.RunID, err)
		}
		series := h.Series()
		// Only when this run is the newest: a late retry of an old run's
		// notice must not report the points later runs brought.
		if n := len(series); n > 0 && series[n-1].ID == run.ID {
			points = analysis.NewChangePoints(series, h.Metrics, analysis.ChangePointOptions{})
		}
	}
	rs, err := a.Store.Thresholds(ctx, in.RunID)
	if err != nil {
		return Notice{}, fmt.Errorf("notice of run %s: %w", in.RunID, err)
	}
	var gateReasons []string
	if g := thresholds.Judge(rs, fs, analysis.Severity(run.FailOn)); !g.Passed {
		gateReasons = g.Reasons()
	}
	events, worth := notify.Events(run, fs, points, gateReasons)
	p := notify.Payload{
		Type: notify.Type, Events: events, Schedule: in.Schedule, RunID: run.ID, Commit: run.Commit,
		Status: run.Status, Reason: run.Reason, Findings: worth, ChangePoints: points,
	}
	if run.Status == store.Completed {
		p.GateReasons = gateReasons
	}
	if in.UIURL != "" {
		p.URL = in.UIURL + "/runs/" + url.PathEscape(run.ID)
		p.HistoryURL = in.UIURL + "/schedules/" + url.PathEscape(in.Schedule)
	}
	return Notice{Payload: p}, nil
}

// NotifyInput is one notification to deliver.
type NotifyInput struct {
	URL     string
	Payload notify.Payload
}

// Notify POSTs the notification; it returns the attempt that delivered it.
// Errors are retried by the activity's retry policy, except a rejection
// (ErrTypeNotifyRejected).
func (a *Activities) Notify(ctx context.Context, in NotifyInput) (int, error) {
	attempt := int(activity.GetInfo(ctx).Attempt)
	err := notify.Post(ctx, a.HTTPClient, in.URL, in.Payload)
	if errors.Is(err, notify.ErrRejected) {
		// The details carry the attempt: the workflow records it.
		return attempt, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNotifyRejected, nil, attempt)
	}
	if err != nil {
		a.logger().Warn("notification not delivered", "run", in.Payload.RunID, "attempt", attempt, "error", err)
		return attempt, err
	}
	return attempt, nil
}

// RecordNotification stores how a notification went.
func (a *Activities) RecordNotification(ctx context.Context, n store.Notification) error {
	n.At = a.now()
	if err := a.Store.PutNotification(ctx, n); err != nil {
		return fmt.Errorf("record notification of run %s: %w", n.RunID, err)
	}
	return nil
}
