package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/store"
)

func newComparison(id string, created time.Time) store.Comparison {
	return store.Comparison{
		ID: id, Name: "demo", Status: store.Pending, Scenario: "name: demo\n", ScenarioDir: "/srv/s",
		WorkflowID: "longhaul-compare-" + id,
		A:          store.Build{Ref: "main"},
		B:          store.Build{Ref: "feature", Env: map[string]string{"DEMO_CPU_BURN_US": "40"}},
		Order:      "abba", Pairs: 2, Provider: "local",
		RoundDuration: 5 * time.Second, Window: time.Second, Warmup: time.Second, Seed: 42,
		CreatedAt: created,
	}
}

func testComparisonRoundTrip(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	want := newComparison("c1", t0.Add(7*time.Nanosecond))
	want.Rounds = []store.Round{
		{Index: 0, Pair: 0, Side: store.SideA, RunID: "r0", Seed: 11, Status: store.Completed, ForeignCPU: 0.02,
			StartedAt: t0.Add(time.Second), EndedAt: t0.Add(6 * time.Second)},
		{Index: 1, Pair: 0, Side: store.SideB, Seed: 11, Status: store.Pending},
	}
	if err := s.PutComparison(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetComparison(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetComparison:\n got %+v\nwant %+v", got, want)
	}

	// Rounds are upserted one at a time; rounds not in a later
	// PutComparison stay, and its results replace the earlier ones.
	r1 := want.Rounds[1]
	r1.RunID, r1.Status, r1.Disturbed, r1.ForeignCPU = "r1", store.Completed, true, 0.4
	if err := s.PutRound(ctx, "c1", r1); err != nil {
		t.Fatal(err)
	}
	want.Rounds[1] = r1
	more := want
	more.Rounds = nil
	more.Status = store.Running
	more.A.Commit = "0123abcd"
	more.Equivalence = equivalence.Result{Status: equivalence.Different, Requests: 200,
		FirstDifference: &equivalence.Difference{Request: 17, Op: "list", Method: "GET", Path: "/items", What: "body",
			JSONPath: "$[0].extra", A: "(absent)", B: `"x"`}}
	more.Verdicts = []analysis.Verdict{{Metric: analysis.MetricCPUMicrosPerReq, Outcome: analysis.Worse, Ratio: 1.15,
		CI: [2]float64{1.11, 1.19}, Pairs: 3, Method: analysis.MethodTLogRatio, Floor: 0.03, Summary: "cpu worse"}}
	if err := s.PutComparison(ctx, more); err != nil {
		t.Fatal(err)
	}
	more.Rounds = want.Rounds
	if got, err = s.GetComparison(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, more) {
		t.Errorf("GetComparison after updates:\n got %+v\nwant %+v", got, more)
	}

	id, r, err := s.RoundOfRun(ctx, "r1")
	if err != nil || id != "c1" || !reflect.DeepEqual(r, r1) {
		t.Errorf("RoundOfRun(r1) = %s, %+v, %v; want c1, %+v", id, r, err, r1)
	}
	if _, _, err := s.RoundOfRun(ctx, "not-a-round"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RoundOfRun(unknown) error = %v, want ErrNotFound", err)
	}
}

func testComparisonMissing(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	if _, err := s.GetComparison(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetComparison(missing) error = %v, want ErrNotFound", err)
	}
	if err := s.PutRound(ctx, "nope", store.Round{Side: store.SideA}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutRound(missing comparison) error = %v, want ErrNotFound", err)
	}
	if err := s.SetComparisonStatus(ctx, "nope", store.Running, "", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetComparisonStatus(missing) error = %v, want ErrNotFound", err)
	}
	if err := s.PutComparison(ctx, store.Comparison{}); err == nil {
		t.Error("PutComparison with an empty id: no error")
	}
}

func testComparisonStatusAndList(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c"} {
		c := newComparison(id, t0.Add(time.Duration(i)*time.Minute))
		if id == "c" {
			c.Name = "other"
		}
		if id != "b" {
			c.Schedule = "nightly-ab"
		}
		c.Rounds = []store.Round{{Index: 0, Side: store.SideA, Status: store.Pending}}
		if err := s.PutComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetComparisonStatus(ctx, "b", store.Running, "", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A second running keeps the first start.
	if err := s.SetComparisonStatus(ctx, "b", store.Running, "", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetComparisonStatus(ctx, "b", store.Failed, "equivalence: different", t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	b, err := s.GetComparison(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != store.Failed || b.Reason != "equivalence: different" || !b.StartedAt.Equal(t0.Add(time.Hour)) || !b.EndedAt.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("after status changes: %s %q started %v ended %v", b.Status, b.Reason, b.StartedAt, b.EndedAt)
	}
	tests := []struct {
		opts store.ListOptions
		want []string
	}{
		{store.ListOptions{}, []string{"c", "b", "a"}},
		{store.ListOptions{Limit: 1}, []string{"c"}},
		{store.ListOptions{Status: store.Failed}, []string{"b"}},
		{store.ListOptions{Name: "demo"}, []string{"b", "a"}},
		{store.ListOptions{Schedule: "nightly-ab"}, []string{"c", "a"}},
		{store.ListOptions{Schedule: "nightly-ab", Offset: 1}, []string{"a"}},
		{store.ListOptions{Schedule: "nope"}, nil},
	}
	for _, tt := range tests {
		cs, err := s.ListComparisons(ctx, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
			if len(c.Rounds) != 1 {
				t.Errorf("ListComparisons: %s has %d rounds, want 1", c.ID, len(c.Rounds))
			}
		}
		if !reflect.DeepEqual(ids, tt.want) {
			t.Errorf("ListComparisons(%+v) = %v, want %v", tt.opts, ids, tt.want)
		}
		if tt.opts.Limit > 0 || tt.opts.Offset > 0 {
			continue // CountComparisons ignores paging
		}
		if n, err := s.CountComparisons(ctx, tt.opts); err != nil || n != len(tt.want) {
			t.Errorf("CountComparisons(%+v) = %d, %v, want %d", tt.opts, n, err, len(tt.want))
		}
	}
}

func TestSameBuild(t *testing.T) {
	tests := []struct {
		a, b store.Build
		want bool
	}{
		{store.Build{}, store.Build{}, true},
		{store.Build{Ref: "main", Commit: "abc"}, store.Build{Ref: "main"}, true},
		{store.Build{Ref: "main"}, store.Build{Ref: "dev"}, false},
		{store.Build{Ref: "main", Commit: "abc"}, store.Build{Ref: "HEAD", Commit: "abc"}, true},
		{store.Build{Ref: "main", Commit: "abc"}, store.Build{Ref: "main", Commit: "def"}, false},
		{store.Build{Image: "x"}, store.Build{}, false},
		{store.Build{Env: map[string]string{"K": "1"}}, store.Build{Env: map[string]string{"K": "1"}}, true},
		{store.Build{Env: map[string]string{"K": "1"}}, store.Build{Env: map[string]string{"K": "2"}}, false},
		{store.Build{Env: map[string]string{"K": "1"}}, store.Build{Env: map[string]string{"J": "1"}}, false},
	}
	for _, tt := range tests {
		if got := (store.Comparison{A: tt.a, B: tt.b}).SameBuild(); got != tt.want {
			t.Errorf("SameBuild(%+v, %+v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// testUpgradeFromSchema8: a comparison written before comparisons.schedule
// existed gets its schedule from its JSON document on upgrade, so that
// ListComparisons finds it by schedule.
func testUpgradeFromSchema8(t *testing.T, open backend) {
	ctx := context.Background()
	old := newComparison("old", t0)
	old.Schedule = "nightly-ab"
	hand := newComparison("hand", t0.Add(time.Minute))
	s, _ := upgradedStore(t, open, func(s store.Store) {
		for _, c := range []store.Comparison{old, hand} {
			if err := s.PutComparison(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}, `DROP INDEX comparisons_by_schedule`, `ALTER TABLE comparisons DROP COLUMN schedule`, `DELETE FROM schema_migrations WHERE version = 9`)
	cs, err := s.ListComparisons(ctx, store.ListOptions{Schedule: "nightly-ab"})
	if err != nil || len(cs) != 1 || cs[0].ID != "old" || cs[0].Schedule != "nightly-ab" {
		t.Errorf("comparisons of nightly-ab after the upgrade: %+v (%v), want old", cs, err)
	}
	if got, err := s.GetComparison(ctx, "hand"); err != nil || got.Schedule != "" {
		t.Errorf("comparison started by hand after the upgrade: schedule %q (%v)", got.Schedule, err)
	}
}
