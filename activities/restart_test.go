package activities_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

const restartScenario = `name: s
environment:
  provider: local
  target:
    command: [./app]
    restart: {policy: on-failure, max: 2}
ops:
  - {name: get, weight: 1, request: {path: /}}
`

// TestRestartTarget: the activity keeps the crashed incarnation's output
// (the target's only: the database goes on), restarts the target, records
// the new incarnation in the run and the slot lost as a gap of it, from
// the crashed incarnation's last window to when the target was up, and
// says how long the target was down in one line with the window. Called
// again (a retry), it restarts again and does not write the gap twice.
func TestRestartTarget(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	_ = st.PutRun(ctx, store.Run{ID: "r1", Name: "s", Scenario: restartScenario, Incarnations: 1})
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	crashed := t0.Add(3*time.Second + 400*time.Millisecond)
	for i := range 5 {
		w := window.Window{RunID: "r1", Incarnation: 1, Index: i, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second), Requests: 10, OK: 10}
		if i == 3 {
			sig := 9
			w.Events = []window.Event{{Kind: window.EventTargetExit, At: crashed, Signal: sig, Detail: "the target process 1 exited (signal 9: killed)"}}
		}
		_ = st.PutWindow(ctx, w)
	}
	prov := &loggingProvisioner{outs: []activities.Output{
		{Source: "target", Text: []byte("listening\nkilled\n")},
		{Source: "database", Text: []byte("ready to accept connections\n")},
	}}
	up := t0.Add(7 * time.Second)
	var lines bytes.Buffer
	a := &activities.Activities{Store: st, Provisioner: prov, Now: func() time.Time { return up },
		Logger: slog.New(slog.NewTextHandler(&lines, nil))}
	env := newEnv(a)

	val, err := env.ExecuteActivity(a.RestartPolicy, activities.RestartPolicyInput{RunID: "r1"})
	var allowed int
	if err != nil || val.Get(&allowed) != nil || allowed != 2 {
		t.Fatalf("RestartPolicy = %d, %v; want 2", allowed, err)
	}

	in := activities.RestartInput{RunID: "r1", Env: activities.Environment{ID: "r1-1", RunID: "r1", Incarnation: 1, Provider: "fake"}, Index: 5, Total: 10}
	for attempt := 1; attempt <= 2; attempt++ {
		val, err := env.ExecuteActivity(a.RestartTarget, in)
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		var res activities.RestartResult
		if err := val.Get(&res); err != nil {
			t.Fatal(err)
		}
		if res.Env.ID != "r1-1" || res.Env.Incarnation != 2 || res.NextIndex != 6 || res.Gaps != 1 || res.DownSeconds != 3.6 {
			t.Errorf("attempt %d: result %+v, want r1-1 incarnation 2, next 6, 1 gap, down 3.6 s", attempt, res)
		}
	}
	if got := len(prov.Restarted); got != 2 {
		t.Errorf("restarted %d times, want 2", got)
	}
	ws, _ := st.Windows(ctx, "r1", store.WindowQuery{Incarnation: 2})
	if len(ws) != 1 || !ws[0].Gap || ws[0].Index != 5 || !ws[0].Start.Equal(t0.Add(5*time.Second)) || !ws[0].End.Equal(up) {
		t.Errorf("incarnation 2's windows = %+v, want slot 5 as a gap from the last window's end to the restart", ws)
	}
	if n := st.Puts["r1/2/5"]; n != 1 {
		t.Errorf("gap written %d times, want once", n)
	}
	run, _ := st.GetRun(ctx, "r1")
	if run.Incarnations != 2 {
		t.Errorf("run incarnations = %d, want 2", run.Incarnations)
	}
	ls, _ := st.Logs(ctx, "r1", false)
	if len(ls) != 2 || ls[0].Source != "database" || ls[1].Source != "target" || ls[0].Incarnation != 1 || ls[1].Incarnation != 1 {
		t.Errorf("logs kept = %+v, want the crashed target's and the database's of incarnation 1 (the database's goes on under incarnation 2)", ls)
	}
	if !strings.Contains(lines.String(), `msg="the target restarted (incarnation 2), down for 3.6 s"`) || !strings.Contains(lines.String(), "window=5") {
		t.Errorf("log lines lack the restart with its window:\n%s", lines.String())
	}
}

// TestRestartPolicyNone: without target.restart nothing may be restarted.
func TestRestartPolicyNone(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "s", Scenario: "name: s\nops:\n  - {name: get, weight: 1, request: {path: /}}\n"})
	a := &activities.Activities{Store: st, Provisioner: &activitiestest.Provisioner{}}
	val, err := newEnv(a).ExecuteActivity(a.RestartPolicy, activities.RestartPolicyInput{RunID: "r1"})
	var allowed int
	if err != nil || val.Get(&allowed) != nil || allowed != 0 {
		t.Errorf("RestartPolicy = %d, %v; want 0", allowed, err)
	}
}
