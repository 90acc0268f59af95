package workflows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// fixture is one soak under the test environment with fake dependencies.
type fixture struct {
	env   *testsuite.TestWorkflowEnvironment
	store *activitiestest.Store
	prov  *activitiestest.Provisioner
	drv   *activitiestest.Driver
	acts  *activities.Activities
	in    SoakInput
}

func newFixture(t *testing.T, windows int) *fixture {
	return newFixtureWith(t, windows, &activitiestest.Store{}, &activitiestest.Provisioner{})
}

// newFixtureWith shares a store and provisioner with another fixture (a
// continued-as-new run sees what the first one left).
func newFixtureWith(t *testing.T, windows int, st *activitiestest.Store, prov *activitiestest.Provisioner) *fixture {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	f := &fixture{
		env:   suite.NewTestWorkflowEnvironment(),
		store: st,
		prov:  prov,
		drv:   &activitiestest.Driver{},
	}
	f.in = SoakInput{RunID: "r1", Name: "hello", Scenario: activitiestest.Hello, Duration: time.Duration(windows) * time.Second, Window: time.Second}
	acts := &activities.Activities{
		Store: f.store, Provisioner: f.prov, Driver: f.drv, HostTaskQueue: "longhaul-host-test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	f.acts = acts
	RegisterWorkflows(f.env)
	activities.Register(f.env, acts)
	return f
}

func (f *fixture) run() (SoakResult, error) {
	f.env.ExecuteWorkflow(WorkflowName, f.in)
	if !f.env.IsWorkflowCompleted() {
		return SoakResult{}, errors.New("workflow did not complete")
	}
	var res SoakResult
	err := f.env.GetWorkflowResult(&res)
	return res, err
}

// cancelAt cancels the workflow when the drive reaches window index; the
// drive then waits for its cancellation, as a heartbeating activity does.
func (f *fixture) cancelAt(index int) {
	f.drv.Before = func(ctx context.Context, _, i int) error {
		if i == index {
			f.env.CancelWorkflow()
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
}

// killTargetAt kills incarnation 1's target when the drive reaches window
// index; the drive goes on and finds it dead.
func (f *fixture) killTargetAt(index int) {
	f.drv.Before = func(_ context.Context, _, i int) error {
		if i == index {
			f.prov.Kill("r1-1")
		}
		return nil
	}
}

// slots renders the stored windows as "incarnation/index" with a "gap"
// suffix, and the attempt (Dropped) that wrote each one.
func (f *fixture) slots(t *testing.T) (keys []string, attempts []int64) {
	t.Helper()
	ws, err := f.store.Windows(context.Background(), "r1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		k := fmt.Sprintf("%d/%d", w.Incarnation, w.Index)
		if w.Gap {
			k += "gap"
		}
		keys = append(keys, k)
		attempts = append(attempts, w.Dropped)
	}
	return keys, attempts
}

func (f *fixture) checkNoRewrites(t *testing.T) {
	t.Helper()
	for k, n := range f.store.Puts {
		if n != 1 {
			t.Errorf("window %s written %d times, want once", k, n)
		}
	}
}

func keysFor(inc int, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%d/%d", inc, i))
	}
	return out
}

func TestSoakHappyPath(t *testing.T) {
	f := newFixture(t, 5)
	res, err := f.run()
	if err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	want := SoakResult{RunID: "r1", Status: store.Completed, Windows: 5, Incarnations: 1}
	if res != want {
		t.Errorf("result = %+v, want %+v", res, want)
	}
	keys, _ := f.slots(t)
	if got, want := strings.Join(keys, ","), strings.Join(keysFor(1, 0, 4), ","); got != want {
		t.Errorf("windows = %s, want %s", got, want)
	}
	if got, want := strings.Join(f.store.Statuses, ","), "running,completed"; got != want {
		t.Errorf("statuses = %s, want %s", got, want)
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
	run, _ := f.store.GetRun(context.Background(), "r1")
	if run.Kind != "soak" || run.Incarnations != 1 || run.TargetURL != "http://127.0.0.1:8080" || run.WorkflowID == "" {
		t.Errorf("run record = %+v", run)
	}
	f.checkNoRewrites(t)
}

// TestSoakDriveRetryResumes: the first drive attempt dies while window 3 is
// in progress (after committing 0..2). The retry resumes from the heartbeat:
// slot 3 becomes a gap, 4..9 are driven by attempt 2, and 0..2 stay as
// attempt 1 wrote them.
func TestSoakDriveRetryResumes(t *testing.T) {
	tests := []struct {
		name string
		// crash returns the first attempt's failure at window 3.
		crash func(f *fixture) error
	}{
		{"after heartbeat", func(*fixture) error { return errors.New("worker died") }},
		{"between commit and heartbeat", func(f *fixture) error {
			// Window 3 reached the store, but its heartbeat never did.
			w := window.Window{RunID: "r1", Incarnation: 1, Index: 3, Requests: 100, OK: 100, Dropped: 1}
			if err := f.store.PutWindow(context.Background(), w); err != nil {
				return err
			}
			return errors.New("worker died")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 10)
			f.drv.Before = func(_ context.Context, call, index int) error {
				if call == 1 && index == 3 {
					return tt.crash(f)
				}
				return nil
			}
			res, err := f.run()
			if err != nil {
				t.Fatalf("workflow error: %v", err)
			}
			if res.Status != store.Completed || res.Gaps != 1 {
				t.Errorf("result = %+v, want completed with 1 gap", res)
			}
			keys, attempts := f.slots(t)
			gapAt := 3
			if strings.Contains(tt.name, "between") {
				gapAt = 4
			}
			want := append(keysFor(1, 0, gapAt-1), fmt.Sprintf("1/%dgap", gapAt))
			want = append(want, keysFor(1, gapAt+1, 9)...)
			if got := strings.Join(keys, ","); got != strings.Join(want, ",") {
				t.Errorf("windows = %s\nwant      %s", got, strings.Join(want, ","))
			}
			for i, a := range attempts {
				if i < gapAt && a != 1 {
					t.Errorf("window %d written by attempt %d, want unchanged from attempt 1", i, a)
				}
			}
			if got := f.drv.CallCount(); got != 2 {
				t.Errorf("drive calls = %d, want 2", got)
			}
			if got, want := f.drv.Calls[1].FirstIndex, gapAt+1; got != want {
				t.Errorf("resumed at window %d, want %d", got, want)
			}
			f.checkNoRewrites(t)
		})
	}
}

// TestSoakEnvironmentLost: the worker dies during window 3 and, while no
// worker watches, the environment goes away. The resumed drive finds it
// gone; the workflow provisions incarnation 2, which drives 4..9.
func TestSoakEnvironmentLost(t *testing.T) {
	f := newFixture(t, 10)
	f.loseWorkerAt(3)
	f.completes(t, SoakResult{RunID: "r1", Status: store.Completed, Windows: 9, Gaps: 1, Incarnations: 2},
		append(append(keysFor(1, 0, 2), "1/3gap"), keysFor(2, 4, 9)...))
	if got, want := strings.Join(f.prov.Provisioned, ","), "r1-1,r1-2"; got != want {
		t.Errorf("provisioned = %s, want %s", got, want)
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1,r1-2"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
	run, _ := f.store.GetRun(context.Background(), "r1")
	if run.Incarnations != 2 {
		t.Errorf("run incarnations = %d, want 2", run.Incarnations)
	}
}

// TestSoakTargetFails: the target dies after window 3; its windows are kept,
// two failed checks end the drive, the run fails with the reason and the
// environment is still torn down.
func TestSoakTargetFails(t *testing.T) {
	f := newFixture(t, 10)
	f.killTargetAt(4)
	res, err := f.run()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeSoakFailed {
		t.Fatalf("workflow error = %v, want a %s application error", err, ErrTypeSoakFailed)
	}
	if err := app.Details(&res); err != nil {
		t.Fatalf("failure details: %v", err)
	}
	if res.Status != store.Failed || !strings.Contains(res.Reason, "target stopped answering") {
		t.Errorf("result = %+v, want failed because the target stopped answering", res)
	}
	keys, _ := f.slots(t)
	// Window 4's check fails once, window 5's twice: the drive stops there.
	if got, want := strings.Join(keys, ","), strings.Join(keysFor(1, 0, 5), ","); got != want {
		t.Errorf("windows = %s, want %s", got, want)
	}
	last := f.store.Statuses[len(f.store.Statuses)-1]
	if !strings.HasPrefix(last, "failed: target stopped answering") {
		t.Errorf("last status = %q, want failed with the reason", last)
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
	if got := f.drv.CallCount(); got != 1 {
		t.Errorf("drive calls = %d, want 1 (a dead target is not retried)", got)
	}
}

// TestSoakCancelled: the soak is cancelled during window 3; teardown runs,
// the status is cancelled and windows 0..2 are kept.
func TestSoakCancelled(t *testing.T) {
	f := newFixture(t, 10)
	f.cancelAt(3)
	_, err := f.run()
	if !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error = %v, want canceled", err)
	}
	keys, _ := f.slots(t)
	if got, want := strings.Join(keys, ","), strings.Join(keysFor(1, 0, 2), ","); got != want {
		t.Errorf("windows = %s, want %s", got, want)
	}
	if got, want := strings.Join(f.store.Statuses, ","), "running,cancelled: cancelled by request"; got != want {
		t.Errorf("statuses = %s, want %s", got, want)
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
}

func TestSoakProvisionFails(t *testing.T) {
	f := newFixture(t, 3)
	f.prov.Fail = errors.New("build failed: exit status 2")
	_, err := f.run()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeSoakFailed {
		t.Fatalf("workflow error = %v, want %s", err, ErrTypeSoakFailed)
	}
	if !strings.Contains(app.Error(), "build failed") {
		t.Errorf("reason %q does not name the build failure", app.Error())
	}
	if f.drv.CallCount() != 0 {
		t.Errorf("drove %d times without an environment", f.drv.CallCount())
	}
	last := f.store.Statuses[len(f.store.Statuses)-1]
	if !strings.HasPrefix(last, "failed: provision run r1 incarnation 1: build failed") {
		t.Errorf("last status = %q", last)
	}
}

func TestSlots(t *testing.T) {
	tests := []struct {
		d, w time.Duration
		want int
	}{
		{10 * time.Second, time.Second, 10},
		{10500 * time.Millisecond, time.Second, 11},
		{time.Minute, 10 * time.Second, 6},
		{0, time.Second, 0},
		{time.Second, 0, 0},
	}
	for _, tt := range tests {
		if got := Slots(tt.d, tt.w); got != tt.want {
			t.Errorf("Slots(%s, %s) = %d, want %d", tt.d, tt.w, got, tt.want)
		}
	}
}

func TestDriveHeartbeatTimeout(t *testing.T) {
	tests := []struct{ window, want time.Duration }{
		{time.Second, 60 * time.Second},
		{30 * time.Second, 90 * time.Second},
	}
	for _, tt := range tests {
		if got := DriveHeartbeatTimeout(tt.window); got != tt.want {
			t.Errorf("DriveHeartbeatTimeout(%s) = %s, want %s", tt.window, got, tt.want)
		}
	}
}

// TestSoakContinueAsNew: when the server suggests it, the soak continues as
// new with its state (host queue, incarnation, environment, next window) and
// without tearing down; the next run picks up from there and finishes.
func TestSoakContinueAsNew(t *testing.T) {
	f := newFixture(t, 4)
	f.env.SetContinueAsNewSuggested(true)
	f.env.ExecuteWorkflow(WorkflowName, f.in)
	var cont *workflow.ContinueAsNewError
	if err := f.env.GetWorkflowError(); !errors.As(err, &cont) {
		t.Fatalf("workflow error = %v, want continue-as-new", err)
	}
	var next SoakInput
	if err := converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Resume == nil || next.Resume.HostQueue != "longhaul-host-test" || next.Resume.Incarnation != 1 ||
		next.Resume.Env == nil || next.Resume.Env.ID != "r1-1" || next.Scenario != "" {
		t.Fatalf("continued with %+v (resume %+v), want the state and no scenario", next, next.Resume)
	}
	if len(f.prov.TornDown) != 0 {
		t.Errorf("torn down %v before continuing as new", f.prov.TornDown)
	}

	// The next run, on fresh history, drives and finishes.
	g := newFixtureWith(t, 4, f.store, f.prov)
	g.in = next
	res, err := g.run()
	if err != nil {
		t.Fatalf("continued run: %v", err)
	}
	if res.Status != store.Completed || res.Windows != 4 || res.Incarnations != 1 {
		t.Errorf("result = %+v, want completed, 4 windows, 1 incarnation", res)
	}
	if got, want := strings.Join(f.prov.Provisioned, ","), "r1-1"; got != want {
		t.Errorf("provisioned = %s, want %s (the environment carries over)", got, want)
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
}

// TestSoakAnalysesEveryEnd: a soak is analysed whether it completes, fails
// (its target died: a leak ending in an OOM kill is found in that run) or is
// cancelled, once it had an environment; not when provisioning failed.
func TestSoakAnalysesEveryEnd(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture)
		want  int // Analyze calls
	}{
		{"completed", func(*fixture) {}, 1},
		{"target died", func(f *fixture) { f.killTargetAt(4) }, 1},
		{"cancelled", func(f *fixture) { f.cancelAt(3) }, 1},
		{"provision failed", func(f *fixture) { f.prov.Fail = errors.New("no docker engine") }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 10)
			tt.setup(f)
			var analyses int
			var order []string
			f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				order = append(order, info.ActivityType.Name)
				if info.ActivityType.Name == "Analyze" {
					analyses++
				}
			})
			_, _ = f.run()
			if analyses != tt.want {
				t.Errorf("Analyze ran %d times, want %d (activities: %v)", analyses, tt.want, order)
			}
			// Analysis comes after teardown and before the final status;
			// the measurement slot is released last.
			if tt.want > 0 {
				i := slices.Index(order, "Analyze")
				n := len(order)
				if i < 1 || order[i-1] != "Teardown" || order[n-2] != "SetStatus" || order[n-1] != "ReleaseSlot" {
					t.Errorf("activity order %v: want Teardown, Analyze, ..., SetStatus, ReleaseSlot", order)
				}
			}
		})
	}
}

