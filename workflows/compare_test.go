package workflows

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

func TestPlanRounds(t *testing.T) {
	sides := func(rs []PlannedRound) string {
		var b strings.Builder
		for _, r := range rs {
			b.WriteString(string(r.Side))
		}
		return b.String()
	}
	if got := sides(PlanRounds(3, OrderABBA, 1)); got != "ABBAAB" {
		t.Errorf("abba: %s, want ABBAAB", got)
	}
	if got := sides(PlanRounds(3, "", 1)); got != "ABBAAB" {
		t.Errorf("default order: %s, want ABBAAB", got)
	}
	if got := sides(PlanRounds(2, OrderAB, 1)); got != "ABAB" {
		t.Errorf("ab: %s, want ABAB", got)
	}
	r1, r2 := PlanRounds(20, OrderRandom, 7), PlanRounds(20, OrderRandom, 7)
	if !reflect.DeepEqual(r1, r2) {
		t.Error("random order is not a function of the seed")
	}
	if s := sides(r1); !strings.Contains(s, "AB") || !strings.Contains(s, "BA") {
		t.Errorf("random order of 20 pairs never varied: %s", s)
	}
	for i := 0; i < len(r1); i += 2 {
		if r1[i].Pair != r1[i+1].Pair || r1[i].Seed != r1[i+1].Seed || r1[i].Side == r1[i+1].Side || r1[i].Seed == 0 {
			t.Errorf("rounds %d and %d are not one pair with one seed: %+v %+v", i, i+1, r1[i], r1[i+1])
		}
	}
	if PlanRounds(2, OrderABBA, 1)[0].Seed == PlanRounds(2, OrderABBA, 1)[2].Seed {
		t.Error("two pairs share a seed")
	}
}

// compareFixture is a comparison under the test environment with fake
// dependencies: side B's target burns cpuB times A's CPU per request.
type compareFixture struct {
	env   *testsuite.TestWorkflowEnvironment
	store *activitiestest.Store
	prov  *activitiestest.Provisioner
	drv   *activitiestest.Driver
	in    CompareInput
	// cpuB is B's CPU per request over A's; foreign is a round index's
	// foreign load (the first attempt of each run).
	cpuB    float64
	foreign map[string]float64
	acts    *activities.Activities
}

