package workflows

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/notify"
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
	env.ExecuteWorkflow(ScheduledWorkflowName, ScheduledInput{Schedule: "nightly", Name: "hello", Scenario: activitiestest.Hello,
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

// runScheduledCompare fires a compare schedule "nightly-ab" once, side B
// burning cpuB times A's CPU per request, notifying hook; it returns the
// comparison the firing recorded, the fixture and the workflow's error.
func runScheduledCompare(t *testing.T, cpuB float64, hook string) (store.Comparison, *compareFixture, error) {
	t.Helper()
	f := newCompareFixture(t)
	f.cpuB = cpuB
	cin := f.in
	cin.ComparisonID = ""
	in := ScheduledInput{Schedule: "nightly-ab", Name: "hello", File: "hello.yaml", Notify: hook, UIURL: "http://ui", Compare: &ScheduledCompare{
		Record: store.Comparison{Name: "hello", Status: store.Pending, Scenario: activitiestest.Hello, Order: OrderABBA, Pairs: 3,
			B: store.Build{Env: map[string]string{"DEMO_CPU_BURN_US": "10"}}, RoundDuration: 4 * time.Second, Window: time.Second},
		Scenario: activitiestest.Hello, Input: cin,
	}}
	f.env.ExecuteWorkflow(ScheduledWorkflowName, in)
	if !f.env.IsWorkflowCompleted() {
		t.Fatal("the scheduled comparison did not complete")
	}
	err := f.env.GetWorkflowResult(nil)
	cs, lerr := f.store.ListComparisons(context.Background(), store.ListOptions{Schedule: "nightly-ab"})
	if lerr != nil || len(cs) != 1 {
		t.Fatalf("comparisons of the schedule: %+v, %v; want 1", cs, lerr)
	}
	return cs[0], f, err
}

// A scheduled comparison whose B is worse on CPU per request notifies,
// and the delivery is recorded with the comparison.
func TestScheduledCompareNotifiesAWorseVerdict(t *testing.T) {
	hook := activitiestest.NewReceiver(t)
	c, f, err := runScheduledCompare(t, 1.15, hook.URL)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.Completed || verdict(c, analysis.MetricCPUMicrosPerReq).Outcome != analysis.Worse {
		t.Fatalf("comparison %s, cpu verdict %+v; want completed and worse", c.Status, verdict(c, analysis.MetricCPUMicrosPerReq))
	}
	got := hook.Delivered()
	if len(got) != 1 || hook.Posts() != 1 {
		t.Fatalf("received %d notifications in %d POSTs, want 1", len(got), hook.Posts())
	}
	p := got[0]
	if p.Kind != notify.KindCompare || p.Schedule != "nightly-ab" || p.ComparisonID != c.ID || p.Status != store.Completed ||
		!slices.Contains(p.Events, notify.EventWorse) || p.URL != "http://ui/comparisons/"+c.ID {
		t.Errorf("payload %+v", p)
	}
	if !slices.ContainsFunc(p.Verdicts, func(v notify.Verdict) bool { return v.Metric == analysis.MetricCPUMicrosPerReq && v.Ratio > 1.1 }) {
		t.Errorf("verdicts %+v, want cpu_us_per_request worse by about 15 %%", p.Verdicts)
	}
	ns, _ := f.store.ComparisonNotifications(context.Background(), c.ID)
	if len(ns) != 1 || !ns[0].OK || ns[0].Attempts != 1 || ns[0].URL != hook.URL || !slices.Equal(ns[0].Events, p.Events) {
		t.Errorf("notifications = %+v, want one delivered on attempt 1", ns)
	}
}

// A clean scheduled comparison (no worse verdict, no failure, no change
// point) sends nothing and records nothing.
func TestScheduledCompareCleanDoesNotNotify(t *testing.T) {
	hook := activitiestest.NewReceiver(t)
	c, f, err := runScheduledCompare(t, 1, hook.URL)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.Completed || len(c.Verdicts) == 0 {
		t.Fatalf("comparison %s (%s) with %d verdicts, want completed with verdicts", c.Status, c.Reason, len(c.Verdicts))
	}
	for _, v := range c.Verdicts {
		if v.Outcome == analysis.Worse {
			t.Fatalf("a clean comparison has a worse verdict: %s", v.Summary)
		}
	}
	if n := hook.Posts(); n != 0 {
		t.Errorf("%d POSTs for a clean comparison, want none", n)
	}
	if ns, _ := f.store.ComparisonNotifications(context.Background(), c.ID); len(ns) != 0 {
		t.Errorf("notifications = %+v, want none", ns)
	}
}

// A receiver that keeps failing (503) is retried with backoff; the failure
// is recorded with the comparison, and the comparison still completes.
func TestScheduledCompareRecordsAFailingReceiver(t *testing.T) {
	hook := activitiestest.NewReceiver(t, http.StatusServiceUnavailable)
	c, f, err := runScheduledCompare(t, 1.15, hook.URL)
	if err != nil {
		t.Fatalf("a failing receiver failed the scheduled comparison: %v", err)
	}
	if c.Status != store.Completed {
		t.Errorf("comparison %s (%s), want completed", c.Status, c.Reason)
	}
	if n := hook.Posts(); n != notifyAttempts {
		t.Errorf("%d POSTs, want %d (retried)", n, notifyAttempts)
	}
	ns, _ := f.store.ComparisonNotifications(context.Background(), c.ID)
	if len(ns) != 1 || ns[0].OK || ns[0].Attempts != notifyAttempts || ns[0].Error == "" || !slices.Contains(ns[0].Events, notify.EventWorse) {
		t.Errorf("notifications = %+v, want one failed after %d attempts", ns, notifyAttempts)
	}
}