// TestSoakStoppedByThreshold: a threshold with abort: true fails at window
// 4 of 10; the drive stops, the environment is torn down, the analysis runs
// and the run completes with the breach as its reason. The threshold's
// result is stored with the run.
func TestSoakStoppedByThreshold(t *testing.T) {
	f := newFixture(t, 10)
	f.in.Scenario = activitiestest.Hello + "thresholds:\n  - {metric: p50_ms, max: 10, scope: window, windows: 2, abort: true}\n"
	f.drv.Shape = func(_, i int, w *window.Window) {
		if i >= 3 {
			w.LatencyMs.P50 = 25
		}
	}
	var order []string
	f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		order = append(order, info.ActivityType.Name)
	})
	res, err := f.run()
	if err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	reason := "stopped early: threshold p50_ms max 10 (2 windows in a row) failed with 25 in window 4"
	want := SoakResult{RunID: "r1", Status: store.Completed, Reason: reason, Windows: 5, Incarnations: 1}
	if res != want {
		t.Errorf("result = %+v\nwant %+v", res, want)
	}
	if got, want := strings.Join(f.store.Statuses, ","), "running,completed: "+reason; got != want {
		t.Errorf("statuses = %s, want %s", got, want)
	}
	if n := f.drv.CallCount(); n != 1 {
		t.Errorf("%d drives, want 1: a stopped run is not driven again", n)
	}
	if got, want := strings.Join(order, ","), "Begin,ClaimSlot,Provision,SetStatus,Drive,Teardown,Analyze,SetStatus,ReleaseSlot"; got != want {
		t.Errorf("activities %s, want %s", got, want)
	}
	rs, _ := f.store.Thresholds(context.Background(), "r1")
	if len(rs) != 1 || rs[0].OK || *rs[0].Window != 4 {
		t.Errorf("stored thresholds %+v, want the one failed at window 4", rs)
	}
	f.checkNoRewrites(t)
}

// TestProvisionAndTeardownHeartbeat: from version "provision-heartbeat" on,
// Provision and Teardown run with ProvisionHeartbeatTimeout, so a worker
// killed while it provisions is noticed within it (the end-to-end kills are
// in cmd/longhaul/provision_kill_e2e_test.go).
func TestProvisionAndTeardownHeartbeat(t *testing.T) {
	f := newFixture(t, 3)
	got := map[string]time.Duration{}
	f.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		got[info.ActivityType.Name] = info.HeartbeatTimeout
	})
	if _, err := f.run(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	for _, name := range []string{"Provision", "Teardown"} {
		if got[name] != ProvisionHeartbeatTimeout {
			t.Errorf("%s heartbeat timeout %s, want %s", name, got[name], ProvisionHeartbeatTimeout)
		}
	}
}
