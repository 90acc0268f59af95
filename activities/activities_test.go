package activities_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// execute runs activity fn with args in env and decodes its result as a
// T; an error from either ends the test.
func execute[T any](t *testing.T, env *testsuite.TestActivityEnvironment, fn any, args ...any) T {
	t.Helper()
	v, err := env.ExecuteActivity(fn, args...)
	if err != nil {
		t.Fatal(err)
	}
	var got T
	if err := v.Get(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

func newEnv(a *activities.Activities) *testsuite.TestActivityEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(nil)
	env := s.NewTestActivityEnvironment()
	if a.Logger == nil {
		a.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	activities.Register(env, a)
	return env
}

func TestHostQueueName(t *testing.T) {
	tests := []struct{ host, want string }{
		{"build-01", "longhaul-host-build-01"},
		{"a.example.com", "longhaul-host-a.example.com"},
		{"we ird/host", "longhaul-host-we-ird-host"},
		{"", "longhaul-host-localhost"},
	}
	for _, tt := range tests {
		if got := activities.HostQueueName(tt.host); got != tt.want {
			t.Errorf("HostQueueName(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

func TestHostQueue(t *testing.T) {
	a := &activities.Activities{HostTaskQueue: "longhaul-host-x"}
	env := newEnv(a)
	got := execute[string](t, env, a.HostQueue)
	if got != "longhaul-host-x" {
		t.Errorf("HostQueue = %q, want longhaul-host-x", got)
	}
}

func TestBegin(t *testing.T) {
	st := &activitiestest.Store{}
	a := &activities.Activities{Store: st}
	env := newEnv(a)
	in := activities.BeginInput{RunID: "r1", Name: "hello", Scenario: activitiestest.Hello, WorkflowID: "wf"}
	for i := 0; i < 2; i++ { // idempotent
		if _, err := env.ExecuteActivity(a.Begin, in); err != nil {
			t.Fatalf("Begin #%d: %v", i+1, err)
		}
	}
	r, err := st.GetRun(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.Pending || r.Kind != "soak" || r.Scenario != activitiestest.Hello || r.WorkflowID != "wf" {
		t.Errorf("run = %+v", r)
	}

	_, err = env.ExecuteActivity(a.Begin, activities.BeginInput{RunID: "r2"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeBadScenario || !app.NonRetryable() {
		t.Errorf("Begin without record or scenario: %v, want a non-retryable %s", err, activities.ErrTypeBadScenario)
	}
}

func TestProvisionRecordsEnvironment(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	prov := &activitiestest.Provisioner{}
	a := &activities.Activities{Store: st, Provisioner: prov}
	env := newEnv(a)
	got := execute[activities.Environment](t, env, a.Provision, activities.ProvisionInput{RunID: "r1", Incarnation: 1})
	if got.ID != "r1-1" || got.TargetURL != "http://127.0.0.1:8080" {
		t.Errorf("environment = %+v", got)
	}
	r, _ := st.GetRun(context.Background(), "r1")
	if r.TargetURL != "http://127.0.0.1:8080" || r.Incarnations != 1 || len(r.Environment) == 0 {
		t.Errorf("run after provision = %+v", r)
	}
}

func TestProvisionFailureIsNotRetried(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	a := &activities.Activities{Store: st, Provisioner: &activitiestest.Provisioner{Fail: errors.New("no docker engine")}}
	env := newEnv(a)
	_, err := env.ExecuteActivity(a.Provision, activities.ProvisionInput{RunID: "r1", Incarnation: 1})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeProvision || !app.NonRetryable() {
		t.Fatalf("error = %v, want a non-retryable %s", err, activities.ErrTypeProvision)
	}
	if !strings.Contains(app.Error(), "no docker engine") {
		t.Errorf("error %q does not carry the cause", app.Error())
	}
}

func TestBadScenarioIsNotRetried(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "broken", Scenario: "name: broken\nops: []\n"})
	a := &activities.Activities{Store: st, Provisioner: &activitiestest.Provisioner{}}
	env := newEnv(a)
	_, err := env.ExecuteActivity(a.Provision, activities.ProvisionInput{RunID: "r1", Incarnation: 1})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeBadScenario {
		t.Fatalf("error = %v, want %s", err, activities.ErrTypeBadScenario)
	}
}

func TestAnalyzeStoresFindings(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: strings.Replace(activitiestest.Hello, "ops:", "load: {warmup: 5s}\nops:", 1)})
	_ = st.PutWindow(context.Background(), window.Window{RunID: "r1", Incarnation: 1, Index: 0, Requests: 10, OK: 10})
	var seen int
	var warm time.Duration
	a := &activities.Activities{Store: st, Analyzer: activities.AnalyzerFunc(func(ws []window.Window, opts analysis.Options) []analysis.Finding {
		seen, warm = len(ws), opts.Warmup
		return []analysis.Finding{{Kind: analysis.KindLeak, Severity: analysis.Critical}, {Kind: analysis.KindMissingEvidence, Severity: analysis.Info}}
	})}
	env := newEnv(a)
	got := execute[activities.AnalyzeResult](t, env, a.Analyze, activities.AnalyzeInput{RunID: "r1"})
	if want := (activities.AnalyzeResult{Findings: 2, Critical: 1, Thresholds: 0}); got != want {
		t.Errorf("result = %+v, want %+v", got, want)
	}
	if seen != 1 || warm != 5*time.Second {
		t.Errorf("analyser saw %d windows with warm-up %s, want 1 with 5s", seen, warm)
	}
	fs, _ := st.Findings(context.Background(), "r1")
	if len(fs) != 2 {
		t.Errorf("%d findings stored, want 2", len(fs))
	}
}

// TestDriveCommitsWindows: every window the driver closes is in the
// store with the run id and incarnation, and the drive reports where it ended.
func TestDriveCommitsWindows(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	drv := &activitiestest.Driver{}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv}
	env := newEnv(a)
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, FirstIndex: 2, Total: 6,
		Overrides: activities.Overrides{Duration: 6e9, Window: 1e9}, Env: envDesc}
	got := execute[activities.DriveResult](t, env, a.Drive, in)
	if want := (activities.DriveResult{NextIndex: 6, Windows: 4}); got != want {
		t.Errorf("result = %+v, want %+v", got, want)
	}
	ws, _ := st.Windows(context.Background(), "r1", store.AllWindows)
	var idx []int
	for _, w := range ws {
		if w.RunID != "r1" || w.Incarnation != 1 {
			t.Errorf("window %d stored as run %q incarnation %d", w.Index, w.RunID, w.Incarnation)
		}
		idx = append(idx, w.Index)
	}
	if got, want := idx, []int{2, 3, 4, 5}; !equalInts(got, want) {
		t.Errorf("stored windows %v, want %v", got, want)
	}
	if c := drv.Calls[0]; c.FirstIndex != 2 || c.Scenario.Load.Duration.D() != 6e9 || c.TargetURL != envDesc.TargetURL {
		t.Errorf("driver called with first %d, duration %s, target %s", c.FirstIndex, c.Scenario.Load.Duration.D(), c.TargetURL)
	}
}

const gated = `name: gated
environment:
  target: {url: "http://127.0.0.1:8080"}
ops:
  - name: get
    request: {path: /items}
thresholds:
  - {metric: p50_ms, max: 10, scope: window, windows: 2, abort: true}
  - {metric: error_rate, max: 0.01}
`

// slowFrom gives windows from index on a p50 of 20 ms (the others 1 ms).
func slowFrom(index int) func(call, i int, w *window.Window) {
	return func(_, i int, w *window.Window) {
		w.LatencyMs.P50 = 1
		if i >= index {
			w.LatencyMs.P50 = 20
		}
	}
}

// TestDriveStopsOnAbortThreshold: windows 3 and 4 breach a threshold that
// needs two in a row and aborts; the drive commits window 4, stops the load
// and says why. Windows after it are never driven.
func TestDriveStopsOnAbortThreshold(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "gated", Scenario: gated})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	drv := &activitiestest.Driver{Shape: slowFrom(3)}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv}
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, Total: 10,
		Overrides: activities.Overrides{Duration: 10e9, Window: 1e9}, Env: envDesc}
	got := execute[activities.DriveResult](t, newEnv(a), a.Drive, in)
	want := activities.DriveResult{NextIndex: 5, Windows: 5,
		StoppedBy: "stopped early: threshold p50_ms max 10 (2 windows in a row) failed with 20 in window 4"}
	if got != want {
		t.Errorf("result = %+v\nwant %+v", got, want)
	}
	if ws, _ := st.Windows(context.Background(), "r1", store.AllWindows); len(ws) != 5 {
		t.Errorf("%d windows stored, want 5 (0..4)", len(ws))
	}

	// Analyze judges both thresholds and stores them with the run.
	ar := execute[activities.AnalyzeResult](t, newEnv(a), a.Analyze, activities.AnalyzeInput{RunID: "r1"})
	if ar.Thresholds != 2 || ar.ThresholdsFailed != 1 {
		t.Errorf("analyze result %+v, want 2 thresholds, 1 failed", ar)
	}
	rs, _ := st.Thresholds(context.Background(), "r1")
	if len(rs) != 2 || rs[0].OK || rs[0].Window == nil || *rs[0].Window != 4 || !rs[1].OK {
		t.Errorf("stored thresholds %+v", rs)
	}
}

