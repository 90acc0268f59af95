package workflows

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
)

// pinRecorder is a provisioner that records the git ref each environment
// is built from.
type pinRecorder struct {
	activitiestest.Provisioner
	mu   sync.Mutex
	refs []string
}

func (p *pinRecorder) Provision(ctx context.Context, req activities.ProvisionRequest) (activities.Environment, error) {
	p.mu.Lock()
	if b := req.Spec.Target.Build; b != nil {
		p.refs = append(p.refs, b.Ref)
	}
	p.mu.Unlock()
	return p.Provisioner.Provision(ctx, req)
}

type headRefs struct{ commit string }

func (h headRefs) ResolveRef(context.Context, string, string) (string, error) { return h.commit, nil }
func (h headRefs) HeadCommit(context.Context, string) string                  { return "" }

const builtYAML = `name: api
load: {vus: 1, duration: 3s, window: 1s}
environment:
  provider: docker
  target:
    build: {repo: /src/api, ref: main}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /}}
`

func scheduledEnv(t *testing.T, st *activitiestest.Store, prov activities.Provisioner, refs activities.Refs) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := suite.NewTestWorkflowEnvironment()
	RegisterWorkflows(env)
	activities.Register(env, &activities.Activities{
		Store: st, Provisioner: prov, Driver: &activitiestest.Driver{}, Refs: refs, HostTaskQueue: "longhaul-host-test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return env
}

// A scheduled run resolves the ref when it starts, records the commit and
// builds exactly that commit.
func TestScheduledSoakPinsTheCommit(t *testing.T) {
	st := &activitiestest.Store{}
	prov := &pinRecorder{}
	env := scheduledEnv(t, st, prov, headRefs{commit: "0123456789abcdef0123456789abcdef01234567"})
	env.ExecuteWorkflow(ScheduledWorkflowName, ScheduledInput{Schedule: "nightly", Name: "api", Scenario: builtYAML, Duration: 3 * time.Second, Window: time.Second})
	var res ScheduledResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	r, err := st.GetRun(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	const commit = "0123456789abcdef0123456789abcdef01234567"
	if r.Schedule != "nightly" || r.Commit != commit || r.Status != store.Completed || res.Commit != commit || res.Soak.Windows != 3 {
		t.Errorf("run %+v, result %+v; want completed, schedule nightly, commit %s, 3 windows", r, res, commit)
	}
	if len(prov.refs) != 1 || prov.refs[0] != commit {
		t.Errorf("built refs %v, want [%s]", prov.refs, commit)
	}
}

// A receiver that rejects the notification (404) is not retried; the
// failure is recorded and the run's result stands.
func TestScheduledSoakRecordsARejectedNotification(t *testing.T) {
	var posts int
	var mu sync.Mutex
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts++
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer hook.Close()
	st := &activitiestest.Store{}
	prov := &activitiestest.Provisioner{Fail: context.DeadlineExceeded}
	env := scheduledEnv(t, st, prov, nil)
	env.ExecuteWorkflow(ScheduledWorkflowName, ScheduledInput{Schedule: "nightly", Name: "hello", Scenario: helloYAML,
		Duration: 2 * time.Second, Window: time.Second, Notify: hook.URL})
	var res ScheduledResult
	if err := env.GetWorkflowResult(&res); err == nil {
		t.Fatal("a soak whose provision failed succeeded")
	}
	runs, _ := st.ListRuns(context.Background(), store.ListOptions{Schedule: "nightly"})
	if len(runs) != 1 || runs[0].Status != store.Failed {
		t.Fatalf("runs = %+v, want one failed", runs)
	}
	ns, _ := st.Notifications(context.Background(), runs[0].ID)
	if len(ns) != 1 || ns[0].OK || ns[0].Attempts != 1 || ns[0].Error == "" || len(ns[0].Events) != 1 || ns[0].Events[0] != "failed" {
		t.Errorf("notifications = %+v, want one rejected after 1 attempt for event failed", ns)
	}
	if posts != 1 {
		t.Errorf("%d POSTs, want 1 (a 404 is not retried)", posts)
	}
}
