package soakworker

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
)

// TestLivenessWithoutTemporal: which runs a sweep keeps when only the store
// is asked. (With Temporal, closed workflows: see the environments e2e tests
// of cmd/longhaul.)
func TestLivenessWithoutTemporal(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	for id, s := range map[string]store.Status{"pending": store.Pending, "running": store.Running, "done": store.Completed, "failed": store.Failed} {
		_ = st.PutRun(ctx, store.Run{ID: id, Status: s})
	}
	tests := []struct {
		name string
		l    Liveness
		want map[string]bool // run → running
	}{
		{"worker start", Liveness{Store: st, Log: discard},
			map[string]bool{"pending": true, "running": true, "done": false, "failed": false, "unknown": true}},
		{"longhaul sweep", Liveness{Store: st, UnknownIsOver: true, Log: discard},
			map[string]bool{"pending": true, "running": true, "done": false, "failed": false, "unknown": false}},
		{"longhaul sweep --run done", Liveness{Store: st, UnknownIsOver: true, Only: map[string]bool{"done": true}, Log: discard},
			map[string]bool{"running": true, "done": false, "failed": true, "unknown": true}},
		{"no logger", Liveness{Store: st},
			map[string]bool{"running": true, "done": false, "unknown": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := tt.l.Running(ctx)
			for run, want := range tt.want {
				if got := running(run); got != want {
					t.Errorf("Running(%s) = %v, want %v", run, got, want)
				}
			}
		})
	}
}

// fakeSweeper removes every run of runs that isRunning calls over.
type fakeSweeper struct {
	runs        []string
	err         error
	hadDeadline bool
}

func (f *fakeSweeper) Sweep(ctx context.Context, isRunning func(string) bool) ([]string, error) {
	_, f.hadDeadline = ctx.Deadline()
	var removed []string
	for _, r := range f.runs {
		if !isRunning(r) {
			removed = append(removed, "run "+r)
		}
	}
	return removed, f.err
}

// TestSweepAtStart: a worker's start removes what belongs to runs that are
// over, keeps runs the store does not know, and starts even when the sweep
// fails.
func TestSweepAtStart(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	_ = st.PutRun(ctx, store.Run{ID: "done", Status: store.Completed})
	_ = st.PutRun(ctx, store.Run{ID: "running", Status: store.Running})
	sw := &fakeSweeper{runs: []string{"done", "running", "unknown"}, err: errors.New("docker: no engine")}
	got := SweepAtStart(ctx, sw, Liveness{Store: st})
	if want := []string{"run done"}; !slices.Equal(got, want) {
		t.Errorf("removed = %q, want %q", got, want)
	}
	if !sw.hadDeadline {
		t.Error("the sweep ran without a deadline")
	}
}
