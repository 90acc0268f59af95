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
		if points, err = a.newestChangePoints(ctx, in.Schedule, run.ID, ""); err != nil {
			return Notice{}, fmt.Errorf("notice of run %s: %w", in.RunID, err)
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
		Type: notify.Type, Kind: notify.KindSoak, Events: events, Schedule: in.Schedule, RunID: run.ID, Commit: run.Commit,
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

// CompareNoticeInput asks what a scheduled comparison's notification says.
type CompareNoticeInput struct {
	ComparisonID string
	Schedule     string
	// UIURL is the browser UI's base URL ("" for no links).
	UIURL string
}

// PrepareCompareNotice reads the ended comparison and its schedule's
// history, and returns the notification to send: its failure, its worse
// verdicts (B regressed against A), and the change points that appeared
// with it in the schedule's B/A ratios (analysis.NewChangePoints).
func (a *Activities) PrepareCompareNotice(ctx context.Context, in CompareNoticeInput) (Notice, error) {
	c, err := a.Store.GetComparison(ctx, in.ComparisonID)
	if err != nil {
		return Notice{}, fmt.Errorf("notice of comparison %s: %w", in.ComparisonID, err)
	}
	var points []analysis.RunChangePoint
	if history.Included(c.Status) {
		if points, err = a.newestChangePoints(ctx, in.Schedule, c.ID, history.KindCompare); err != nil {
			return Notice{}, fmt.Errorf("notice of comparison %s: %w", in.ComparisonID, err)
		}
	}
	events, worse := notify.CompareEvents(c, points)
	p := notify.Payload{
		Type: notify.Type, Kind: notify.KindCompare, Events: events, Schedule: in.Schedule, ComparisonID: c.ID,
		Commit: c.B.Commit, CommitA: c.A.Commit, CommitB: c.B.Commit, Status: c.Status, Reason: c.Reason,
		Verdicts: worse, ChangePoints: points,
	}
	if in.UIURL != "" {
		p.URL = in.UIURL + "/comparisons/" + url.PathEscape(c.ID)
		p.HistoryURL = in.UIURL + "/schedules/" + url.PathEscape(in.Schedule)
	}
	return Notice{Payload: p}, nil
}

// newestChangePoints is the change points in schedule's history when id is
// its newest row (and the history is of kind, when kind is set), else none:
// a late retry of an old row's notice must not report the points later
// rows brought.
func (a *Activities) newestChangePoints(ctx context.Context, schedule, id, kind string) ([]analysis.RunChangePoint, error) {
	h, err := history.Build(ctx, a.Store, schedule, history.Options{})
	if err != nil {
		return nil, err
	}
	series := h.Series()
	if n := len(series); (kind == "" || h.Kind == kind) && n > 0 && series[n-1].ID == id {
		return analysis.NewChangePoints(series, h.Metrics, analysis.ChangePointOptions{}), nil
	}
	return nil, nil
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
		a.logger().Warn("notification not delivered", "run", in.Payload.RunID, "comparison", in.Payload.ComparisonID, "attempt", attempt, "error", err)
		return attempt, err
	}
	return attempt, nil
}

// RecordNotification stores how a notification went (with its run, or
// its comparison when n.ComparisonID is set).
func (a *Activities) RecordNotification(ctx context.Context, n store.Notification) error {
	n.At = a.now()
	if err := a.Store.PutNotification(ctx, n); err != nil {
		if n.ComparisonID != "" {
			return fmt.Errorf("record notification of comparison %s: %w", n.ComparisonID, err)
		}
		return fmt.Errorf("record notification of run %s: %w", n.RunID, err)
	}
	return nil
}
