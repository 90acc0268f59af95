package soakworker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

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
		{"longhaul sweep --run done", Liveness{Store: st, UnknownIsOver: true, Only: []string{"done"}, Log: discard},
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

// describer answers DescribeWorkflowExecution from a map; a workflow it
// does not know is an error. Any other call panics (the embedded nil
// client): Liveness must ask nothing else.
type describer struct {
	client.Client
	status map[string]enumspb.WorkflowExecutionStatus
}

func (d describer) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	s, ok := d.status[id]
	if !ok {
		return nil, errors.New("workflow not found")
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: s}}, nil
}

// TestLivenessWithTemporal: a run the store calls running whose workflow
// has closed is abandoned (failed, or cancelled when its workflow was) and
// swept; whenever Temporal cannot tell, the run keeps its resources.
func TestLivenessWithTemporal(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	c := describer{status: map[string]enumspb.WorkflowExecutionStatus{
		"wf-running":    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		"wf-terminated": enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		"wf-canceled":   enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED,
	}}
	tests := []struct {
		run, workflow string
		running       bool
		status        store.Status // the run's status afterwards
	}{
		{"running", "wf-running", true, store.Running},
		{"terminated", "wf-terminated", false, store.Failed},
		{"canceled", "wf-canceled", false, store.Cancelled},
		{"other-cluster", "wf-elsewhere", true, store.Running},
		{"no-workflow", "", true, store.Running},
	}
	for _, tt := range tests {
		_ = st.PutRun(ctx, store.Run{ID: tt.run, Status: store.Running, WorkflowID: tt.workflow})
	}
	running := Liveness{Store: st, Client: c, Log: discard}.Running(ctx)
	for _, tt := range tests {
		t.Run(tt.run, func(t *testing.T) {
			if got := running(tt.run); got != tt.running {
				t.Errorf("Running(%s) = %v, want %v", tt.run, got, tt.running)
			}
			r, err := st.GetRun(ctx, tt.run)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tt.status {
				t.Errorf("status afterwards = %s (%s), want %s", r.Status, r.Reason, tt.status)
			}
			if !tt.running && !strings.HasPrefix(r.Reason, "abandoned: its workflow "+tt.workflow+" ended") {
				t.Errorf("reason = %q, want it to say the run was abandoned", r.Reason)
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

// A sweep refuses a SQLite store that does not exist rather than create an
// empty one that would call every run over.
func TestOpenSweepStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	noEnv := func(string) string { return "" }
	envStore := func(k string) string {
		if k == "LONGHAUL_STORE" {
			return missing
		}
		return ""
	}
	const pass = " does not exist: pass --store DSN to say which runs are running, or --all to remove every longhaul resource"
	tests := []struct {
		name            string
		storeFlag, data string
		getenv          func(string) string
		wantErr         string
	}{
		{"the data directory's", "", dir, noEnv, "the default store " + filepath.Join(dir, "longhaul.db") + pass},
		{"--store", missing, dir, noEnv, "store " + missing + pass},
		{"$LONGHAUL_STORE", "", dir, envStore, "store " + missing + pass},
	}
	for _, tt := range tests {
		st, err := OpenSweepStore(ctx, tt.storeFlag, tt.data, tt.getenv)
		if err == nil {
			st.Close()
			t.Fatalf("%s: opened a store that does not exist", tt.name)
		}
		if got := err.Error(); got != tt.wantErr || !errors.Is(err, ErrUnusable) {
			t.Errorf("%s: err %q, want %q (ErrUnusable)", tt.name, got, tt.wantErr)
		}
	}
	for _, f := range []string{missing, filepath.Join(dir, "longhaul.db")} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the refused store %s was created: %v", f, err)
		}
	}
	path := filepath.Join(dir, "longhaul.db")
	created, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	created.Close()
	st, err := OpenSweepStore(ctx, "", dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
}
