package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// A live run's output is followed across a new incarnation, with secrets
// masked even when a write splits them, until the run ends.
func TestLogsFollowsALiveRun(t *testing.T) {
	t.Setenv("FOLLOW_TEST_TOKEN", "tok-s3cret-value")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := &activitiestest.Store{}
	env := func(n int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"id":"r1-%d","incarnation":%d}`, n, n))
	}
	run := store.Run{ID: "r1", Status: store.Running, Scenario: "target:\n  env: {TOKEN: ${env:FOLLOW_TEST_TOKEN}}\n", Environment: env(1)}
	if err := st.PutRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	started := make(chan int, 4)
	follower := func(ctx context.Context, e json.RawMessage, source string, w io.Writer) error {
		n := incarnationOf(e)
		started <- n
		if source != "target" {
			return fmt.Errorf("source %q", source)
		}
		// The secret arrives in two writes.
		fmt.Fprintf(w, "incarnation %d up, token tok-s3", n)
		fmt.Fprintf(w, "cret-value\nline two of %d\n", n)
		<-ctx.Done()
		return nil
	}
	var out lockedbuf.Buffer
	errc := make(chan error, 1)
	go func() {
		errc <- Logs(ctx, st, "r1", report.LogQuery{Source: "target"}, true, &out, follower, 20*time.Millisecond)
	}()
	if n := <-started; n != 1 {
		t.Fatalf("followed incarnation %d first, want 1", n)
	}
	run.Environment = env(2)
	if err := st.PutRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if n := <-started; n != 2 {
		t.Fatalf("followed incarnation %d next, want 2", n)
	}
	if err := st.SetStatus(ctx, "r1", store.Completed, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Logs did not return after the run ended")
	}
	got := out.String()
	want := "incarnation 1 up, token ***\nline two of 1\n==> target output, incarnation 2 <==\nincarnation 2 up, token ***\nline two of 2\n"
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

// An ended run prints what was kept; a follower that cannot follow (the
// environment is on another host) is the command's error.
func TestLogsEndedRunAndFollowerError(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	if err := st.PutRun(ctx, store.Run{ID: "done", Status: store.Completed}); err != nil {
		t.Fatal(err)
	}
	never := func(context.Context, json.RawMessage, string, io.Writer) error {
		t.Error("an ended run was followed")
		return nil
	}
	err := Logs(ctx, st, "done", report.LogQuery{Source: "target"}, true, io.Discard, never, time.Millisecond)
	if !errors.Is(err, report.ErrNoLogs) {
		t.Errorf("ended run without kept output: %v, want ErrNoLogs", err)
	}

	if err := st.PutRun(ctx, store.Run{ID: "live", Status: store.Running, Environment: json.RawMessage(`{"incarnation":1}`)}); err != nil {
		t.Fatal(err)
	}
	elsewhere := errors.New("the environment lives on host h2")
	failing := func(context.Context, json.RawMessage, string, io.Writer) error { return elsewhere }
	if err := Logs(ctx, st, "live", report.LogQuery{Source: "target"}, true, io.Discard, failing, time.Millisecond); !errors.Is(err, elsewhere) {
		t.Errorf("follower error: %v, want %v", err, elsewhere)
	}
}
