package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/devserver/devservertest"
	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
	"github.com/longhaul-dev/longhaul/workflows"
	"github.com/longhaul-dev/longhaul/workflows/workflowstest"
)

var updateHistories = flag.Bool("update-histories", false, "regenerate workflows/testdata/soak-*.json against the embedded server")

// TestGenerateSoakHistories records the histories that workflows'
// replay test replays: a clean soak and a cancelled one, run by the real
// embedded server with fake activities' dependencies. Regenerate them (and
// commit the files) after an intended change of SoakWorkflow guarded by
// workflow.GetVersion:
//
//	go test ./cmd/longhaul -run TestGenerateSoakHistories -update-histories
func TestGenerateSoakHistories(t *testing.T) {
	ctx, quiet, c := replaySetup(t, 2*time.Minute, "run with -update-histories to regenerate workflows/testdata/soak-*.json")

	reached := make(chan struct{})
	drv := &activitiestest.Driver{Before: func(ctx context.Context, call, index int) error {
		if call == 2 && index == 2 { // the cancelled soak: wait in window 2
			close(reached)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}, Shape: func(call, index int, w *window.Window) {
		if call == 3 && index >= 1 { // the soak stopped by a threshold: slow from window 1
			w.LatencyMs.P50 = 50
		}
	}}
	startReplayWorker(t, c, quiet, &activities.Activities{
		Store: &activitiestest.Store{}, Provisioner: &activitiestest.Provisioner{}, Driver: drv,
	})

	start := func(id string, scenario ...string) client.WorkflowRun {
		in := workflows.SoakInput{RunID: id, Name: "hello", Scenario: activitiestest.Hello, Duration: 4 * time.Second, Window: time.Second}
		if len(scenario) > 0 {
			in.Scenario = scenario[0]
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: activities.GeneralQueue}, workflows.WorkflowName, in)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	clean := start("replay-clean")
	if err := clean.Get(ctx, nil); err != nil {
		t.Fatalf("clean soak: %v", err)
	}
	writeHistory(t, c, "replay-clean", "soak-clean.json")

	cancelled := start("replay-cancelled")
	<-reached
	if err := c.CancelWorkflow(ctx, "replay-cancelled", ""); err != nil {
		t.Fatal(err)
	}
	if err := cancelled.Get(ctx, nil); err == nil {
		t.Fatal("cancelled soak ended without an error")
	}
	writeHistory(t, c, "replay-cancelled", "soak-cancelled.json")

	stopped := start("replay-threshold-abort", activitiestest.Hello+"thresholds:\n  - {metric: p50_ms, max: 10, scope: window, windows: 2, abort: true}\n")
	var res workflows.SoakResult
	if err := stopped.Get(ctx, &res); err != nil || res.Reason == "" {
		t.Fatalf("soak stopped by a threshold: %+v, %v", res, err)
	}
	writeHistory(t, c, "replay-threshold-abort", "soak-threshold-abort.json")
}

// TestGenerateCompareHistories records the CompareWorkflow histories that
// workflows' replay test replays: a clean comparison (equivalence check, 3
// pairs in ABBA order, verdicts) and one whose disturbed pair is rerun.
// Regenerate them with
//
//	go test ./cmd/longhaul -run TestGenerateCompareHistories -update-histories
func TestGenerateCompareHistories(t *testing.T) {
	ctx, quiet, c := replaySetup(t, 4*time.Minute, "run with -update-histories to regenerate workflows/testdata/compare-*.json")

	st := &activitiestest.Store{}
	drv := &activitiestest.Driver{}
	// Each window: a latency histogram, CPU per request (B 15 % more), and
	// foreign load on the host in the first round of "replay-compare-rerun".
	drv.Decorate = func(req activities.DriveRequest, w *window.Window) {
		_, r, err := st.RoundOfRun(context.Background(), req.RunID)
		if err != nil {
			return
		}
		h := window.NewHistogram()
		for i := range 50 {
			window.Record(h, int64(900+(i*37+r.Index*11+w.Index*5)%200))
		}
		w.Histogram, _ = window.EncodeHistogram(h)
		w.LatencyMs = window.LatencyOf(h)
		cpu := 50 + float64((r.Index*7+w.Index*3)%5)/10
		if r.Side == store.SideB {
			cpu *= 1.15
		}
		w.Probes.CPUMicrosPerRequest = &cpu
		foreign := 0.05
		if req.RunID == activities.RoundRunID("replay-compare-rerun", 0) {
			foreign = 0.9
		}
		w.Probes.HostForeignCPU = &foreign
	}
	startReplayWorker(t, c, quiet, &activities.Activities{
		Store: st, Provisioner: &activitiestest.Provisioner{}, Driver: drv, Recorder: drv,
	})

	for _, tc := range []struct {
		id, file string
		rerun    bool
	}{
		{"replay-compare-clean", "compare-clean.json", false},
		{"replay-compare-rerun", "compare-rerun.json", true},
	} {
		err := st.PutComparison(ctx, store.Comparison{
			ID: tc.id, Name: "hello", Status: store.Pending, Scenario: activitiestest.Hello,
			B:     store.Build{Env: map[string]string{"DEMO_CPU_BURN_US": "10"}},
			Order: workflows.OrderABBA, Pairs: 3, RoundDuration: 2 * time.Second, Window: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		in := workflows.CompareInput{ComparisonID: tc.id, Name: "hello", Pairs: 3, Seed: 42, RoundDuration: 2 * time.Second,
			Window: time.Second, Equivalence: 10, RerunDisturbed: tc.rerun}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tc.id, TaskQueue: activities.GeneralQueue}, workflows.CompareWorkflowName, in)
		if err != nil {
			t.Fatal(err)
		}
		var res workflows.CompareResult
		if err := run.Get(ctx, &res); err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		if res.Status != store.Completed || (tc.rerun && res.Reruns != 1) || res.Verdicts.Worse == 0 {
			t.Fatalf("%s: %+v", tc.id, res)
		}
		writeHistory(t, c, tc.id, tc.file)
	}
}

// replayClient starts an embedded server for the test and returns a client
// of it; both end with the test.
func replayClient(ctx context.Context, t *testing.T, quiet *slog.Logger) client.Client {
	t.Helper()
	_, c := devservertest.Start(ctx, t, devserver.Options{DataDir: t.TempDir(), Port: freeport.ForTest(t), Logger: quiet},
		client.Options{Logger: sdklog.NewStructuredLogger(quiet)})
	return c
}

// TestGenerateProvisionHeartbeatHistory records a clean soak with the
// version markers of the heartbeating Provision and Teardown
// (soak-provision-heartbeat.json), leaving the older histories as they
// are:
//
//	go test ./cmd/longhaul -run TestGenerateProvisionHeartbeatHistory -args -update-histories
func TestGenerateProvisionHeartbeatHistory(t *testing.T) {
	ctx, quiet, c := replaySetup(t, 2*time.Minute, "run with -update-histories to regenerate workflows/testdata/soak-provision-heartbeat.json")
	startReplayWorker(t, c, quiet, &activities.Activities{
		Store: &activitiestest.Store{}, Provisioner: &activitiestest.Provisioner{}, Driver: &activitiestest.Driver{},
	})
	const id = "replay-provision-heartbeat"
	soakToEnd(ctx, t, c, id)
	writeHistory(t, c, id, "soak-provision-heartbeat.json")
}

// startReplayWorker starts a worker of acts on the replay host's queue,
// logging to quiet, until the test ends.
func startReplayWorker(t *testing.T, c client.Client, quiet *slog.Logger, acts *activities.Activities) {
	t.Helper()
	acts.HostTaskQueue, acts.Logger = "longhaul-host-replay", quiet
	w := workflows.NewWorker(c, acts, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// soakToEnd runs a 3 s soak of activitiestest.Hello as workflow id and waits for
// its end, which must be clean.
func soakToEnd(ctx context.Context, t *testing.T, c client.Client, id string) {
	t.Helper()
	in := workflows.SoakInput{RunID: id, Name: "hello", Scenario: activitiestest.Hello, Duration: 3 * time.Second, Window: time.Second}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: activities.GeneralQueue}, workflows.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("soak: %v", err)
	}
}

// replaySetup skips unless -update-histories is given (skip says what then
// runs), and returns a context bounded by timeout, a quiet logger and a
// client of a fresh embedded server.
func replaySetup(t *testing.T, timeout time.Duration, skip string) (context.Context, *slog.Logger, client.Client) {
	t.Helper()
	if !*updateHistories {
		t.Skip(skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return ctx, quiet, replayClient(ctx, t, quiet)
}

// writeHistory saves workflow id's history as workflows/testdata/FILE.
func writeHistory(t *testing.T, c client.Client, id, file string) {
	workflowstest.SaveHistory(t, c, id, filepath.Join("..", "..", "workflows", "testdata", file))
}

// TestGenerateSlotsHistory records a soak that claims a measurement slot,
// finds the host's only slot held, waits queued until it is released, then
// runs and releases its own (soak-slots.json):
//
//	go test ./cmd/longhaul -run TestGenerateSlotsHistory -args -update-histories
func TestGenerateSlotsHistory(t *testing.T) {
	ctx, quiet, c := replaySetup(t, 2*time.Minute, "run with -update-histories to regenerate workflows/testdata/soak-slots.json")
	st := &activitiestest.Store{}
	if ok, _, _ := st.ClaimSlot(ctx, store.Slot{Holder: "another-run", Host: "replay"}, 1); !ok {
		t.Fatal("seeding the held slot failed")
	}
	startReplayWorker(t, c, quiet, &activities.Activities{
		Store: st, Provisioner: &activitiestest.Provisioner{}, Driver: &activitiestest.Driver{},
	})
	time.AfterFunc(4*time.Second, func() { _ = st.ReleaseSlot(context.Background(), "another-run") })
	const id = "replay-slots"
	soakToEnd(ctx, t, c, id)
	if !slices.Contains(st.Statuses, "queued: "+workflows.QueuedReason) {
		t.Errorf("statuses %v: the soak was never queued", st.Statuses)
	}
	writeHistory(t, c, id, "soak-slots.json")
}
