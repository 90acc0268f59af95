package activities_test

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
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

func TestBeginScheduledResolvesTheRef(t *testing.T) {
	const yaml = `name: api
environment:
  provider: docker
  target:
    build: {repo: /repo, ref: main}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /}}
`
	st := &activitiestest.Store{}
	refs := &fakeRefs{commit: "c1"}
	a := &activities.Activities{Store: st, Refs: refs}
	env := newEnv(a)
	in := activities.BeginScheduledInput{RunID: "r1", Schedule: "nightly", Name: "api", Scenario: yaml, FailOn: "warning"}
	v, err := env.ExecuteActivity(a.BeginScheduled, in)
	if err != nil {
		t.Fatal(err)
	}
	var got activities.BeginScheduledResult
	if err := v.Get(&got); err != nil {
		t.Fatal(err)
	}
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
	v, err = env.ExecuteActivity(a.BeginScheduled, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(&got); err != nil || got.Commit != "c1-main" || refs.calls != 1 {
		t.Errorf("retry: %+v, %v, %d resolutions; want c1-main and 1", got, err, refs.calls)
	}
}

func TestBeginScheduledBadRefIsNotRetried(t *testing.T) {
	const yaml = `name: api
environment:
  provider: docker
  target:
    build: {repo: /elsewhere, ref: main}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /}}
`
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
