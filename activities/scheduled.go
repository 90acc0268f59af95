package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
)

// Refs resolves git refs when a scheduled run starts (package provision's
// ResolveRef and HeadCommit do it with git).
type Refs interface {
	// ResolveRef returns the commit ref names in repo (a path or URL).
	ResolveRef(ctx context.Context, repo, ref string) (string, error)
	// HeadCommit returns the commit checked out in the work tree holding
	// dir, or "" when there is none.
	HeadCommit(ctx context.Context, dir string) string
}

// BeginScheduledInput is a run a schedule just started.
type BeginScheduledInput struct {
	RunID       string
	WorkflowID  string
	Schedule    string
	Name        string
	Scenario    string // YAML as given, ${env:...} unresolved
	ScenarioDir string
	FailOn      string
}

// BeginScheduledResult says what the run's target is built from.
type BeginScheduledResult struct {
	// Ref is target.build.ref as the scenario gives it ("" when none).
	Ref string
	// Commit is what Ref resolved to now, or the commit checked out in
	// target.build.dir for a local build ("" when neither applies).
	Commit string
	// Pin is true when the run must build Commit rather than Ref: the ref
	// was resolved here and must not move before the build.
	Pin bool
}

// BeginScheduled creates the record of a run started by a schedule, with
// the schedule's name and the commit its git ref resolves to now (each
// night soaks the then-current commit of a branch). It is idempotent: a
// retry finds the record and returns the commit recorded.
func (a *Activities) BeginScheduled(ctx context.Context, in BeginScheduledInput) (BeginScheduledResult, error) {
	var res BeginScheduledResult
	s, err := scenarios.Parse([]byte(in.Scenario), in.Name+".yaml")
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(
			"scenario of schedule "+in.Schedule+": "+strings.ReplaceAll(err.Error(), "\n", "; "), ErrTypeBadScenario, nil)
	}
	s.ResolvePaths(in.ScenarioDir)
	if b := s.Environment.Target.Build; b != nil {
		res.Ref = b.Ref
	}
	if r, err := a.Store.GetRun(ctx, in.RunID); err == nil {
		res.Commit, res.Pin = r.Commit, res.Ref != "" && r.Commit != ""
		return res, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return res, fmt.Errorf("begin scheduled run %s: %w", in.RunID, err)
	}
	if b := s.Environment.Target.Build; b != nil && a.Refs != nil {
		switch {
		case b.Repo != "" && b.Ref != "":
			c, err := a.Refs.ResolveRef(ctx, b.Repo, b.Ref)
			if err != nil {
				return res, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("schedule %s: resolve target.build.ref %s: %v", in.Schedule, b.Ref, err), ErrTypeBadScenario, nil)
			}
			res.Commit, res.Pin = c, true
		case b.Dir != "":
			res.Commit = a.Refs.HeadCommit(ctx, b.Dir)
		}
	}
	err = a.Store.PutRun(ctx, store.Run{
		ID: in.RunID, Name: in.Name, Kind: "soak", Status: store.Pending,
		Scenario: in.Scenario, ScenarioDir: in.ScenarioDir, WorkflowID: in.WorkflowID,
		TargetURL: s.Environment.Target.URL, FailOn: in.FailOn,
		Schedule: in.Schedule, Commit: res.Commit, CreatedAt: a.now(),
	})
	if err != nil {
		return res, fmt.Errorf("begin scheduled run %s: %w", in.RunID, err)
	}
	a.logger().Info("scheduled run", "schedule", in.Schedule, "run", in.RunID, "ref", res.Ref, "commit", res.Commit)
	return res, nil
}

// BeginScheduledCompareInput is a comparison a schedule just started.
type BeginScheduledCompareInput struct {
	Comparison store.Comparison
	// Scenario is the YAML (Comparison leaves it out of its JSON).
	Scenario string
}

// BeginScheduledCompare records a comparison a schedule started (with the
// schedule's name), unless a retry finds it recorded already.
func (a *Activities) BeginScheduledCompare(ctx context.Context, in BeginScheduledCompareInput) error {
	c := in.Comparison
	c.Scenario = in.Scenario
	_, err := a.Store.GetComparison(ctx, c.ID)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("begin scheduled comparison %s: %w", c.ID, err)
	}
	c.Status = store.Pending
	if err := a.Store.PutComparison(ctx, c); err != nil {
		return fmt.Errorf("begin scheduled comparison %s: %w", c.ID, err)
	}
	a.logger().Info("scheduled comparison", "schedule", c.Schedule, "comparison", c.ID)
	return nil
}
