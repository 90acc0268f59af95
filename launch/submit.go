package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// Submitter starts a workflow on the general task queue (a Temporal
// client, in cmd/longhaul).
type Submitter interface {
	Submit(ctx context.Context, workflowID, workflow string, in any) (follow.Workflow, error)
}

// Launcher submits a checked soak or comparison and follows it on the
// terminal: the flow longhaul run and longhaul compare share. Store the
// record, submit its workflow, then --detach's note or the header line, the
// live UI and the follower, and where to browse it later.
type Launcher struct {
	Store store.Store
	Where string // the store, as the user named it
	Submitter
	Temporal string // the frontend's HOST:PORT, for errors
	Terminal follow.Terminal
	Session  follow.Session
	// Detach: submit and return without following.
	Detach bool
	// LiveUI serves the browser UI while the workflow is followed and
	// prints the address of the page it returns; close stops it.
	LiveUI func(page func(*charts.Running) string) (close func(), err error)
	// Logs names the Temporal log file; Lines renders longhaul's warnings
	// around the progress bar.
	Logs  string
	Lines *report.WarningLines
	// Format, Data and StoreDSN are --format, --data and --store as given,
	// for follow.BrowseLater.
	Format, Data, StoreDSN string
}

// Soak stores p as the run id, submits it and follows it. Its error is a
// follow.Exit for a run that failed, was cancelled or failed its gate.
func (l Launcher) Soak(ctx context.Context, p Soak, id string) error {
	run := store.Run{
		ID: id, Name: p.Scenario.Name, Kind: "soak", Status: store.Pending,
		Scenario: string(p.Source), ScenarioDir: p.Dir, WorkflowID: "longhaul-soak-" + id,
		TargetURL: p.Scenario.Environment.Target.URL, FailOn: string(p.FailOn), CreatedAt: time.Now(),
	}
	if err := l.Store.PutRun(ctx, run); err != nil {
		return fmt.Errorf("record the run in %s: %w", l.Where, err)
	}
	in := p.Input
	in.RunID = run.ID
	wf, err := l.submit(ctx, "soak", run.WorkflowID, workflows.WorkflowName, in, func(ctx context.Context, reason string, at time.Time) error {
		return l.Store.SetStatus(ctx, run.ID, store.Failed, reason, at)
	})
	if err != nil {
		return err
	}
	if l.Detach {
		l.Session.Detached(l.Terminal, "run", run.ID, run.WorkflowID)
		return nil
	}
	fmt.Fprintf(l.Terminal.Stderr, "run %s: %s, %s in %s windows (store %s)\n", run.ID, run.Name, p.Duration, p.Window, l.Where)
	closeUI, err := l.LiveUI(func(ui *charts.Running) string { return ui.RunURL(run.ID) })
	if err != nil {
		return err
	}
	defer closeUI()
	err = follow.FollowRun(ctx, l.Terminal, l.Store, wf, follow.Run{
		ID: run.ID, Format: p.Format, Duration: p.Duration, Window: p.Window,
		Lines: l.Lines, DetachNote: l.Session.DetachNote("run", run.ID), LogPath: l.Logs,
	})
	follow.BrowseLater(l.Terminal, l.Format, l.Data, l.StoreDSN, "/runs/"+run.ID)
	return err
}

// Compare stores p as the comparison id, submits it and follows it. Its
// error is a follow.Exit for a comparison that failed, was cancelled, or
// completed with a worse metric under failOnWorse.
func (l Launcher) Compare(ctx context.Context, p Compare, id string, failOnWorse bool) error {
	rec := p.Record
	rec.ID, rec.WorkflowID, rec.CreatedAt = id, "longhaul-compare-"+id, time.Now()
	p.Input.ComparisonID = rec.ID
	if err := l.Store.PutComparison(ctx, rec); err != nil {
		return fmt.Errorf("record the comparison in %s: %w", l.Where, err)
	}
	wf, err := l.submit(ctx, "comparison", rec.WorkflowID, workflows.CompareWorkflowName, p.Input, func(ctx context.Context, reason string, at time.Time) error {
		return l.Store.SetComparisonStatus(ctx, rec.ID, store.Failed, reason, at)
	})
	if err != nil {
		return err
	}
	if l.Detach {
		l.Session.Detached(l.Terminal, "comparison", rec.ID, rec.WorkflowID)
		return nil
	}
	kind := "A vs B"
	if rec.SameBuild() {
		kind = "A vs A (the noise floor)"
	}
	fmt.Fprintf(l.Terminal.Stderr, "comparison %s: %s, %s, %s of %s rounds in %s windows, order %s (store %s)\n",
		rec.ID, rec.Name, kind, report.PairsLine(rec), rec.RoundDuration, rec.Window, rec.Order, l.Where)
	closeUI, err := l.LiveUI(func(ui *charts.Running) string { return ui.ComparisonURL(rec.ID) })
	if err != nil {
		return err
	}
	defer closeUI()
	err = follow.FollowComparison(ctx, l.Terminal, l.Store, wf, follow.Comparison{
		ID: rec.ID, Format: p.Format, Pairs: max(rec.Pairs, rec.MaxPairs),
		RoundDuration: rec.RoundDuration, Window: rec.Window, FailOnWorse: failOnWorse, DetachNote: l.Session.DetachNote("comparison", rec.ID),
	})
	if e, ok := err.(follow.Exit); ok && e.Code == follow.ExitFailed {
		fmt.Fprintf(l.Terminal.Stderr, "longhaul: Temporal's own log lines are in %s\n", l.Logs)
	}
	follow.BrowseLater(l.Terminal, l.Format, l.Data, l.StoreDSN, "/comparisons/"+rec.ID)
	return err
}

// submit starts a workflow for a record already stored; when it is
// refused, fail marks the record failed (even if ctx is cancelled).
func (l Launcher) submit(ctx context.Context, what, workflowID, workflow string, in any, fail func(ctx context.Context, reason string, at time.Time) error) (follow.Workflow, error) {
	wf, err := l.Submit(ctx, workflowID, workflow, in)
	if err != nil {
		_ = fail(context.WithoutCancel(ctx), "not submitted: "+err.Error(), time.Now())
		return nil, fmt.Errorf("submit the %s to Temporal at %s: %w", what, l.Temporal, err)
	}
	return wf, nil
}
