package activities_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
)

// fakeRefs resolves every ref of repo "/repo" to commit, and counts calls.
type fakeRefs struct {
	commit string
	calls  int
}

func (f *fakeRefs) ResolveRef(_ context.Context, repo, ref string) (string, error) {
	f.calls++
	if repo != "/repo" {
		return "", errors.New("no such repository")
	}
	return f.commit + "-" + ref, nil
}

func (f *fakeRefs) HeadCommit(context.Context, string) string { return "head" }

// builtAtMain is a scenario whose docker target is built from repo at ref
// main.
func builtAtMain(repo string) string {
	return `name: api
environment:
  provider: docker
  target:
    build: {repo: ` + repo + `, ref: main}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /}}
`
}

func TestBeginScheduledResolvesTheRef(t *testing.T) {
	yaml := builtAtMain("/repo")
	st := &activitiestest.Store{}
	refs := &fakeRefs{commit: "c1"}
	a := &activities.Activities{Store: st, Refs: refs}
	env := newEnv(a)
	in := activities.BeginScheduledInput{RunID: "r1", Schedule: "nightly", Name: "api", Scenario: yaml, FailOn: "warning"}
	got := execute[activities.BeginScheduledResult](t, env, a.BeginScheduled, in)
	if want := (activities.BeginScheduledResult{Ref: "main", Commit: "c1-main", Pin: true}); got != want {
		t.Errorf("BeginScheduled = %+v, want %+v", got, want)
	}
	r, err := st.GetRun(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Schedule != "nightly" || r.Commit != "c1-main" || r.FailOn != "warning" || r.Kind != "soak" {
		t.Errorf("run = %+v", r)
	}
	// A retry finds the record: the ref is not resolved again (it may have
	// moved), the commit recorded is returned.
	refs.commit = "c2"
	if got = execute[activities.BeginScheduledResult](t, env, a.BeginScheduled, in); got.Commit != "c1-main" || refs.calls != 1 {
		t.Errorf("retry: %+v, %d resolutions; want c1-main and 1", got, refs.calls)
	}
}

func TestBeginScheduledBadRefIsNotRetried(t *testing.T) {
	yaml := builtAtMain("/elsewhere")
	a := &activities.Activities{Store: &activitiestest.Store{}, Refs: &fakeRefs{}}
	env := newEnv(a)
	_, err := env.ExecuteActivity(a.BeginScheduled,
		activities.BeginScheduledInput{RunID: "r1", Schedule: "nightly", Name: "api", Scenario: yaml})
	if err == nil {
		t.Fatal("BeginScheduled with an unresolvable ref succeeded")
	}
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeBadScenario || !app.NonRetryable() {
		t.Errorf("error %v, want a non-retryable %s", err, activities.ErrTypeBadScenario)
	}
}

// fakeFirings is a schedule whose spec matches every 10 minutes from t0.
type fakeFirings struct {
	skipped int
	taken   []activities.TakenFiring
}

var fireT0 = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func (f *fakeFirings) Firings(_ context.Context, ns, name string, from, to time.Time) (activities.FiringLog, error) {
	if name != "nightly" || ns == "" {
		return activities.FiringLog{}, errors.New("no such schedule")
	}
	log := activities.FiringLog{SkippedOverlap: f.skipped, Taken: f.taken}
	for t := fireT0; !t.After(to); t = t.Add(10 * time.Minute) {
		if t.After(from) && from.Before(to) {
			log.Matching = append(log.Matching, t)
		}
	}
	return log, nil
}

// The firings skipped during a run are recorded: the spec's times after
// the run's own firing, less the firings taken, as many as Temporal's count
// grew by, and the rest as triggers; a retry rewrites the same records.
func TestRecordSkipped(t *testing.T) {
	st := &activitiestest.Store{}
	f := &fakeFirings{skipped: 7, taken: []activities.TakenFiring{{At: fireT0, WorkflowID: "default-test-workflow-id"}}}
	end := fireT0.Add(35 * time.Minute)
	a := &activities.Activities{Store: st, Firings: f, Now: func() time.Time { return end }}
	env := newEnv(a)
	mark := execute[activities.FiringMark](t, env, a.MarkFirings, activities.MarkFiringsInput{Schedule: "nightly"})
	if !mark.OK || !mark.FiredAt.Equal(fireT0) || mark.SkippedOverlap != 7 {
		t.Fatalf("mark = %+v, want fired at %v with 7 skipped", mark, fireT0)
	}
	// While the run went: 02:10 and 02:30 skipped, 02:20 taken (another
	// policy's buffer), one trigger skipped.
	f.skipped, f.taken = 10, append(f.taken, activities.TakenFiring{At: fireT0.Add(20 * time.Minute), WorkflowID: "w2"})
	in := activities.RecordSkippedInput{Schedule: "nightly", RunID: "run-1", Name: "api", Mark: mark}
	for range 2 { // the second as a retry would
		if n := execute[int](t, env, a.RecordSkipped, in); n != 3 {
			t.Errorf("RecordSkipped = %d; want 3", n)
		}
	}
	rs, err := st.ListRuns(context.Background(), store.ListOptions{Schedule: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(rs), rs)
	}
	// Newest first: the trigger (at the run's end), 02:30, 02:10.
	for i, want := range []time.Time{end, fireT0.Add(30 * time.Minute), fireT0.Add(10 * time.Minute)} {
		r := rs[i]
		if r.Status != store.Skipped || !r.CreatedAt.Equal(want) || r.Schedule != "nightly" || r.Name != "api" || !strings.Contains(r.Reason, "run run-1 was still going") {
			t.Errorf("record %d = %+v, want skipped at %v naming run-1", i, r, want)
		}
	}
	if !strings.Contains(rs[0].Reason, "trigger") {
		t.Errorf("the trigger's record: reason %q", rs[0].Reason)
	}

	// A compare schedule's skipped firings are comparisons.
	in.Compare = &store.Comparison{Name: "api", Order: "abba", Pairs: 3, A: store.Build{Ref: "v1"}, B: store.Build{Ref: "main"}}
	in.RunID = "cmp-1"
	f.skipped = 11
	if _, err := env.ExecuteActivity(a.RecordSkipped, in); err != nil {
		t.Fatal(err)
	}
	cs, err := st.ListComparisons(context.Background(), store.ListOptions{Schedule: "nightly"})
	if err != nil || len(cs) != 4 {
		t.Fatalf("comparisons = %+v, %v; want 4 skipped", cs, err)
	}
	if c := cs[len(cs)-1]; c.Status != store.Skipped || c.B.Ref != "main" || c.Pairs != 3 || !strings.Contains(c.Reason, "comparison cmp-1 was still going") {
		t.Errorf("skipped comparison = %+v", c)
	}

	// Nothing skipped, or no mark: nothing recorded.
	in.Compare, in.RunID, f.skipped = nil, "run-2", mark.SkippedOverlap
	for _, in := range []activities.RecordSkippedInput{in, {Schedule: "nightly", RunID: "run-3"}} {
		v, err := env.ExecuteActivity(a.RecordSkipped, in)
		var n int
		if err != nil || v.Get(&n) != nil || n != 0 {
			t.Errorf("RecordSkipped(%+v) = %d, %v; want 0", in, n, err)
		}
	}
}
