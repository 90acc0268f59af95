package soakworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
)

// Liveness says, for a sweep, which runs still own their environments.
// Store is required; the other fields are optional.
type Liveness struct {
	Store store.Store
	// Client, when set, is asked about the runs the store calls pending or
	// running: a run whose workflow has closed without recording the run's
	// end (terminated, timed out) is abandoned. Its status is set, and its
	// environment swept.
	Client client.Client
	// UnknownIsOver: a run the store does not know is over. `longhaul sweep`
	// names its store and says so; a worker start does not, since the engine
	// and the data directory may hold runs of other stores.
	UnknownIsOver bool
	// Only, when not empty, limits the sweep to these run IDs: every other
	// run counts as running.
	Only []string
	// Log receives what the sweep could not decide and the runs it
	// abandons; nil drops them.
	Log *slog.Logger
}

// Running returns the isRunning function of provision.Sweep. Whenever it
// cannot tell (a store or Temporal error), it keeps the run's resources:
// better a leftover than a soak destroyed.
func (l Liveness) Running(ctx context.Context) func(runID string) bool {
	if l.Log == nil {
		l.Log = discard
	}
	return func(id string) bool {
		if len(l.Only) > 0 && !slices.Contains(l.Only, id) {
			return true
		}
		r, err := l.Store.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return !l.UnknownIsOver
		}
		if err != nil {
			l.Log.Warn("sweep: cannot read run; keeping its resources", "run", id, "err", err)
			return true
		}
		if r.Status.Done() {
			return false
		}
		if l.Client == nil || r.WorkflowID == "" {
			return true
		}
		status, err := l.workflowStatus(ctx, r.WorkflowID)
		if err != nil {
			// Not found included: the store may serve runs of another
			// cluster or namespace than the one this process talks to.
			l.Log.Debug("sweep: cannot describe the run's workflow; keeping its resources", "run", id, "workflow", r.WorkflowID, "err", err)
			return true
		}
		if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return true
		}
		l.abandon(ctx, r, status)
		return false
	}
}

func (l Liveness) workflowStatus(ctx context.Context, workflowID string) (enumspb.WorkflowExecutionStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := l.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return 0, fmt.Errorf("describe workflow %s: %w", workflowID, err)
	}
	return resp.GetWorkflowExecutionInfo().GetStatus(), nil
}

// abandon records the end of a run whose workflow closed without doing so.
func (l Liveness) abandon(ctx context.Context, r store.Run, status enumspb.WorkflowExecutionStatus) {
	final := store.Failed
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		final = store.Cancelled
	}
	reason := fmt.Sprintf("abandoned: its workflow %s ended (%s) before the run recorded its end", r.WorkflowID, status)
	if err := l.Store.SetStatus(ctx, r.ID, final, reason, time.Now()); err != nil {
		l.Log.Warn("sweep: cannot record the end of an abandoned run", "run", r.ID, "err", err)
		return
	}
	l.Log.Warn("run abandoned; sweeping its environment", "run", r.ID, "workflow_status", status.String())
}

// sweepTimeout bounds the sweep at a worker's start.
const sweepTimeout = time.Minute

// SweepAtStart removes, before a worker takes work, the leftovers of runs
// that are over: labelled containers, networks and volumes on this engine
// and local environments under the data directory. Runs the store does not
// know are kept unless live says otherwise (see Liveness). It logs to
// live.Log and returns what it removed; failures are logged, never
// returned, so they never keep the worker from starting. It gives up after
// a minute.
func SweepAtStart(ctx context.Context, sw provision.Sweeper, live Liveness) []string {
	log := live.Log
	if log == nil {
		log = discard
	}
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	start := time.Now()
	removed, err := sw.Sweep(ctx, live.Running(ctx))
	for _, r := range removed {
		log.Warn("removed a leftover of a run that is over", "what", r)
	}
	if err != nil {
		log.Warn("sweep at worker start", "err", err)
	}
	log.Debug("sweep at worker start", "removed", len(removed), "seconds", time.Since(start).Seconds())
	return removed
}

// OpenSweepStore opens the store a sweep asks which runs are running:
// --store storeFlag, else $LONGHAUL_STORE, else the one in the data
// directory data (datadir.StoreDSN). A SQLite store that does not exist is
// refused, not created: an empty store would call every run over and sweep
// them all. Its errors are ErrUnusable, one line that says what to pass.
func OpenSweepStore(ctx context.Context, storeFlag, data string, getenv func(string) string) (store.Store, error) {
	dsn, err := datadir.StoreDSN(storeFlag, data, getenv)
	if err != nil {
		return nil, unusableError{err}
	}
	if !store.IsPostgres(dsn) {
		if _, err := os.Stat(dsn); errors.Is(err, os.ErrNotExist) {
			what := "the default store"
			if storeFlag != "" || getenv("LONGHAUL_STORE") != "" {
				what = "store"
			}
			return nil, unusableError{fmt.Errorf("%s %s does not exist: pass --store DSN to say which runs are running, or --all to remove every longhaul resource", what, dsn)}
		}
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, unusableError{fmt.Errorf("open store: %v", err)}
	}
	return st, nil
}