func newCompareFixture(t *testing.T) *compareFixture {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	f := &compareFixture{
		env: suite.NewTestWorkflowEnvironment(), store: &activitiestest.Store{}, prov: &activitiestest.Provisioner{},
		drv: &activitiestest.Driver{}, cpuB: 1, foreign: map[string]float64{},
	}
	f.drv.Decorate = f.decorate
	acts := &activities.Activities{
		Store: f.store, Provisioner: f.prov, Driver: f.drv, Recorder: f.drv, HostTaskQueue: "longhaul-host-test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	f.acts = acts
	RegisterWorkflows(f.env)
	activities.Register(f.env, acts)
	f.env.SetTestTimeout(60 * time.Second)
	// This machine is shared: under a load of 50 a workflow task can take
	// longer than the default 1 s deadlock detection without any deadlock.
	f.env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	err := f.store.PutComparison(context.Background(), store.Comparison{
		ID: "c1", Name: "hello", Status: store.Pending, Scenario: activitiestest.Hello,
		A: store.Build{}, B: store.Build{Env: map[string]string{"DEMO_CPU_BURN_US": "10"}},
		Order: OrderABBA, Pairs: 3, RoundDuration: 4 * time.Second, Window: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.in = CompareInput{ComparisonID: "c1", Name: "hello", Pairs: 3, Seed: 42, RoundDuration: 4 * time.Second,
		Window: time.Second, Equivalence: 20}
	return f
}

// decorate gives each window a latency histogram and CPU per request with
// a little noise; side B's CPU is cpuB times A's.
func (f *compareFixture) decorate(req activities.DriveRequest, w *window.Window) {
	_, r, err := f.store.RoundOfRun(context.Background(), req.RunID)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(uint64(r.Index), uint64(w.Index)))
	h := window.NewHistogram()
	for range 100 {
		window.Record(h, 900+rng.Int64N(200))
	}
	w.Histogram, _ = window.EncodeHistogram(h)
	w.LatencyMs = window.LatencyOf(h)
	cpu := 50 * (1 + 0.01*rng.NormFloat64())
	if r.Side == store.SideB {
		cpu *= f.cpuB
	}
	secs := cpu * float64(w.Requests) / 1e6
	w.Probes.CPUSeconds, w.Probes.CPUMicrosPerRequest = &secs, &cpu
	if fl, ok := f.foreign[req.RunID]; ok {
		w.Probes.HostForeignCPU = &fl
	}
}

func (f *compareFixture) run() (CompareResult, error) {
	f.env.ExecuteWorkflow(CompareWorkflowName, f.in)
	if !f.env.IsWorkflowCompleted() {
		return CompareResult{}, errors.New("workflow did not complete")
	}
	var res CompareResult
	err := f.env.GetWorkflowResult(&res)
	return res, err
}

func (f *compareFixture) comparison(t *testing.T) store.Comparison {
	t.Helper()
	c, err := f.store.GetComparison(context.Background(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func verdict(c store.Comparison, metric string) analysis.Verdict {
	for _, v := range c.Verdicts {
		if v.Metric == metric {
			return v
		}
	}
	return analysis.Verdict{}
}

func TestCompareWorse(t *testing.T) {
	f := newCompareFixture(t)
	f.cpuB = 1.15
	res, err := f.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Completed || res.Rounds != 6 || res.Equivalence != equivalence.Identical || res.Verdicts.Pairs != 3 {
		t.Errorf("result %+v", res)
	}
	c := f.comparison(t)
	if c.Status != store.Completed || c.Equivalence.Status != equivalence.Identical || c.Equivalence.Requests != 20 {
		t.Errorf("comparison %s, equivalence %+v", c.Status, c.Equivalence)
	}
	var order strings.Builder
	for i, r := range c.Rounds {
		order.WriteString(string(r.Side))
		if r.Index != i || r.Pair != i/2 || r.Status != store.Completed || r.RunID != activities.RoundRunID("c1", i) {
			t.Errorf("round %d: %+v", i, r)
		}
		if i%2 == 1 && r.Seed != c.Rounds[i-1].Seed {
			t.Errorf("pair %d: seeds %d and %d differ", r.Pair, c.Rounds[i-1].Seed, r.Seed)
		}
		run, err := f.store.GetRun(context.Background(), r.RunID)
		if err != nil || run.Status != store.Completed {
			t.Errorf("round %d's run: %+v, %v", i, run, err)
		}
	}
	if order.String() != "ABBAAB" {
		t.Errorf("order %s, want ABBAAB", order.String())
	}
	// Every drive got its pair's seed; every environment (6 rounds + 2 for
	// equivalence) was torn down.
	for i, call := range f.drv.Calls {
		if call.Seed != uint64(c.Rounds[i].Seed) {
			t.Errorf("drive %d seed %d, want %d", i, call.Seed, c.Rounds[i].Seed)
		}
	}
	if len(f.prov.Provisioned) != 8 || len(f.prov.TornDown) != 8 {
		t.Errorf("provisioned %v, torn down %v", f.prov.Provisioned, f.prov.TornDown)
	}
	if v := verdict(c, analysis.MetricCPUMicrosPerReq); v.Outcome != analysis.Worse || v.Pairs != 3 {
		t.Errorf("cpu verdict: %s", v.Summary)
	}
	if v := verdict(c, analysis.MetricP50Ms); v.Outcome == analysis.Better || v.Outcome == analysis.Worse {
		t.Errorf("p50 verdict on equal latencies: %s", v.Summary)
	}
}

func TestCompareEquivalenceDifferent(t *testing.T) {
	f := newCompareFixture(t)
	f.drv.Records = func(req activities.RecordRequest) []equivalence.Exchange {
		body := `{"items":[]}`
		if len(f.prov.Provisioned) == 2 { // side B's environment
			body = `{"items":[],"cursor":null}`
		}
		return []equivalence.Exchange{{Op: "list", Method: "GET", Path: "/items", Status: 200, Body: []byte(body)}}
	}
	_, err := f.run()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeCompareFailed || !strings.Contains(app.Message(), "$.cursor: A (absent), B null") {
		t.Fatalf("error %v, want the difference named", err)
	}
	c := f.comparison(t)
	if c.Status != store.Failed || len(c.Rounds) != 0 || c.Equivalence.FirstDifference == nil || c.Equivalence.FirstDifference.Op != "list" {
		t.Errorf("comparison %s with %d rounds, equivalence %+v", c.Status, len(c.Rounds), c.Equivalence)
	}
	if len(f.prov.TornDown) != 2 {
		t.Errorf("torn down %v, want both equivalence environments", f.prov.TornDown)
	}

	// --allow-diff goes on to the rounds.
	g := newCompareFixture(t)
	g.drv.Records = func(req activities.RecordRequest) []equivalence.Exchange {
		return []equivalence.Exchange{{Op: "list", Status: 200, Body: []byte(`{"side":"` + string(rune('A'+len(g.prov.Provisioned)-1)) + `"}`)}}
	}
	g.in.AllowDiff, g.in.Pairs = true, 1
	if res, err := g.run(); err != nil || res.Rounds != 2 || res.Equivalence != equivalence.Different {
		t.Errorf("--allow-diff: %+v, %v", res, err)
	}
}

func TestCompareRerunDisturbed(t *testing.T) {
	f := newCompareFixture(t)
	f.in.Pairs, f.in.RerunDisturbed, f.in.Equivalence = 2, true, 0
	f.foreign[activities.RoundRunID("c1", 1)] = 0.6 // pair 1's B
	res, err := f.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Rounds != 6 || res.Reruns != 1 || res.Disturbed != 1 || res.Equivalence != equivalence.Skipped {
		t.Errorf("result %+v", res)
	}
	c := f.comparison(t)
	var got []string
	for _, r := range c.Rounds {
		s := string(r.Side)
		if r.Superseded {
			s += "~"
		}
		if r.Disturbed {
			s += "!"
		}
		got = append(got, s)
	}
	if want := []string{"A~", "B~!", "B", "A", "A", "B"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rounds %v, want %v", got, want)
	}
	if c.Rounds[0].Seed != c.Rounds[4].Seed || c.Rounds[4].Pair != 0 {
		t.Errorf("the rerun pair has seed %d (pair %d), want %d", c.Rounds[4].Seed, c.Rounds[4].Pair, c.Rounds[0].Seed)
	}
	if v := verdict(c, analysis.MetricCPUMicrosPerReq); v.Pairs != 2 {
		t.Errorf("verdict over %d pairs, want 2 (the superseded rounds left out): %s", v.Pairs, v.Summary)
	}
	// Without --rerun-disturbed the pair is left out of the verdicts.
	g := newCompareFixture(t)
	g.in.Pairs, g.in.Equivalence = 3, 0
	g.foreign[activities.RoundRunID("c1", 1)] = 0.6
	if _, err := g.run(); err != nil {
		t.Fatal(err)
	}
	if v := verdict(g.comparison(t), analysis.MetricCPUMicrosPerReq); v.Outcome != analysis.Inconclusive || !strings.Contains(v.Reason, "disturbed") {
		t.Errorf("verdict with a disturbed pair: %s", v.Summary)
	}
}

func TestCompareCancelled(t *testing.T) {
	f := newCompareFixture(t)
	f.in.Equivalence = 0
	f.drv.Before = func(ctx context.Context, call, i int) error {
		if call == 2 && i == 1 {
			f.env.CancelWorkflow()
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	_, err := f.run()
	if !temporal.IsCanceledError(err) {
		t.Fatalf("error %v, want cancelled", err)
	}
	c := f.comparison(t)
	if c.Status != store.Cancelled || len(c.Rounds) != 2 || c.Rounds[0].Status != store.Completed || c.Rounds[1].Status != store.Cancelled {
		t.Errorf("comparison %s, rounds %+v", c.Status, c.Rounds)
	}
	if len(f.prov.Provisioned) != 2 || len(f.prov.TornDown) != 2 {
		t.Errorf("provisioned %v, torn down %v", f.prov.Provisioned, f.prov.TornDown)
	}
}

func TestCompareRoundFails(t *testing.T) {
	f := newCompareFixture(t)
	f.in.Equivalence = 0
	f.drv.Before = func(ctx context.Context, call, i int) error {
		if call == 3 && i == 1 {
			f.prov.Kill(activities.RoundRunID("c1", 2) + "-1")
		}
		return nil
	}
	_, err := f.run()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !strings.Contains(app.Message(), "round 3 (pair 2, B) failed") {
		t.Fatalf("error %v, want round 3 named", err)
	}
	if c := f.comparison(t); c.Status != store.Failed || len(c.Rounds) != 3 || c.Rounds[2].Status != store.Failed {
		t.Errorf("comparison %s, rounds %+v", c.Status, c.Rounds)
	}
}

// TestCompareHostActivitiesHeartbeat: the comparison's host activities
// (building a side, the equivalence check) run with a heartbeat timeout, so
// a task lost between the server and a worker (or with a killed worker) is
// retried within ProvisionHeartbeatTimeout, not after its 30-minute
// start-to-close timeout.
func TestCompareHostActivitiesHeartbeat(t *testing.T) {
	f := newCompareFixture(t)
	got := map[string]time.Duration{}
	f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if _, seen := got[info.ActivityType.Name]; !seen {
			got[info.ActivityType.Name] = info.HeartbeatTimeout
		}
	})
	if _, err := f.run(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"PrepareSide", "CheckEquivalence"} {
		if hb, ok := got[name]; !ok || hb != ProvisionHeartbeatTimeout {
			t.Errorf("%s: heartbeat timeout %v (ran: %v), want %v", name, hb, ok, ProvisionHeartbeatTimeout)
		}
	}
}

// TestComparePoolsEarlierNoise: the verdicts record their own noise and the
// host, and pool the noise of earlier completed comparisons of the same
// scenario on the same host — not of other hosts, later ones, other
// round lengths or an edited scenario.
func TestComparePoolsEarlierNoise(t *testing.T) {
	f := newCompareFixture(t)
	f.cpuB = 1.15
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	c1 := f.comparison(t)
	c1.CreatedAt = now
	earlier := func(id, host string, created time.Time, round time.Duration) store.Comparison {
		return store.Comparison{ID: id, Name: "hello", Status: store.Completed, Scenario: activitiestest.Hello, Host: host, CreatedAt: created,
			RoundDuration: round, Window: time.Second,
			Verdicts: []analysis.Verdict{{Metric: analysis.MetricCPUMicrosPerReq, Pairs: 3, SD: 0.01}}}
	}
	for _, c := range []store.Comparison{
		c1,
		earlier("e1", "longhaul-host-test", now.Add(-2*time.Hour), 4*time.Second),
		earlier("e2", "longhaul-host-test", now.Add(-time.Hour), 4*time.Second),
		earlier("other-host", "longhaul-host-elsewhere", now.Add(-time.Hour), 4*time.Second),
		earlier("later", "longhaul-host-test", now.Add(time.Hour), 4*time.Second),
		earlier("other-round", "longhaul-host-test", now.Add(-time.Hour), 8*time.Second),
	} {
		if c.ID == "other-round" {
			edited := earlier("edited", "longhaul-host-test", now.Add(-time.Hour), 4*time.Second)
			edited.Scenario += "# more VUs\n"
			if err := f.store.PutComparison(ctx, edited); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.store.PutComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.run(); err != nil {
		t.Fatal(err)
	}
	c := f.comparison(t)
	if c.Host != "longhaul-host-test" {
		t.Errorf("host %q, want the host queue the rounds ran on", c.Host)
	}
	v := verdict(c, analysis.MetricCPUMicrosPerReq)
	if v.PooledFrom != 2 || v.DF != 6 || v.Method != analysis.MethodTLogRatioPooled || !(v.SD > 0) || v.Outcome != analysis.Worse {
		t.Errorf("cpu verdict pooled from %d at %d df by %s, sd %v: %s", v.PooledFrom, v.DF, v.Method, v.SD, v.Summary)
	}
	if p := verdict(c, analysis.MetricP50Ms); p.PooledFrom != 0 || p.DF != 2 || p.Family < 2 {
		t.Errorf("p50 (no history) pooled from %d at %d df, family %d", p.PooledFrom, p.DF, p.Family)
	}
}

// TestCompareSequential: with AutoPairs the comparison runs 3 pairs, then
// one more at a time, looks after each, and stops when every primary
// metric is decided; the looks, the pairs taken and why it stopped are
// recorded.
func TestCompareSequential(t *testing.T) {
	for _, tt := range []struct {
		name        string
		cpuB        float64
		maxPairs    int
		maxDuration time.Duration
		wantCPU     analysis.Outcome
		wantStopped string
	}{
		{"+30 % CPU", 1.30, 0, 0, analysis.Worse, StoppedDecided},
		{"A vs A", 1, 4, 0, "", StoppedMaxPairs},
		{"time budget", 1, 0, 20 * time.Second, "", StoppedMaxDuration},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newCompareFixture(t)
			f.cpuB = tt.cpuB
			f.in.AutoPairs, f.in.MaxPairs, f.in.MaxDuration, f.in.Equivalence = true, tt.maxPairs, tt.maxDuration, 0
			if tt.maxDuration > 0 {
				// Each reading of the activities' clock is 5 s later, so a
				// round records a few tens of seconds.
				var mu sync.Mutex
				now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
				f.acts.Now = func() time.Time {
					mu.Lock()
					defer mu.Unlock()
					now = now.Add(5 * time.Second)
					return now
				}
			}
			if tt.cpuB == 1 {
				// CPU per request ±5 % at random: never inside the 3 % floor
				// in a few pairs, so only a limit stops the comparison.
				f.drv.Decorate = func(req activities.DriveRequest, w *window.Window) {
					f.decorate(req, w)
					_, r, _ := f.store.RoundOfRun(context.Background(), req.RunID)
					cpu := *w.Probes.CPUMicrosPerRequest * (1 + 0.05*float64(r.Index%3-1))
					secs := cpu * float64(w.Requests) / 1e6
					w.Probes.CPUSeconds, w.Probes.CPUMicrosPerRequest = &secs, &cpu
				}
			}
			res, err := f.run()
			if err != nil {
				t.Fatal(err)
			}
			c := f.comparison(t)
			v := verdict(c, analysis.MetricCPUMicrosPerReq)
			t.Logf("%s: %d pairs, stopped %s; %s", tt.name, res.Pairs, res.Stopped, v.Summary)
			if res.Stopped != tt.wantStopped || c.Stopped != tt.wantStopped || c.Pairs != res.Pairs || res.Rounds != 2*res.Pairs {
				t.Errorf("result %+v; comparison stopped %q after %d pairs", res, c.Stopped, c.Pairs)
			}
			if tt.wantCPU != "" && (v.Outcome != tt.wantCPU || v.DecidedAt < 3 || v.DecidedAt > res.Pairs) {
				t.Errorf("cpu: %+v", v)
			}
			if tt.wantCPU == "" && (v.Outcome == analysis.Better || v.Outcome == analysis.Worse) {
				t.Errorf("cpu of an A-vs-A comparison: %s", v.Summary)
			}
			if len(c.Looks) != res.Pairs-2 || c.Looks[0].Pairs != 3 || len(c.Looks[0].Verdicts) != len(analysis.DefaultPrimary) {
				t.Errorf("looks %+v, want one per pair from the third", c.Looks)
			}
			if c.History == nil || *c.History != 0 || c.MaxPairs != max(tt.maxPairs, 0) && tt.maxPairs > 0 {
				t.Errorf("history %v, max pairs %d", c.History, c.MaxPairs)
			}
			switch tt.wantStopped {
			case StoppedMaxPairs:
				if res.Pairs != tt.maxPairs {
					t.Errorf("%d pairs, want the limit %d", res.Pairs, tt.maxPairs)
				}
			case StoppedMaxDuration:
				if res.Pairs < 3 || res.Pairs >= analysis.DefaultMaxPairs {
					t.Errorf("%d pairs within %s", res.Pairs, tt.maxDuration)
				}
			}
		})
	}
}
