package follow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// downStore fails every read while down, as a PostgreSQL store that
// restarts does.
type downStore struct {
	*activitiestest.Store
	down atomic.Bool
}

var errRefused = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (s *downStore) Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error) {
	if s.down.Load() {
		return nil, errRefused
	}
	return s.Store.Windows(ctx, runID, q)
}

func (s *downStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if s.down.Load() {
		return store.Run{}, errRefused
	}
	return s.Store.GetRun(ctx, id)
}

func (s *downStore) Findings(ctx context.Context, runID string) ([]analysis.Finding, error) {
	if s.down.Load() {
		return nil, errRefused
	}
	return s.Store.Findings(ctx, runID)
}

// A store that stops answering mid-run, and is still away when the run
// ends, is said once and waited for: every window is printed once, then
// the report, and the follower does not give up (which would end an
// embedded worker's run with it).
func TestFollowRunThroughAStoreOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := &downStore{Store: runStore(t, store.Running, 2)}
	term, wf := newTerminal(), newWorkflow()
	errc := make(chan error, 1)
	go func() {
		errc <- FollowRun(ctx, term.Terminal, st, wf, Run{ID: "r1", Format: report.JSON, Duration: 4 * time.Second, Window: 100 * time.Millisecond})
	}()
	time.Sleep(400 * time.Millisecond)
	st.down.Store(true)
	start := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	for i := 2; i < 4; i++ {
		w := window.Window{RunID: "r1", Index: i, Start: start.Add(time.Duration(i) * time.Second), End: start.Add(time.Duration(i+1) * time.Second),
			Requests: 100, OK: 100, RPS: 100, LatencyMs: window.Latency{P50: 1, P99: 2}}
		if err := st.Store.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(400 * time.Millisecond)
	if err := st.Store.SetStatus(ctx, "r1", store.Completed, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	close(wf.end) // the run ends while the store is still away
	time.AfterFunc(1500*time.Millisecond, func() { st.down.Store(false) })
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("FollowRun = %v; stderr:\n%s", err, term.stderr)
		}
	case <-ctx.Done():
		t.Fatal("the follower did not end")
	}
	lines := strings.Split(strings.TrimSpace(term.stdout.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("want 4 windows and a report, got %d lines:\n%s", len(lines), term.stdout)
	}
	var r ReportObject
	if err := json.Unmarshal([]byte(lines[4]), &r); err != nil || r.Type != "report" || r.Windows != 4 {
		t.Errorf("report object %+v (%v)", r, err)
	}
	if n := strings.Count(term.stderr.String(), "the results store is not answering"); n != 1 {
		t.Errorf("the outage was said %d times, want once; stderr:\n%s", n, term.stderr)
	}
}
