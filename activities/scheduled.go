package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
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

// Firings reads a schedule's firings from Temporal (package schedule's
// Client has it). Temporal keeps only a count of the firings a schedule
// skipped because its last run was still going, not their times: the
// skipped-firing records are made from that count, the times the spec
// matches, and the firings that started a run (see RecordSkipped).
type Firings interface {
	// Firings returns what the schedule name of namespace has done so far
	// and the times its spec matches in (from, to] (none unless from is
	// before to).
	Firings(ctx context.Context, namespace, name string, from, to time.Time) (FiringLog, error)
}

// FiringLog is a schedule's firings as Temporal reports them.
type FiringLog struct {
	// SkippedOverlap counts the firings skipped because a run was still
	// going, since the schedule was created.
	SkippedOverlap int
	// Taken are the latest firings that started a workflow (Temporal keeps
	// about ten), oldest first.
	Taken []TakenFiring
	// Matching are the times the spec matches in the range asked for.
	Matching []time.Time
}

// TakenFiring is a firing that started the workflow WorkflowID; At is the
// time it was due (jitter included), as the spec's matching times give it.
type TakenFiring struct {
	At         time.Time
	WorkflowID string
}

// FiringMark is where a scheduled run started among its schedule's
// firings: its own firing time and the schedule's skip count then. OK is
// false when it could not be read (no Firings, or Temporal's error): no
// skipped firing is recorded then.
type FiringMark struct {
	OK             bool
	FiredAt        time.Time
	SkippedOverlap int
}

// MarkFiringsInput names the schedule of the calling workflow.
type MarkFiringsInput struct {
	Schedule string
}

// MarkFirings reads the schedule's skip count and the calling workflow's
// own firing time when a scheduled run starts (RecordSkipped compares with
// them when it ends). It never fails the run: without an answer it
// returns OK false.
func (a *Activities) MarkFirings(ctx context.Context, in MarkFiringsInput) (FiringMark, error) {
	if a.Firings == nil {
		return FiringMark{}, nil
	}
	info := activity.GetInfo(ctx)
	now := a.now()
	log, err := a.Firings.Firings(ctx, info.WorkflowNamespace, in.Schedule, now, now)
	if err != nil {
		a.logger().Warn("schedule's firings not read: skipped firings will not be recorded", "schedule", in.Schedule, "error", err)
		return FiringMark{}, nil
	}
	// Now, unless the schedule's last actions name this workflow.
	mark := FiringMark{OK: true, FiredAt: now, SkippedOverlap: log.SkippedOverlap}
	for _, f := range log.Taken {
		if f.WorkflowID == info.WorkflowExecution.ID {
			mark.FiredAt = f.At
		}
	}
	return mark, nil
}

// RecordSkippedInput is a scheduled run that is ending: its schedule, its
// id (a run's or a comparison's) and mark, and what a skipped firing's
// record holds (Name; Compare for a compare schedule, whose skipped firings
// are comparisons with the sides' refs).
type RecordSkippedInput struct {
	Schedule string
	RunID    string
	Name     string
	Mark     FiringMark
	// Compare is the schedule's comparison record (ids unset), or nil.
	Compare *store.Comparison
}

// RecordSkipped records each firing the schedule skipped while the run
// in.RunID was going: a run (or, for a compare schedule, a comparison) with
// status skipped, the schedule's name, the firing's time and a reason
// naming the run, so that `longhaul history` lists it. It returns how many.
//
// Subtleness ahead. Temporal counts skipped firings but keeps no record of
// them; what it does keep is the count, the spec (ListScheduleMatchingTimes
// gives the times it matches) and the last actions taken. So: the skips
// during this run are the count now minus the count at its start
// (MarkFirings); the times the spec matched after the run's own firing,
// less the actions taken, are the skipped firings' times; any skip beyond
// those was a manual trigger, whose time Temporal does not keep, recorded
// at the run's end. This asks Temporal only what it answers on every
// server (the embedded one included) and needs no state of its own; a
// firing due in the moment between this activity and the workflow's end is
// skipped unrecorded. Ids derive from the firing (or the run and trigger
// number), so a retry rewrites the same records.
func (a *Activities) RecordSkipped(ctx context.Context, in RecordSkippedInput) (int, error) {
	if a.Firings == nil || !in.Mark.OK {
		return 0, nil
	}
	now := a.now()
	log, err := a.Firings.Firings(ctx, activity.GetInfo(ctx).WorkflowNamespace, in.Schedule, in.Mark.FiredAt, now)
	if err != nil {
		return 0, fmt.Errorf("skipped firings of schedule %s: %w", in.Schedule, err)
	}
	n := log.SkippedOverlap - in.Mark.SkippedOverlap
	if n <= 0 {
		return 0, nil
	}
	var times []time.Time
	for _, t := range log.Matching {
		if !t.After(in.Mark.FiredAt) || slices.ContainsFunc(log.Taken, func(f TakenFiring) bool { return f.At.Equal(t) }) {
			continue
		}
		times = append(times, t)
	}
	what := "run"
	if in.Compare != nil {
		what = "comparison"
	}
	for k := range n {
		var id, reason string
		at := now
		if k < len(times) {
			at = times[k]
			id = uuid.NewSHA1(uuid.NameSpaceURL, []byte("longhaul:skipped:"+in.Schedule+":"+at.UTC().Format(time.RFC3339Nano))).String()
			reason = fmt.Sprintf("%s %s was still going", what, in.RunID)
		} else {
			id = uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("longhaul:skipped:%s:trigger:%d", in.RunID, k-len(times)))).String()
			reason = fmt.Sprintf("a trigger while %s %s was still going (Temporal keeps no time of a skipped trigger: recorded at the %s's end)", what, in.RunID, what)
		}
		if err := a.putSkipped(ctx, in, id, reason, at); err != nil {
			return k, fmt.Errorf("record skipped firing of schedule %s: %w", in.Schedule, err)
		}
		a.logger().Info("skipped firing", "schedule", in.Schedule, "at", at, "record", id, "reason", reason)
	}
	return n, nil
}

func (a *Activities) putSkipped(ctx context.Context, in RecordSkippedInput, id, reason string, at time.Time) error {
	if in.Compare != nil {
		c := store.Comparison{
			ID: id, Name: in.Compare.Name, Schedule: in.Schedule, Status: store.Skipped, Reason: reason,
			A:     store.Build{Ref: in.Compare.A.Ref, Image: in.Compare.A.Image, Env: in.Compare.A.Env},
			B:     store.Build{Ref: in.Compare.B.Ref, Image: in.Compare.B.Image, Env: in.Compare.B.Env},
			Order: in.Compare.Order, Pairs: in.Compare.Pairs, Provider: in.Compare.Provider,
			RoundDuration: in.Compare.RoundDuration, Window: in.Compare.Window, Warmup: in.Compare.Warmup,
			CreatedAt: at, EndedAt: at,
		}
		return a.Store.PutComparison(ctx, c)
	}
	return a.Store.PutRun(ctx, store.Run{
		ID: id, Name: in.Name, Kind: "soak", Status: store.Skipped, Reason: reason,
		Schedule: in.Schedule, CreatedAt: at, EndedAt: at,
	})
}
