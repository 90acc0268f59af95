package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// restartYAML is a scenario whose target longhaul starts and restarts
// after a crash, at most max times.
func restartYAML(max int) string {
	return fmt.Sprintf(`name: hello
environment:
  provider: local
  target:
    command: [./app]
    restart: {policy: on-failure, max: %d}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /items}}
`, max)
}

// killTwice kills the target (the environment r1-1, whichever incarnation
// runs in it) when the first drive reaches window 3 and the second window 8.
func (f *fixture) killTwice() {
	f.drv.Before = func(_ context.Context, call, index int) error {
		if (call == 1 && index == 3) || (call == 2 && index == 8) {
			f.prov.Kill("r1-1")
		}
		return nil
	}
}

// loseWorkerAt kills the target and the drive's worker with it when the
// first drive reaches window index: the retried drive resumes and finds
// the environment's target stopped.
func (f *fixture) loseWorkerAt(index int) {
	f.drv.Before = func(_ context.Context, call, i int) error {
		if call == 1 && i == index {
			f.prov.Kill("r1-1")
			return errors.New("worker died")
		}
		return nil
	}
}

// completes runs the soak and checks that it completed with want, its
// slots stored as keys ("incarnation/index", "gap" added) once each.
func (f *fixture) completes(t *testing.T, want SoakResult, keys []string) {
	t.Helper()
	res, err := f.run()
	if err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if res != want {
		t.Errorf("result = %+v, want %+v", res, want)
	}
	got, _ := f.slots(t)
	if strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Errorf("windows = %s\nwant      %s", strings.Join(got, ","), strings.Join(keys, ","))
	}
	f.checkNoRewrites(t)
}