// TestDriveAbortCountsAcrossAttempts: a drive resumed after window 3 (which
// breached) stops at window 5, the second breach in a row: the windows
// committed before count. A breach already complete in the store stops the
// drive before it sends anything.
func TestDriveAbortCountsAcrossAttempts(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "gated", Scenario: gated})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	for i := range 4 {
		w := window.Window{RunID: "r1", Incarnation: 1, Index: i, Requests: 100, OK: 100, LatencyMs: window.Latency{P50: 1}}
		if i == 3 {
			w.LatencyMs.P50 = 30
		}
		_ = st.PutWindow(context.Background(), w)
	}
	drv := &activitiestest.Driver{Shape: slowFrom(5)}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv}
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, FirstIndex: 4, Total: 10,
		Overrides: activities.Overrides{Duration: 10e9, Window: 1e9}, Env: envDesc}
	got := execute[activities.DriveResult](t, newEnv(a), a.Drive, in)
	if want := "stopped early: threshold p50_ms max 10 (2 windows in a row) failed with 20 in window 6"; got.StoppedBy != want || got.NextIndex != 7 {
		t.Errorf("result = %+v, want stopped at window 6 (4 ok, 5 and 6 slow): %q", got, want)
	}

	in.FirstIndex = 7 // window 7 would be next, but 5 and 6 already failed it
	calls := drv.CallCount()
	got = execute[activities.DriveResult](t, newEnv(a), a.Drive, in)
	if got.StoppedBy == "" || got.NextIndex != 7 || drv.CallCount() != calls {
		t.Errorf("result = %+v after %d driver calls (want %d): want stopped before driving", got, drv.CallCount(), calls)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDriveRecordsProbesThatCannotStart: probes that fail to start are in
// every window's probe failures, so the report and the run page say why the
// readings are missing.
func TestDriveRecordsProbesThatCannotStart(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: &activitiestest.Driver{},
		Probes: func(context.Context, activities.Environment, scenarios.Probes) (activities.Prober, error) {
			return nil, errors.New("probes.process: the target is not a process longhaul runs")
		}}
	env := newEnv(a)
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, Total: 2, Overrides: activities.Overrides{Duration: 2e9, Window: 1e9}, Env: envDesc}
	if _, err := env.ExecuteActivity(a.Drive, in); err != nil {
		t.Fatal(err)
	}
	ws, _ := st.Windows(context.Background(), "r1", store.AllWindows)
	if len(ws) != 2 {
		t.Fatalf("%d windows, want 2", len(ws))
	}
	for _, w := range ws {
		if len(w.ProbeFailures) != 1 || !strings.Contains(w.ProbeFailures[0].Error, "not a process longhaul runs") {
			t.Errorf("window %d probe failures %+v, want the start failure", w.Index, w.ProbeFailures)
		}
	}
}
