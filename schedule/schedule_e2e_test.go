package schedule_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/devserver/devservertest"
	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/notify"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/longhaul-dev/longhaul/workflows/workflowstest"
)

// rig is an embedded Temporal server, a worker that drives for real (a fake
// provisioner hands it the httptest target) and a SQLite store.
type rig struct {
	c      client.Client
	st     store.Store
	target *httptest.Server
}

func newRig(t *testing.T) *rig { return newRigWith(t, &activitiestest.Provisioner{}) }

func newRigWith(t *testing.T, prov *activitiestest.Provisioner) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	ctx := context.Background()
	dir := t.TempDir()
	_, c := devservertest.Start(ctx, t, devserver.Options{DataDir: filepath.Join(dir, "temporal")}, client.Options{})
	st, err := store.Open(ctx, filepath.Join(dir, "longhaul.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{}")) }))
	t.Cleanup(target.Close)
	w := workflows.NewWorker(c, &activities.Activities{
		Store: st, Provisioner: prov, Driver: activities.LoadDriver{}, Firings: schedule.New(c),
		HostTaskQueue: "longhaul-host-" + t.Name(),
	}, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &rig{c: c, st: st, target: target}
}

func (r *rig) action(d time.Duration) workflows.ScheduledInput {
	yaml := fmt.Sprintf(`name: tiny
load: {vus: 2, duration: %s, window: 1s}
environment:
  target: {url: %q}
ops:
  - {name: get, weight: 1, request: {method: GET, path: /items}}
`, d, r.target.URL)
	return workflows.ScheduledInput{Name: "tiny", File: "tiny.yaml", Scenario: yaml, Duration: d, Window: time.Second, FailOn: "critical"}
}