// TestSoakTargetRestarts: with target.restart {policy: on-failure, max: 3}
// a target that crashes twice is started again twice in the same
// environment; the run completes with three incarnations, the slot lost
// each time is a gap of the new incarnation, every slot is stored once and
// the environment is provisioned once and torn down once.
func TestSoakTargetRestarts(t *testing.T) {
	f := newFixture(t, 12)
	f.in.Scenario = restartYAML(3)
	f.killTwice()
	// Killed before window 3: windows 3 and 4 fail their checks, the drive
	// stops after 4, slot 5 is lost to the restart; likewise 8, 9 and 10.
	wantKeys := append(keysFor(1, 0, 4), "2/5gap")
	wantKeys = append(wantKeys, keysFor(2, 6, 9)...)
	wantKeys = append(wantKeys, "3/10gap", "3/11")
	f.completes(t, SoakResult{RunID: "r1", Status: store.Completed, Windows: 10, Gaps: 2, Incarnations: 3}, wantKeys)
	if got, want := strings.Join(f.prov.Provisioned, ","), "r1-1"; got != want {
		t.Errorf("provisioned = %s, want %s (a restart keeps the environment)", got, want)
	}
	if got, want := strings.Join(f.prov.Restarted, ","), "r1-1,r1-1"; got != want {
		t.Errorf("restarted = %s, want %s", got, want)
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
	var incs []int
	for _, c := range f.drv.Calls {
		incs = append(incs, c.Incarnation)
	}
	if got, want := fmt.Sprint(incs), "[1 2 3]"; got != want {
		t.Errorf("drives of incarnations %s, want %s", got, want)
	}
	run, _ := f.store.GetRun(context.Background(), "r1")
	if run.Incarnations != 3 {
		t.Errorf("run incarnations = %d, want 3", run.Incarnations)
	}
	f.checkNoRewrites(t)
}

// TestSoakTargetRestartsUsedUp: with max: 1 the second crash ends the run,
// failed, saying the restarts are used up; the environment is torn down.
func TestSoakTargetRestartsUsedUp(t *testing.T) {
	f := newFixture(t, 12)
	f.in.Scenario = restartYAML(1)
	f.killTwice()
	res, err := f.run()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeSoakFailed {
		t.Fatalf("workflow error = %v, want a %s application error", err, ErrTypeSoakFailed)
	}
	if err := app.Details(&res); err != nil {
		t.Fatalf("failure details: %v", err)
	}
	if res.Status != store.Failed || !strings.Contains(res.Reason, "target stopped answering") ||
		!strings.Contains(res.Reason, "restarted 1 time already, as many as target.restart.max allows") {
		t.Errorf("result = %+v, want failed: the target stopped answering, restarts used up", res)
	}
	if res.Incarnations != 2 || res.Windows != 9 || res.Gaps != 1 {
		t.Errorf("result = %+v, want 2 incarnations, 9 windows, 1 gap", res)
	}
	if got, want := strings.Join(f.prov.Restarted, ","), "r1-1"; got != want {
		t.Errorf("restarted = %s, want %s", got, want)
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
	f.checkNoRewrites(t)
}

// TestSoakTargetRestartFails: a target that does not come back ends the
// run, failed, with both reasons.
func TestSoakTargetRestartFails(t *testing.T) {
	f := newFixture(t, 12)
	f.in.Scenario = restartYAML(3)
	f.prov.RestartFail = errors.New("not answering 2xx on /health after 20s")
	f.killTwice()
	_, err := f.run()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeSoakFailed {
		t.Fatalf("workflow error = %v, want a %s application error", err, ErrTypeSoakFailed)
	}
	if !strings.Contains(app.Message(), "target stopped answering") || !strings.Contains(app.Message(), "restarting it failed: restart the target of run r1 (incarnation 2): not answering 2xx") {
		t.Errorf("reason = %q", app.Message())
	}
	if got, want := strings.Join(f.prov.TornDown, ","), "r1-1"; got != want {
		t.Errorf("torn down = %s, want %s", got, want)
	}
}

// flakyRunStore fails the first PutRun after arm is set, as a store that
// blips (or a worker that dies) in the middle of a restart.
type flakyRunStore struct {
	*activitiestest.Store
	arm, failed bool
}

func (s *flakyRunStore) PutRun(ctx context.Context, r store.Run) error {
	if s.arm && !s.failed {
		s.failed = true
		return errors.New("store unreachable")
	}
	return s.Store.PutRun(ctx, r)
}

// TestSoakTargetRestartRetried: a restart attempt that fails after it
// restarted the target is retried; the retry restarts it again and the run
// goes on as after one restart (the slot lost written once).
func TestSoakTargetRestartRetried(t *testing.T) {
	f := newFixture(t, 8)
	f.in.Scenario = restartYAML(2)
	flaky := &flakyRunStore{Store: f.store}
	f.acts.Store = flaky
	f.drv.Before = func(_ context.Context, call, index int) error {
		if call == 1 && index == 3 {
			f.prov.Kill("r1-1")
			flaky.arm = true
		}
		return nil
	}
	f.completes(t, SoakResult{RunID: "r1", Status: store.Completed, Windows: 7, Gaps: 1, Incarnations: 2},
		append(keysFor(1, 0, 4), "2/5gap", "2/6", "2/7"))
	if got, want := strings.Join(f.prov.Restarted, ","), "r1-1,r1-1"; got != want || !flaky.failed {
		t.Errorf("restarted = %s (store failed: %v), want %s", got, flaky.failed, want)
	}
}

// TestSoakTargetDiesWithoutRestart: without target.restart a crash ends
// the run as before: nothing is restarted.
func TestSoakTargetDiesWithoutRestart(t *testing.T) {
	f := newFixture(t, 12)
	f.in.Scenario = strings.Replace(restartYAML(1), "    restart: {policy: on-failure, max: 1}\n", "", 1)
	f.killTwice()
	_, err := f.run()
	if err == nil || !strings.Contains(err.Error(), "target stopped answering") || strings.Contains(err.Error(), "restart") {
		t.Fatalf("workflow error = %v, want the target's failure alone", err)
	}
	if len(f.prov.Restarted) != 0 {
		t.Errorf("restarted %v without target.restart", f.prov.Restarted)
	}
}

var _ activities.Store = (*flakyRunStore)(nil)

// TestSoakTargetRestartsAfterLostWorker: the worker dies during window 3
// and the target with it; the resumed drive finds the target stopped (its
// environment still there): with target.restart it is restarted in the
// same environment instead of a new one being provisioned. Slot 3 is the
// resumed drive's gap, slot 4 the restart's.
func TestSoakTargetRestartsAfterLostWorker(t *testing.T) {
	f := newFixture(t, 10)
	f.in.Scenario = restartYAML(2)
	f.prov.Exits = true
	f.loseWorkerAt(3)
	f.completes(t, SoakResult{RunID: "r1", Status: store.Completed, Windows: 8, Gaps: 2, Incarnations: 2},
		append(append(keysFor(1, 0, 2), "1/3gap", "2/4gap"), keysFor(2, 5, 9)...))
	if got, want := strings.Join(f.prov.Provisioned, ","), "r1-1"; got != want {
		t.Errorf("provisioned = %s, want %s (restarted, not replaced)", got, want)
	}
	if got, want := strings.Join(f.prov.Restarted, ","), "r1-1"; got != want {
		t.Errorf("restarted = %s, want %s", got, want)
	}
}

// TestSoakLostTargetWithoutRestart: without target.restart a target found
// stopped on resume is replaced with a new environment, as before.
func TestSoakLostTargetWithoutRestart(t *testing.T) {
	f := newFixture(t, 10)
	f.prov.Exits = true
	f.loseWorkerAt(3)
	if _, err := f.run(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if got, want := strings.Join(f.prov.Provisioned, ","), "r1-1,r1-2"; got != want || len(f.prov.Restarted) != 0 {
		t.Errorf("provisioned = %s (restarted %v), want %s and no restart", got, f.prov.Restarted, want)
	}
}

// TestSoakCrashFoundOnResumeIsAFinding: a target found stopped only when
// the drive resumed (its worker died meanwhile) is a crash finding like
// one seen as it happened: the resumed drive records how it stopped in the
// lost window's gap, and the analysis reads it from there.
func TestSoakCrashFoundOnResumeIsAFinding(t *testing.T) {
	f := newFixture(t, 10)
	f.acts.Analyzer = activities.Findings
	f.prov.Exits = true
	f.loseWorkerAt(3)
	if _, err := f.run(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	ctx := context.Background()
	ws, _ := f.store.Windows(ctx, "r1", store.WindowQuery{Incarnation: 1})
	var gap *window.Window
	for i := range ws {
		if ws[i].Index == 3 {
			gap = &ws[i]
		}
	}
	if gap == nil || !gap.Gap || len(gap.Events) != 1 || gap.Events[0].Kind != window.EventTargetExit {
		t.Fatalf("window 3 of incarnation 1 = %+v, want the gap with the target's exit", gap)
	}
	fs, _ := f.store.Findings(ctx, "r1")
	var crash *analysis.Finding
	for i := range fs {
		if fs[i].Kind == analysis.KindCrash {
			crash = &fs[i]
		}
	}

	if crash == nil || crash.Incarnation != 1 || crash.Evidence.FirstWindow != 3 || !strings.Contains(crash.Summary, "found stopped when the drive resumed") {
		t.Errorf("crash finding = %+v, want incarnation 1's, window 3, found on resume", crash)
	}
}

// TestSoakCrashInFirstWindowIsAFinding: the target crashes in window 3 and
// is restarted (incarnation 2, from slot 5 on); the worker then dies in
// incarnation 2's very first window, 6, and the target with it. The
// resumed drive finds it stopped and records it in 6's gap, so incarnation
// 2 has nothing but gaps; its crash is a finding all the same, and the
// target is restarted again (incarnation 3).
func TestSoakCrashInFirstWindowIsAFinding(t *testing.T) {
	f := newFixture(t, 10)
	f.in.Scenario = restartYAML(3)
	f.acts.Analyzer = activities.Findings
	f.prov.Exits = true
	f.drv.Before = func(_ context.Context, call, index int) error {
		switch {
		case call == 1 && index == 3:
			f.prov.Kill("r1-1")
		case call == 2 && index == 6:
			f.prov.Kill("r1-1")
			return errors.New("worker died")
		}
		return nil
	}
	f.completes(t, SoakResult{RunID: "r1", Status: store.Completed, Windows: 7, Gaps: 3, Incarnations: 3, Findings: 6},
		append(append(keysFor(1, 0, 4), "2/5gap", "2/6gap", "3/7gap"), keysFor(3, 8, 9)...))
	fs, _ := f.store.Findings(context.Background(), "r1")
	var crashes []analysis.Finding
	for _, x := range fs {
		if x.Kind == analysis.KindCrash {
			crashes = append(crashes, x)
		}
	}
	if len(crashes) != 2 || crashes[1].Incarnation != 2 || crashes[1].Evidence.FirstWindow != 6 ||
		!strings.Contains(crashes[1].Summary, "found stopped when the drive resumed") {
		t.Errorf("crash findings = %+v, want incarnation 1's and incarnation 2's in window 6, found on resume", crashes)
	}
}

// dbStops is a provisioner whose environment's database can be stopped
// (Check then fails with a database_exit event) and started again.
type dbStops struct {
	*activitiestest.Provisioner
	down       bool
	restarts   int
	tornDownDB []int // the database PID of each environment torn down
}

type dbExit struct{}

func (dbExit) Error() string { return "the database (postgres) process 7 exited (signal 9: killed)" }
func (dbExit) FaultEvent() window.Event {
	return window.Event{Kind: window.EventDatabaseExit, PID: 7, Signal: 9, Detail: "the database (postgres) process 7 exited (signal 9: killed)"}
}

func (p *dbStops) Check(ctx context.Context, env activities.Environment) error {
	if p.down {
		return dbExit{}
	}
	return p.Provisioner.Check(ctx, env)
}

func (p *dbStops) RestartDatabase(_ context.Context, env activities.Environment) (activities.Environment, error) {
	p.down = false
	p.restarts++
	env.DatabasePID = 4242 + p.restarts // its new process
	return env, nil
}

func (p *dbStops) Teardown(ctx context.Context, env activities.Environment) error {
	p.tornDownDB = append(p.tornDownDB, env.DatabasePID)
	return p.Provisioner.Teardown(ctx, env)
}

// TestSoakDatabaseFoundStoppedOnResume: the worker dies during window 3
// and the database stops while no worker watches. The resumed drive starts
// the database again in place and drives on: one incarnation, provisioned
// once, slot 3 a gap recording the stop (restarted), every other slot
// measured, and a database_stop finding for it.
func TestSoakDatabaseFoundStoppedOnResume(t *testing.T) {
	f := newFixture(t, 10)
	f.acts.Analyzer = activities.Findings
	prov := &dbStops{Provisioner: f.prov}
	f.acts.Provisioner = prov
	f.drv.Before = func(_ context.Context, call, index int) error {
		if call == 1 && index == 3 {
			prov.down = true
			return errors.New("worker died")
		}
		return nil
	}
	f.completes(t, SoakResult{RunID: "r1", Status: store.Completed, Windows: 9, Gaps: 1, Incarnations: 1, Findings: 3},
		append(append(keysFor(1, 0, 2), "1/3gap"), keysFor(1, 4, 9)...))
	if got, want := strings.Join(f.prov.Provisioned, ","), "r1-1"; got != want || prov.restarts != 1 {
		t.Errorf("provisioned = %s, database restarts %d; want %s and 1 (restarted in place, not replaced)", got, prov.restarts, want)
	}
	ws, _ := f.store.Windows(context.Background(), "r1", store.WindowQuery{Incarnation: 1, FromIndex: 3})
	if len(ws) == 0 || ws[0].Index != 3 || len(ws[0].Events) != 1 || !ws[0].Events[0].Restarted {
		t.Fatalf("window 3 = %+v, want the gap with the database's stop, restarted", ws[0])
	}
	fs, _ := f.store.Findings(context.Background(), "r1")
	var stop *analysis.Finding
	for i := range fs {
		if fs[i].Kind == analysis.KindDatabaseStop {
			stop = &fs[i]
		}
	}
	if stop == nil || stop.Evidence.FirstWindow != 3 || !strings.Contains(stop.Summary, "found stopped when the drive resumed") || !strings.Contains(stop.Summary, "longhaul restarted it in place") {
		t.Errorf("database_stop finding = %+v, want window 3's, found on resume, restarted", stop)
	}
	// The drive hands the environment as the restart left it back to the
	// workflow (DriveResult.Env): the teardown sees the new process.
	if len(prov.tornDownDB) != 1 || prov.tornDownDB[0] != 4243 {
		t.Errorf("torn down with database pids %v, want [4243] (the restarted database's)", prov.tornDownDB)
	}
}

var _ activities.DatabaseRestarter = (*dbStops)(nil)
