package workflows

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
)

// downStore is a results store that does not answer the run record's
// reads and writes (GetRun, PutRun, SetStatus) for the next Down calls,
// as PostgreSQL restarting would.
type downStore struct {
	*activitiestest.Store
	mu          sync.Mutex
	down, calls int
}

func (s *downStore) fail() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down > 0 {
		s.down--
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return nil
}

func (s *downStore) takeDown(calls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = calls
}

func (s *downStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if err := s.fail(); err != nil {
		return store.Run{}, err
	}
	return s.Store.GetRun(ctx, id)
}

func (s *downStore) PutRun(ctx context.Context, r store.Run) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.PutRun(ctx, r)
}

func (s *downStore) SetStatus(ctx context.Context, id string, st store.Status, reason string, at time.Time) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.SetStatus(ctx, id, st, reason, at)
}

// TestSoakRidesOutAStoreOutageAtStartAndEnd: the results store down for
// 20 attempts (about 4 minutes of backoff; the general activities used to
// give up after 5 attempts, ~15 s) when the run begins, and again as its
// last window closes (analysis, final status): the run completes with
// every window and its status recorded.
func TestSoakRidesOutAStoreOutageAtStartAndEnd(t *testing.T) {
	f := newFixture(t, 10)
	st := &downStore{Store: f.store}
	f.acts.Store = st
	st.takeDown(20)
	f.drv.Before = func(_ context.Context, _, index int) error {
		if index == 9 {
			st.takeDown(20)
		}
		return nil
	}
	res, err := f.run()
	if err != nil {
		t.Fatalf("workflow error after %d store calls (%d failures left): %v", st.calls, st.down, err)
	}
	if res.Status != store.Completed || res.Windows != 10 {
		t.Errorf("result %+v, want completed with 10 windows", res)
	}
	run, err := f.store.GetRun(context.Background(), "r1")
	if err != nil || run.Status != store.Completed {
		t.Errorf("stored run: %+v, %v; want its final status recorded", run.Status, err)
	}
	if st.down != 0 {
		t.Errorf("%d failures left unconsumed: the outage at the end was not met", st.down)
	}
}

// TestSoakBadScenarioFailsAtOnce: what no retry can fix (no run record
// and no scenario: ErrTypeBadScenario) fails the run on the first attempt.
func TestSoakBadScenarioFailsAtOnce(t *testing.T) {
	f := newFixture(t, 10)
	st := &downStore{Store: f.store}
	f.acts.Store = st
	f.in.Scenario = ""
	_, err := f.run()
	if err == nil || !strings.Contains(err.Error(), "no record and no scenario") {
		t.Fatalf("workflow error = %v, want the bad scenario", err)
	}
	// Begin's read, then the final status of a run the store does not
	// have: neither retried.
	if st.calls != 2 {
		t.Errorf("the run record was read or written %d times, want twice (nothing retried)", st.calls)
	}
}