// waitRuns waits until the schedule's runs reach n, all ended.
func waitRuns(t *testing.T, st store.Store, name string, n int, within time.Duration) []store.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rs, err := st.ListRuns(context.Background(), store.ListOptions{Schedule: name})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range rs {
			if r.Status.Done() {
				done++
			}
		}
		if done >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule %s: %d runs ended of %d wanted after %s (runs: %+v)", name, done, n, within, rs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestScheduleLifecycle(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sc := schedule.New(r.c)
	const name = "nightly-e2e"
	spec := schedule.Spec{Cron: []string{"0 3 * * *"}, TimeZone: "Europe/Berlin"}
	if err := sc.Create(ctx, name, spec, r.action(3*time.Second), false); err != nil {
		t.Fatal(err)
	}
	if err := sc.Create(ctx, name, spec, r.action(3*time.Second), false); !errors.Is(err, schedule.ErrExists) {
		t.Errorf("second Create: %v, want ErrExists", err)
	}
	d, err := sc.Describe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Cron[0] != "0 3 * * *" || d.Spec.TimeZone != "Europe/Berlin" || d.Spec.Overlap != schedule.OverlapSkip ||
		d.Spec.Catchup != time.Hour || d.Paused || d.Action.Scenario != "tiny" || d.Action.Duration != 3*time.Second || len(d.NextRuns) == 0 {
		t.Errorf("Describe = %+v", d)
	}
	// Visibility is eventually consistent: the list catches up within seconds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ls, err := sc.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 1 && ls[0].Name == name {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("List = %+v, want %s", ls, name)
		}
		time.Sleep(300 * time.Millisecond)
	}

	if err := sc.Trigger(ctx, name); err != nil {
		t.Fatal(err)
	}
	runs := waitRuns(t, r.st, name, 1, 90*time.Second)
	run := runs[0]
	if run.Schedule != name || run.Status != store.Completed || run.Kind != "soak" || run.FailOn != "critical" {
		t.Errorf("scheduled run = %+v, want completed, schedule %s, fail_on critical", run, name)
	}
	ws, err := r.st.Windows(ctx, run.ID, store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 || ws[0].Requests == 0 {
		t.Errorf("run %s: %d windows (first %+v), want 3 with requests", run.ID, len(ws), ws)
	}

	if err := sc.Pause(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	if d, err = sc.Describe(ctx, name); err != nil || !d.Paused {
		t.Errorf("after Pause: paused %v, %v", d.Paused, err)
	}
	if err := sc.Unpause(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	overlap := schedule.OverlapBufferOne
	err = sc.Update(ctx, name, schedule.Change{Cron: []string{"30 1 * * *"}, Overlap: &overlap, Action: func(in *workflows.ScheduledInput) error {
		in.TargetEnv = map[string]string{"DEMO_CPU_BURN_US": "200"}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	d, err = sc.Describe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Paused || d.Spec.Cron[0] != "30 1 * * *" || d.Spec.Overlap != schedule.OverlapBufferOne || d.Spec.TimeZone != "Europe/Berlin" ||
		d.Action.TargetEnv["DEMO_CPU_BURN_US"] != "200" || d.Action.Scenario != "tiny" || d.Actions != 1 {
		t.Errorf("after Update: %+v", d)
	}
	if err := sc.Update(ctx, name, schedule.Change{Cron: []string{" "}}); !errors.Is(err, schedule.ErrInvalid) {
		t.Errorf("Update with an empty cron: %v, want ErrInvalid", err)
	}
	if err := sc.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Describe(ctx, name); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("Describe after Delete: %v, want ErrNotFound", err)
	}
	if err := sc.Trigger(ctx, "nope"); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("Trigger(nope): %v, want ErrNotFound", err)
	}
}

// A firing due while the last run is still going is skipped, counted, and
// recorded: `longhaul history` lists it, left out of the series, with the
// run that was still going.
func TestScheduleOverlapSkip(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sc := schedule.New(r.c)
	const name = "overlap-e2e"
	if err := sc.Create(ctx, name, schedule.Spec{Cron: []string{"0 3 * * *"}}, r.action(4*time.Second), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Delete(context.Background(), name) })
	if err := sc.Trigger(ctx, name); err != nil {
		t.Fatal(err)
	}
	// Trigger again once the run is recorded (its firing marked) and going.
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := sc.Describe(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := r.st.ListRuns(ctx, store.ListOptions{Schedule: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Running) == 1 && len(rs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the triggered run never showed as running: %+v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := sc.Trigger(ctx, name); err != nil {
		t.Fatal(err)
	}
	rs := waitRuns(t, r.st, name, 2, 90*time.Second)
	var d schedule.Schedule
	deadline = time.Now().Add(20 * time.Second)
	for {
		var err error
		if d, err = sc.Describe(ctx, name); err != nil {
			t.Fatal(err)
		}
		if d.SkippedOverlap >= 1 && len(d.Running) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after two triggers: %d started, %d skipped, running %v; want 1 skipped", d.Actions, d.SkippedOverlap, d.Running)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if d.Actions != 1 || d.SkippedOverlap != 1 {
		t.Errorf("%d started, %d skipped; want 1 and 1", d.Actions, d.SkippedOverlap)
	}
	if len(rs) != 2 {
		t.Fatalf("runs of %s: %+v, want the run and the skipped firing", name, rs)
	}
	skipped, run := rs[0], rs[1] // newest first: the skip is recorded at the run's end
	if run.Status != store.Completed || skipped.Status != store.Skipped || !strings.Contains(skipped.Reason, run.ID) || skipped.Schedule != name {
		t.Errorf("runs = %+v, want a completed run and a skipped firing naming it", rs)
	}

	h, err := history.Build(ctx, r.st, name, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 2 || h.Runs[1].RunID != skipped.ID || !h.Runs[1].Excluded || h.Runs[1].Status != store.Skipped || len(h.Series()) != 1 {
		t.Errorf("history = %+v, want the run, then the skipped firing left out of the series", h.Runs)
	}
	var out bytes.Buffer
	if err := history.WriteText(&out, h); err != nil {
		t.Fatal(err)
	}
	if want := "2 " + skipped.ID + " skipped: a trigger while run " + run.ID + " was still going"; !strings.Contains(out.String(), want) {
		t.Errorf("history text lacks %q:\n%s", want, out.String())
	}
	if *updateHistories {
		if len(d.Recent) != 1 {
			t.Fatalf("describe: recent %+v", d.Recent)
		}
		writeHistory(t, r.c, d.Recent[0].WorkflowID, "scheduled-skips.json")
	}
}

// The firings a spec matches while a run goes are recorded with their
// times, one record per skip Temporal counts.
func TestScheduleOverlapSkipsSpecFirings(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sc := schedule.New(r.c)
	const name = "every-e2e"
	if err := sc.Create(ctx, name, schedule.Spec{Cron: []string{"@every 2s"}}, r.action(5*time.Second), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Delete(context.Background(), name) })
	deadline := time.Now().Add(90 * time.Second)
	for {
		rs, err := r.st.ListRuns(ctx, store.ListOptions{Schedule: name, Status: store.Completed})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no run of @every 2s completed in 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := sc.Pause(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	var d schedule.Schedule
	deadline = time.Now().Add(30 * time.Second)
	for {
		var err error
		if d, err = sc.Describe(ctx, name); err != nil {
			t.Fatal(err)
		}
		if len(d.Running) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running after the pause: %v", d.Running)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rs, err := r.st.ListRuns(ctx, store.ListOptions{Schedule: name})
	if err != nil {
		t.Fatal(err)
	}
	var skipped, done []store.Run
	for _, r := range rs {
		if r.Status == store.Skipped {
			skipped = append(skipped, r)
		} else if r.Status.Done() {
			done = append(done, r)
		}
	}
	// A firing due in the moment between a run's RecordSkipped and its
	// workflow's end is skipped unrecorded (RecordSkipped's comment): at
	// most one per run, and rarely (every 2 s against some milliseconds).
	if len(skipped) < 1 || len(skipped) > d.SkippedOverlap || d.SkippedOverlap-len(skipped) > len(done) {
		t.Fatalf("Temporal counts %d skipped, %d recorded over %d runs (%+v); want them (nearly) the same, at least 1", d.SkippedOverlap, len(skipped), len(done), skipped)
	}
	if len(skipped) != d.SkippedOverlap {
		t.Logf("%d skipped firings unrecorded", d.SkippedOverlap-len(skipped))
	}
	seen := map[time.Time]bool{}
	for _, s := range skipped {
		if seen[s.CreatedAt] {
			t.Errorf("two records of the firing at %v", s.CreatedAt)
		}
		seen[s.CreatedAt] = true
	}
	t.Logf("%d runs, %d skipped firings recorded", len(done), len(skipped))
	ids := map[string]bool{}
	for _, r := range done {
		ids[r.ID] = true
	}
	for _, s := range skipped {
		// @every 2s matches the even seconds since the epoch; a trigger's
		// record would say so instead.
		if s.CreatedAt.Unix()%2 != 0 || s.CreatedAt.Nanosecond() != 0 || strings.Contains(s.Reason, "trigger") {
			t.Errorf("skipped firing at %v (%s): not a time of the spec", s.CreatedAt, s.Reason)
		}
		id, ok := strings.CutSuffix(strings.TrimPrefix(s.Reason, "run "), " was still going")
		if !ok || !ids[id] {
			t.Errorf("skipped firing's reason %q names no run of the schedule", s.Reason)
		}
	}
}

// A run that fails is notified; the receiver's first two 503s are retried
// with backoff, and the delivery is recorded with its attempts.
func TestScheduleNotifiesAFailedRun(t *testing.T) {
	r := newRigWith(t, &activitiestest.Provisioner{Fail: errors.New("no engine here")})
	ctx := context.Background()
	hook := activitiestest.NewReceiver(t, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusNoContent)
	sc := schedule.New(r.c)
	const name = "notify-e2e"
	in := r.action(2 * time.Second)
	in.Notify, in.UIURL = hook.URL, "http://127.0.0.1:8099"
	if err := sc.Create(ctx, name, schedule.Spec{Cron: []string{"0 3 * * *"}}, in, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Delete(context.Background(), name) })
	if err := sc.Trigger(ctx, name); err != nil {
		t.Fatal(err)
	}
	run := waitRuns(t, r.st, name, 1, 90*time.Second)[0]
	if run.Status != store.Failed {
		t.Fatalf("run %s is %s, want failed", run.ID, run.Status)
	}
	var ns []store.Notification
	deadline := time.Now().Add(60 * time.Second)
	for len(ns) == 0 {
		var err error
		if ns, err = r.st.Notifications(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification recorded")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := ns[0]; len(ns) != 1 || !n.OK || n.Attempts != 3 || n.URL != hook.URL || len(n.Events) != 1 || n.Events[0] != notify.EventFailed {
		t.Errorf("notifications = %+v, want one delivered on attempt 3 for event failed", ns)
	}
	got := hook.Delivered()
	if len(got) != 1 {
		t.Fatalf("received %d notifications, want 1", len(got))
	}
	p := got[0]
	if p.Schedule != name || p.RunID != run.ID || p.Status != store.Failed || p.Reason == "" || p.URL != "http://127.0.0.1:8099/runs/"+run.ID {
		t.Errorf("payload = %+v", p)
	}
	if *updateHistories {
		d, err := sc.Describe(ctx, name)
		if err != nil || len(d.Recent) != 1 {
			t.Fatalf("describe: %v, %+v", err, d.Recent)
		}
		writeHistory(t, r.c, d.Recent[0].WorkflowID, "scheduled-notify.json")
	}
}

var updateHistories = flag.Bool("update-histories", false, "regenerate workflows/testdata/scheduled-*.json")

// writeHistory saves a workflow's history for workflows' replay test.
func writeHistory(t *testing.T, c client.Client, id, file string) {
	workflowstest.SaveHistory(t, c, id, filepath.Join("..", "workflows", "testdata", file))
}

// compareAction is a compare schedule's action: one pair of 2 s rounds,
// the sides told apart by their env.
func (r *rig) compareAction() workflows.ScheduledInput {
	soak := r.action(2 * time.Second)
	return workflows.ScheduledInput{Name: "tiny", File: "tiny.yaml", Compare: &workflows.ScheduledCompare{
		Record: store.Comparison{Name: "tiny", Status: store.Pending, Scenario: soak.Scenario, Order: workflows.OrderAB, Pairs: 1,
			A: store.Build{Env: map[string]string{"SIDE": "a"}}, B: store.Build{Env: map[string]string{"SIDE": "b"}},
			RoundDuration: 2 * time.Second, Window: time.Second},
		Scenario: soak.Scenario,
		Input:    workflows.CompareInput{Name: "tiny", Pairs: 1, Order: workflows.OrderAB, Seed: 7, RoundDuration: 2 * time.Second, Window: time.Second, DisturbedAbove: -1},
	}}
}

// A compare schedule's firing records a comparison carrying the schedule's
// name and runs it: its rounds are runs. It is clean (one pair decides
// nothing): the schedule's --notify receiver hears nothing.
func TestScheduleCompare(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sc := schedule.New(r.c)
	const name = "nightly-ab"
	in := r.compareAction()
	receiver := activitiestest.NewReceiver(t)
	in.Notify = receiver.URL
	if err := sc.Create(ctx, name, schedule.Spec{Cron: []string{"0 3 * * *"}}, in, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Delete(context.Background(), name) })
	d, err := sc.Describe(ctx, name)
	if err != nil || d.Action.Compare == nil || d.Action.Compare.A != "SIDE=a" || d.Action.Compare.Pairs != 1 {
		t.Fatalf("Describe = %+v, %v; want a compare action", d.Action, err)
	}
	if err := sc.Trigger(ctx, name); err != nil {
		t.Fatal(err)
	}
	// Trigger again while the comparison goes: that firing is skipped, and
	// recorded as a skipped comparison.
	deadline := time.Now().Add(30 * time.Second)
	for {
		cs, err := r.st.ListComparisons(ctx, store.ListOptions{Schedule: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the triggered comparison was never recorded")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := sc.Trigger(ctx, name); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(90 * time.Second)
	var cs []store.Comparison
	for {
		var err error
		if cs, err = r.st.ListComparisons(ctx, store.ListOptions{Schedule: name}); err != nil {
			t.Fatal(err)
		}
		if len(cs) == 2 && cs[0].Status.Done() && cs[1].Status.Done() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("comparisons after 90 s: %+v", cs)
		}
		time.Sleep(300 * time.Millisecond)
	}
	skipped, ran := cs[0], cs[1] // newest first: the skip is recorded at the comparison's end
	c, err := r.st.GetComparison(ctx, ran.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Schedule != name || c.Status != store.Completed || len(c.Rounds) != 2 || len(c.Verdicts) == 0 {
		t.Errorf("comparison = schedule %q, %s (%s), %d rounds, %d verdicts; want %s, completed, 2 rounds, verdicts", c.Schedule, c.Status, c.Reason, len(c.Rounds), len(c.Verdicts), name)
	}
	if skipped.Status != store.Skipped || skipped.Schedule != name || !strings.Contains(skipped.Reason, "comparison "+ran.ID) || skipped.B.Env["SIDE"] != "b" {
		t.Errorf("skipped firing = %+v, want a skipped comparison naming %s", skipped, ran.ID)
	}
	h, err := history.Build(ctx, r.st, name, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Kind != history.KindCompare || len(h.Runs) != 2 || h.Runs[0].RunID != ran.ID || h.Runs[0].Excluded ||
		len(h.Runs[0].Values) == 0 || !h.Runs[1].Excluded || h.Runs[1].Status != store.Skipped {
		t.Errorf("history = %s %+v; want the comparison with its ratios, then the skipped firing", h.Kind, h.Runs)
	}
	// The firing's workflow has ended (its notification step included):
	// nothing was sent, nothing recorded.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.c.GetWorkflow(wctx, "longhaul-compare-"+ran.ID, "").Get(wctx, nil); err != nil {
		t.Fatalf("the comparison's workflow: %v", err)
	}
	waitScheduledEnd(t, r, sc, name)
	if n := receiver.Posts(); n != 0 {
		t.Errorf("%d POSTs for a clean comparison, want none", n)
	}
	if ns, err := r.st.ComparisonNotifications(ctx, ran.ID); err != nil || len(ns) != 0 {
		t.Errorf("notifications = %+v, %v; want none", ns, err)
	}
}

// waitScheduledEnd waits until every workflow the schedule started has
// ended.
func waitScheduledEnd(t *testing.T, r *rig, sc *schedule.Client, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := sc.Describe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Recent {
		_ = r.c.GetWorkflow(ctx, f.WorkflowID, "").Get(ctx, nil) // its error is the run's
		if ctx.Err() != nil {
			t.Fatalf("the schedule's workflow %s did not end", f.WorkflowID)
		}
	}
}

// A scheduled comparison that fails is notified: the receiver's first 503
// is retried, and the delivery is recorded with the comparison.
func TestScheduleNotifiesAFailedComparison(t *testing.T) {
	r := newRigWith(t, &activitiestest.Provisioner{Fail: errors.New("no engine here")})
	ctx := context.Background()
	receiver := activitiestest.NewReceiver(t, http.StatusServiceUnavailable, http.StatusNoContent)
	sc := schedule.New(r.c)
	const name = "notify-compare-e2e"
	in := r.compareAction()
	in.Notify, in.UIURL = receiver.URL, "http://127.0.0.1:8099"
	if err := sc.Create(ctx, name, schedule.Spec{Cron: []string{"0 3 * * *"}}, in, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Delete(context.Background(), name) })
	if err := sc.Trigger(ctx, name); err != nil {
		t.Fatal(err)
	}
	var c store.Comparison
	var ns []store.Notification
	deadline := time.Now().Add(90 * time.Second)
	for len(ns) == 0 {
		cs, err := r.st.ListComparisons(ctx, store.ListOptions{Schedule: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 1 {
			c = cs[0]
			if ns, err = r.st.ComparisonNotifications(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no notification recorded after 90 s (comparisons %+v)", cs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if c.Status != store.Failed {
		t.Errorf("comparison %s is %s (%s), want failed", c.ID, c.Status, c.Reason)
	}
	if n := ns[0]; len(ns) != 1 || !n.OK || n.Attempts != 2 || n.URL != receiver.URL || len(n.Events) != 1 || n.Events[0] != notify.EventFailed {
		t.Errorf("notifications = %+v, want one delivered on attempt 2 for event failed", ns)
	}
	got := receiver.Delivered()
	if len(got) != 1 {
		t.Fatalf("received %d notifications, want 1", len(got))
	}
	p := got[0]
	if p.Kind != notify.KindCompare || p.Schedule != name || p.ComparisonID != c.ID || p.RunID != "" || p.Status != store.Failed || p.Reason == "" ||
		p.URL != "http://127.0.0.1:8099/comparisons/"+c.ID || p.HistoryURL != "http://127.0.0.1:8099/schedules/"+name {
		t.Errorf("payload = %+v", p)
	}
	if *updateHistories {
		waitScheduledEnd(t, r, sc, name)
		d, err := sc.Describe(ctx, name)
		if err != nil || len(d.Recent) != 1 {
			t.Fatalf("describe: %v, %+v", err, d.Recent)
		}
		writeHistory(t, r.c, d.Recent[0].WorkflowID, "scheduled-compare-notify.json")
	}
}

// A paused schedule does not fire; unpaused, it does.
func TestSchedulePausedDoesNotFire(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sc := schedule.New(r.c)
	const name = "paused-e2e"
	if err := sc.Create(ctx, name, schedule.Spec{Cron: []string{"@every 2s"}}, r.action(time.Second), true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Delete(context.Background(), name) })
	time.Sleep(5 * time.Second)
	d, err := sc.Describe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := r.st.ListRuns(ctx, store.ListOptions{Schedule: name})
	if err != nil || !d.Paused || d.Actions != 0 || len(rs) != 0 {
		t.Fatalf("paused for 5 s at @every 2s: paused %v, %d actions, %d runs (%v); want none", d.Paused, d.Actions, len(rs), err)
	}
	if err := sc.Unpause(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, r.st, name, 1, 60*time.Second)
	if err := sc.Pause(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
}
