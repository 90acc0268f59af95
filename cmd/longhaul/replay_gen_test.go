package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/window"
	"github.com/longhaul-dev/longhaul/workflows"
)

var updateHistories = flag.Bool("update-histories", false, "regenerate workflows/testdata/soak-*.json against the embedded server")

const replayScenario = `name: hello
environment:
  target: {url: "http://127.0.0.1:8080"}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`

// TestGenerateSoakHistories records the histories that workflows'
// replay test replays: a clean soak and a cancelled one, run by the real
// embedded server with fake activities' dependencies. Regenerate them (and
// commit the files) after an intended change of SoakWorkflow guarded by
// workflow.GetVersion:
//
//	go test ./cmd/longhaul -run TestGenerateSoakHistories -update-histories
func TestGenerateSoakHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("run with -update-histories to regenerate workflows/testdata/soak-*.json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: t.TempDir(), Port: freeTCPPort(t), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace(), Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

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
	acts := &activities.Activities{
		Store: &activitiestest.Store{}, Provisioner: &activitiestest.Provisioner{}, Driver: drv,
		HostTaskQueue: "longhaul-host-replay", Logger: quiet,
	}
	w := workflows.NewWorker(c, acts, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	start := func(id string, scenario ...string) client.WorkflowRun {
		in := workflows.SoakInput{RunID: id, Name: "hello", Scenario: replayScenario, Duration: 4 * time.Second, Window: time.Second}
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

	stopped := start("replay-threshold-abort", replayScenario+"thresholds:\n  - {metric: p50_ms, max: 10, scope: window, windows: 2, abort: true}\n")
	var res workflows.SoakResult
	if err := stopped.Get(ctx, &res); err != nil || res.Reason == "" {
		t.Fatalf("soak stopped by a threshold: %+v, %v", res, err)
	}
	writeHistory(t, c, "replay-threshold-abort", "soak-threshold-abort.json")
}

func writeHistory(t *testing.T, c client.Client, id, file string) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "workflows", "testdata", file)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d events", path, len(h.Events))
}
