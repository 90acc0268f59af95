package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// backend returns the DSN of a fresh, empty, not yet opened store for one test.
type backend func(t *testing.T) string

// openNew opens a fresh store of backend b.
func (b backend) openNew(t *testing.T) store.Store { return openDSN(t, b(t)) }

func openDSN(t *testing.T, dsn string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open(%s): %v", dsn, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func sqliteBackend(t *testing.T) string {
	return filepath.Join(t.TempDir(), "sub", "dir", "longhaul.db") // parents are created
}

func TestSQLite(t *testing.T) { runSuite(t, sqliteBackend) }

func TestPostgres(t *testing.T) {
	cluster := pgtest.Start(t)
	runSuite(t, func(t *testing.T) string { return pgtest.NewDatabase(t, cluster) })
}

func runSuite(t *testing.T, open backend) {
	tests := []struct {
		name string
		f    func(t *testing.T, open backend)
	}{
		{"RunRoundTrip", testRunRoundTrip},
		{"GetRunMissing", testGetRunMissing},
		{"ListRuns", testListRuns},
		{"SetStatus", testSetStatus},
		{"WindowRoundTrip", testWindowRoundTrip},
		{"WindowUpsert", testWindowUpsert},
		{"WindowQuery", testWindowQuery},
		{"WindowUnknownRun", testWindowUnknownRun},
		{"PutRunKeepsWindows", testPutRunKeepsWindows},
		{"Findings", testFindings},
		{"Thresholds", testThresholds},
		{"Notifications", testNotifications},
		{"Profiles", testProfiles},
		{"Logs", testLogs},
		{"ConcurrentOpen", testConcurrentOpen},
		{"ConcurrentWrites", testConcurrentWrites},
		{"UpgradeFromSchema2", testUpgradeFromSchema2},
		{"UpgradeFromSchema4", testUpgradeFromSchema4},
		{"UpgradeFromSchema8", testUpgradeFromSchema8},
		{"ListRunsPages", testListRunsPages},
		{"Counts", testCounts},
		{"Spans", testSpans},
		{"SpansLongRun", testSpansLongRun},
		{"ComparisonRoundTrip", testComparisonRoundTrip},
		{"ComparisonMissing", testComparisonMissing},
		{"ComparisonStatusAndList", testComparisonStatusAndList},
		{"Slots", testSlots},
		{"SlotsConcurrentClaims", testSlotsConcurrentClaims},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, open) })
	}
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newRun(id string, created time.Time) store.Run {
	return store.Run{
		ID: id, Name: "hello", Kind: "drive", Status: store.Running,
		Scenario: "name: hello\n", TargetURL: "http://127.0.0.1:8080", CreatedAt: created,
	}
}

// histogram returns an encoded histogram of the given latencies (µs).
func histogram(t testing.TB, micros ...int64) ([]byte, window.Latency) {
	t.Helper()
	h := window.NewHistogram()
	for _, us := range micros {
		window.Record(h, us)
	}
	b, err := window.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return b, window.LatencyOf(h)
}

// newWindow returns a window with real histograms for run id. Latencies
// depend on index so windows differ.
func newWindow(t testing.TB, runID string, inc, idx int) window.Window {
	t.Helper()
	base := int64(1000 * (idx + 1))
	all, lat := histogram(t, base, base*2, base*3, base*10)
	getH, getLat := histogram(t, base, base*2, base*3)
	putH, putLat := histogram(t, base*10)
	cpu := 12.5
	rss := int64(50 << 20)
	alloc, allocPer, gcs, gcPer, gcCPU, gcShare := int64(8192), 2048.0, int64(1), 250.0, 0.002, 0.04
	xact, xactPer := int64(6), 1.5
	w := window.Window{
		RunID: runID, Incarnation: inc, Index: idx,
		Start: t0.Add(time.Duration(idx) * time.Second), End: t0.Add(time.Duration(idx+1) * time.Second),
		Requests: 4, OK: 3, Errors: window.Errors{Status5xx: 1}, Dropped: 2, RPS: 4, VUs: 2, InFlight: 2,
		LatencyMs: lat, Histogram: all,
		Ops: map[string]window.OpStats{
			"get": {Requests: 3, OK: 3, RPS: 3, LatencyMs: getLat, Histogram: getH},
			"put": {Requests: 1, Errors: window.Errors{Status5xx: 1}, RPS: 1, LatencyMs: putLat, Histogram: putH},
		},
		Probes: window.Probes{CPUMicrosPerRequest: &cpu, RSSBytes: &rss,
			AllocBytes: &alloc, AllocBytesPerRequest: &allocPer, GCCycles: &gcs, GCPer1kRequests: &gcPer, GCCPUSeconds: &gcCPU, GCCPUShare: &gcShare,
			Database: &window.Database{RowsReadPerRequest: 3.5, Transactions: &xact, XactPerRequest: &xactPer, Tables: []window.Table{{Name: "items", LiveRows: 10}}}},
	}
	return w
}

func mustPutRun(t *testing.T, s store.Store, r store.Run) {
	t.Helper()
	if err := s.PutRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func testRunRoundTrip(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	want := newRun("r1", t0.Add(123456789*time.Nanosecond))
	want.Environment = json.RawMessage(`{"provider":"local"}`)
	want.ScenarioDir = "/home/soak/scenarios"
	want.WorkflowID = "wf-1"
	want.FailOn = "warning"
	want.Incarnations = 2
	want.StartedAt = t0.Add(time.Second)
	mustPutRun(t, s, want)
	got, err := s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetRun:\n got %+v\nwant %+v", got, want)
	}

	// Replace: the second PutRun wins.
	want.Status, want.Reason, want.Environment = store.Failed, "target died", nil
	mustPutRun(t, s, want)
	got, err = s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetRun after replace:\n got %+v\nwant %+v", got, want)
	}

	// A run put without CreatedAt gets the current time, so ListRuns can order it.
	before := time.Now()
	mustPutRun(t, s, store.Run{ID: "r2", Name: "x", Kind: "soak", Status: store.Pending})
	if got, err = s.GetRun(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if got.CreatedAt.Before(before.Add(-time.Second)) {
		t.Errorf("CreatedAt of a run put without one = %v, want about %v", got.CreatedAt, before)
	}
}

func testGetRunMissing(t *testing.T, open backend) {
	s := open.openNew(t)
	_, err := s.GetRun(context.Background(), "nope")
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun(missing) error = %v, want ErrNotFound", err)
	}
}

func testListRuns(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c", "d"} {
		r := newRun(id, t0.Add(time.Duration(i)*time.Minute))
		if i%2 == 1 {
			r.Status = store.Completed
		}
		if id == "d" {
			r.Name = "other"
		}
		if id == "a" || id == "c" {
			r.Schedule, r.Commit = "nightly", "abc123"+id
		}
		mustPutRun(t, s, r)
	}
	tests := []struct {
		opts store.ListOptions
		want []string
	}{
		{store.ListOptions{}, []string{"d", "c", "b", "a"}},
		{store.ListOptions{Limit: 2}, []string{"d", "c"}},
		{store.ListOptions{Status: store.Completed}, []string{"d", "b"}},
		{store.ListOptions{Name: "hello"}, []string{"c", "b", "a"}},
		{store.ListOptions{Name: "hello", Status: store.Running}, []string{"c", "a"}},
		{store.ListOptions{Name: "none"}, nil},
		{store.ListOptions{Schedule: "nightly"}, []string{"c", "a"}},
		{store.ListOptions{Schedule: "nightly", Status: store.Completed}, nil},
		{store.ListOptions{Schedule: "other"}, nil},
	}
	for _, tt := range tests {
		runs, err := s.ListRuns(ctx, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.ID)
			if (r.ID == "a" || r.ID == "c") && (r.Schedule != "nightly" || r.Commit != "abc123"+r.ID) {
				t.Errorf("run %s: schedule %q commit %q, want nightly abc123%s", r.ID, r.Schedule, r.Commit, r.ID)
			}
		}
		if n, err := s.CountRuns(ctx, tt.opts); err != nil || n != len(tt.want) && tt.opts.Limit == 0 {
			t.Errorf("CountRuns(%+v) = %d, %v, want %d", tt.opts, n, err, len(tt.want))
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ListRuns(%+v) = %v, want %v", tt.opts, got, tt.want)
		}
	}
}

func testSetStatus(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	r := newRun("r1", t0)
	r.Status = store.Pending
	mustPutRun(t, s, r)

	steps := []struct {
		status         store.Status
		reason         string
		at             time.Time
		started, ended time.Time
	}{
		{store.Running, "", t0.Add(1 * time.Second), t0.Add(time.Second), time.Time{}},
		// A second "running" (a new incarnation) keeps the first start.
		{store.Running, "", t0.Add(5 * time.Second), t0.Add(time.Second), time.Time{}},
		{store.Cancelled, "interrupted", t0.Add(9 * time.Second), t0.Add(time.Second), t0.Add(9 * time.Second)},
	}
	for _, st := range steps {
		if err := s.SetStatus(ctx, "r1", st.status, st.reason, st.at); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRun(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != st.status || got.Reason != st.reason || !got.StartedAt.Equal(st.started) || !got.EndedAt.Equal(st.ended) {
			t.Errorf("after SetStatus(%s): got status %s reason %q started %v ended %v; want %s %q %v %v",
				st.status, got.Status, got.Reason, got.StartedAt, got.EndedAt, st.status, st.reason, st.started, st.ended)
		}
	}
	if err := s.SetStatus(ctx, "missing", store.Completed, "", t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetStatus(missing) error = %v, want ErrNotFound", err)
	}
}

func testWindowRoundTrip(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	want := []window.Window{newWindow(t, "r1", 0, 0), newWindow(t, "r1", 0, 1)}
	want[1].Ops = nil // a window without ops
	gap := window.Window{RunID: "r1", Index: 2, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Gap: true}
	want = append(want, gap)
	for _, w := range want {
		if err := s.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Windows(ctx, "r1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("Windows returned %d windows, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			gj, _ := json.Marshal(got[i])
			wj, _ := json.Marshal(want[i])
			t.Errorf("window %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
	// Histograms survive intact: the merged summary is the same.
	gs, err := window.Merge(got)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := window.Merge(want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gs, ws) {
		t.Errorf("Merge(read back) = %+v, want %+v", gs, ws)
	}
}

func testWindowUpsert(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	w := newWindow(t, "r1", 0, 0)
	if err := s.PutWindow(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Requests, w.OK = 40, 39
	w.Ops = map[string]window.OpStats{"only": w.Ops["get"]}
	if err := s.PutWindow(ctx, w); err != nil {
		t.Fatal(err)
	}
	got, err := s.Windows(ctx, "r1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("after writing the same window twice: %d rows, want 1", len(got))
	}
	if !reflect.DeepEqual(got[0], w) {
		t.Errorf("upserted window = %+v, want %+v", got[0], w)
	}
}

func testWindowQuery(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	mustPutRun(t, s, newRun("r2", t0))
	// Written out of order, across two incarnations.
	for _, k := range [][2]int{{1, 1}, {0, 2}, {1, 0}, {0, 0}, {0, 1}} {
		if err := s.PutWindow(ctx, newWindow(t, "r1", k[0], k[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutWindow(ctx, newWindow(t, "r2", 0, 0)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		run  string
		q    store.WindowQuery
		want [][2]int
	}{
		{"r1", store.AllWindows, [][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}},
		{"r1", store.WindowQuery{Incarnation: 1}, [][2]int{{1, 0}, {1, 1}}},
		{"r1", store.WindowQuery{Incarnation: 0, FromIndex: 1}, [][2]int{{0, 1}, {0, 2}}},
		{"r1", store.WindowQuery{Incarnation: -1, FromIndex: 1}, [][2]int{{0, 1}, {0, 2}, {1, 1}}},
		{"r2", store.AllWindows, [][2]int{{0, 0}}},
		{"r3", store.AllWindows, nil},
	}
	for _, tt := range tests {
		ws, err := s.Windows(ctx, tt.run, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		var got [][2]int
		for _, w := range ws {
			got = append(got, [2]int{w.Incarnation, w.Index})
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Windows(%s, %+v) = %v, want %v", tt.run, tt.q, got, tt.want)
		}
	}
}

func testWindowUnknownRun(t *testing.T, open backend) {
	s := open.openNew(t)
	tests := []struct {
		name     string
		w        window.Window
		notFound bool
	}{
		{"unknown run", newWindow(t, "ghost", 0, 0), true},
		{"empty run id", window.Window{}, false},
		{"negative index", window.Window{RunID: "x", Index: -1}, false},
	}
	for _, tt := range tests {
		err := s.PutWindow(context.Background(), tt.w)
		if err == nil {
			t.Errorf("%s: PutWindow succeeded, want an error", tt.name)
			continue
		}
		if got := errors.Is(err, store.ErrNotFound); got != tt.notFound {
			t.Errorf("%s: errors.Is(%v, ErrNotFound) = %v, want %v", tt.name, err, got, tt.notFound)
		}
	}
}

// PutRun replaces the run row; it must not cascade-delete the run's windows.
func testPutRunKeepsWindows(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	r := newRun("r1", t0)
	mustPutRun(t, s, r)
	if err := s.PutWindow(ctx, newWindow(t, "r1", 0, 0)); err != nil {
		t.Fatal(err)
	}
	r.Status = store.Completed
	mustPutRun(t, s, r)
	ws, err := s.Windows(ctx, "r1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 {
		t.Errorf("windows after PutRun replaced the run: %d, want 1", len(ws))
	}
}

func testFindings(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	first := []analysis.Finding{
		{Kind: analysis.KindLeak, Severity: analysis.Critical, Summary: "heap grows 12 MB/h", Incarnation: 1,
			Evidence: analysis.Evidence{FirstWindow: 3, LastWindow: 40, Slope: 12e6, SlopeUnit: "bytes/hour", PValue: 0.001,
				Notes: map[string]float64{"windows": 38}}},
		{Kind: analysis.KindCollapse, Severity: analysis.Warning, Summary: "throughput fell 5x as items grew",
			Evidence: analysis.Evidence{Table: "items", Before: 1950, After: 360, Unit: "req/s"}},
		{Kind: analysis.KindMissingEvidence, Severity: analysis.Info, Summary: "no heap readings",
			Evidence: analysis.Evidence{Missing: []string{"heap"}}},
	}
	if err := s.PutFindings(ctx, "r1", first); err != nil {
		t.Fatal(err)
	}
	got, err := s.Findings(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, first) {
		t.Errorf("Findings:\n got %+v\nwant %+v", got, first)
	}
	// PutFindings replaces.
	second := first[1:2]
	if err := s.PutFindings(ctx, "r1", second); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Findings(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, second) {
		t.Errorf("Findings after replace:\n got %+v\nwant %+v", got, second)
	}
	if err := s.PutFindings(ctx, "ghost", first); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutFindings(unknown run) error = %v, want ErrNotFound", err)
	}
	if got, err = s.Findings(ctx, "r2"); err != nil || len(got) != 0 {
		t.Errorf("Findings(no such run) = %v, %v; want none, nil", got, err)
	}
}

func testThresholds(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	v1, v2, idx := 182.5, 0.034, 7
	first := []thresholds.Result{
		{Threshold: "p99_ms{op=list} max 250", Metric: "p99_ms", Op: "list", Bound: "max", Limit: 250, Value: &v1, OK: true, Scope: "run"},
		{Threshold: "error_rate max 0.01 (3 windows in a row)", Metric: "error_rate", Bound: "max", Limit: 0.01, Value: &v2,
			Scope: "window", Windows: 3, Window: &idx, Incarnation: 1, Abort: true},
		{Threshold: "cpu_us_per_request max 2000", Metric: "cpu_us_per_request", Bound: "max", Limit: 2000, Scope: "run",
			Note: "no process probe readings"},
	}
	if err := s.PutThresholds(ctx, "r1", first); err != nil {
		t.Fatal(err)
	}
	got, err := s.Thresholds(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, first) {
		t.Errorf("Thresholds:\n got %+v\nwant %+v", got, first)
	}
	if err := s.PutThresholds(ctx, "r1", first[2:]); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Thresholds(ctx, "r1"); !reflect.DeepEqual(got, first[2:]) {
		t.Errorf("Thresholds after replace:\n got %+v\nwant %+v", got, first[2:])
	}
	if err := s.PutThresholds(ctx, "ghost", first); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutThresholds(unknown run) error = %v, want ErrNotFound", err)
	}
	if got, err = s.Thresholds(ctx, "r2"); err != nil || len(got) != 0 {
		t.Errorf("Thresholds(no such run) = %v, %v; want none, nil", got, err)
	}
}

// Several openers of a new store at once (as several processes would be)
// all succeed and apply each migration once.
func testConcurrentOpen(t *testing.T, open backend) {
	dsn := open(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Open(context.Background(), dsn)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
	}
	got := migrationRows(t, dsn)
	if want := store.SchemaVersion(); got != want {
		t.Errorf("schema_migrations has %d rows, want %d", got, want)
	}
}

// Concurrent writers on one store (the drive loop and a status update, or
// several runs) do not fail with "database is locked".
func testConcurrentWrites(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	const runs, windows = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, runs*windows)
	for r := 0; r < runs; r++ {
		id := fmt.Sprintf("r%d", r)
		mustPutRun(t, s, newRun(id, t0))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < windows; i++ {
				errs <- s.PutWindow(ctx, newWindow(t, id, 0, i))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < runs; r++ {
		ws, err := s.Windows(ctx, fmt.Sprintf("r%d", r), store.AllWindows)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != windows {
			t.Errorf("run r%d: %d windows, want %d", r, len(ws), windows)
		}
	}
}

// A store at schema version 2 (no runs.scenario_dir) is upgraded on open:
// its runs read back with an empty ScenarioDir, new runs keep theirs.
func testUpgradeFromSchema2(t *testing.T, open backend) {
	ctx := context.Background()
	old := newRun("old", t0)
	s, dsn := upgradedStore(t, open, func(s store.Store) { mustPutRun(t, s, old) },
		`ALTER TABLE runs DROP COLUMN scenario_dir`, `DELETE FROM schema_migrations WHERE version = 3`)
	got, err := s.GetRun(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, old) {
		t.Errorf("run written at schema 2:\n got %+v\nwant %+v", got, old)
	}
	fresh := newRun("new", t0)
	fresh.ScenarioDir = "/srv/scenarios"
	mustPutRun(t, s, fresh)
	if got, err = s.GetRun(ctx, "new"); err != nil || got.ScenarioDir != fresh.ScenarioDir {
		t.Errorf("ScenarioDir after upgrade = %q (%v), want %q", got.ScenarioDir, err, fresh.ScenarioDir)
	}
	if n, want := migrationRows(t, dsn), store.SchemaVersion(); n != want {
		t.Errorf("schema_migrations has %d rows after the upgrade, want %d", n, want)
	}
}

// testUpgradeFromSchema4: a store written before thresholds existed opens,
// its runs read back with no fail_on, and thresholds can be stored.
func testUpgradeFromSchema4(t *testing.T, open backend) {
	ctx := context.Background()
	old := newRun("old", t0)
	s, _ := upgradedStore(t, open, func(s store.Store) { mustPutRun(t, s, old) },
		`DROP TABLE thresholds`, `ALTER TABLE runs DROP COLUMN fail_on`, `DELETE FROM schema_migrations WHERE version = 5`)
	got, err := s.GetRun(ctx, "old")
	if err != nil || !reflect.DeepEqual(got, old) {
		t.Errorf("run written at schema 4:\n got %+v (%v)\nwant %+v", got, err, old)
	}
	if err := s.PutThresholds(ctx, "old", []thresholds.Result{{Metric: "rps", OK: true}}); err != nil {
		t.Errorf("PutThresholds after the upgrade: %v", err)
	}
}

// upgradedStore is a store written at an older schema and opened by this
// version: write fills a fresh store of backend open, the downgrade
// statements take its schema back to the older version, and opening it
// again migrates it. The DSN is returned for tests that read the tables.
func upgradedStore(t *testing.T, open backend, write func(store.Store), downgrade ...string) (store.Store, string) {
	t.Helper()
	dsn := open(t)
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	write(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := openSQL(t, dsn)
	for _, q := range downgrade {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return openDSN(t, dsn), dsn
}

// openSQL opens dsn with database/sql, bypassing the store.
func openSQL(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	driver := "sqlite"
	if store.IsPostgres(dsn) {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func migrationRows(t *testing.T, dsn string) int {
	t.Helper()
	db := openSQL(t, dsn)
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSQLiteReopenKeepsData(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "l.db")
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	mustPutRun(t, s, newRun("r1", t0))
	if err := s.PutWindow(ctx, newWindow(t, "r1", 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openDSN(t, dsn)
	ws, err := s.Windows(ctx, "r1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 {
		t.Errorf("after reopening: %d windows, want 1", len(ws))
	}
}

func TestSQLiteNewerSchemaRefused(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "l.db")
	s := openDSN(t, dsn)
	_ = s
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_ns) VALUES (999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	if s2, err := store.Open(context.Background(), dsn); err == nil {
		s2.Close()
		t.Error("Open of a store with a newer schema succeeded, want an error")
	}
}

func TestOpenBadDSN(t *testing.T) {
	tests := []string{"", "with?query.db", filepath.Join("/proc/self/no/such", "x.db")}
	for _, dsn := range tests {
		if s, err := store.Open(context.Background(), dsn); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", dsn)
		}
	}
}

// Windows written under schema 1 (ops in the document, op histograms in
// op_histograms, no ops blob) read back whole after the upgrade.
func TestSQLiteSchema1RowsReadBack(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "l.db")
	s := openDSN(t, dsn)
	mustPutRun(t, s, newRun("r1", t0))
	want := newWindow(t, "r1", 0, 0)
	if err := s.PutWindow(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	doc, err := json.Marshal(want) // schema 1 kept the op figures in the document
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE windows SET doc = ?, ops = NULL, op_histograms = ?`, string(doc), store.EncodeOpHistogramsV1(want.Ops)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Windows(context.Background(), "r1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("schema-1 row read back as %+v, want %+v", got, want)
	}
}

func testNotifications(t *testing.T, open backend) {
	s := open.openNew(t)
	ctx := context.Background()
	mustPutRun(t, s, newRun("r1", t0))
	want := []store.Notification{
		{RunID: "r1", URL: "http://127.0.0.1:9/hook", Events: []string{"failed", "change_point"}, OK: false, Attempts: 6, Error: "503 Service Unavailable", At: t0.Add(time.Minute)},
		{RunID: "r1", URL: "http://127.0.0.1:9/hook", Events: []string{"findings"}, OK: true, Attempts: 1, At: t0.Add(2 * time.Minute)},
	}
	for _, n := range want {
		if err := s.PutNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Notifications(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].At = got[i].At.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Notifications = %+v, want %+v", got, want)
	}
	if err := s.PutNotification(ctx, store.Notification{RunID: "nope", URL: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutNotification(unknown run) = %v, want ErrNotFound", err)
	}

	// A comparison's notifications are its own, apart from any run's.
	if err := s.PutComparison(ctx, store.Comparison{ID: "c1", Name: "hello", Status: store.Completed, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	cn := store.Notification{ComparisonID: "c1", URL: "http://127.0.0.1:9/hook", Events: []string{"worse"}, OK: true, Attempts: 2, At: t0.Add(3 * time.Minute)}
	if err := s.PutNotification(ctx, cn); err != nil {
		t.Fatal(err)
	}
	gotC, err := s.ComparisonNotifications(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range gotC {
		gotC[i].At = gotC[i].At.UTC()
	}
	if len(gotC) != 1 || !reflect.DeepEqual(gotC[0], cn) {
		t.Errorf("ComparisonNotifications = %+v, want [%+v]", gotC, cn)
	}
	if got, _ := s.Notifications(ctx, "r1"); len(got) != len(want) {
		t.Errorf("the run has %d notifications after the comparison's, want %d", len(got), len(want))
	}
	if err := s.PutNotification(ctx, store.Notification{ComparisonID: "nope", URL: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PutNotification(unknown comparison) = %v, want ErrNotFound", err)
	}
	if err := s.PutNotification(ctx, store.Notification{RunID: "r1", ComparisonID: "c1", URL: "x"}); err == nil {
		t.Error("PutNotification of a run and a comparison at once: no error")
	}
}

func TestNotificationOutcome(t *testing.T) {
	for _, tt := range []struct {
		n    store.Notification
		want string
	}{
		{store.Notification{OK: true, Attempts: 1}, "sent"},
		{store.Notification{OK: true, Attempts: 2}, "sent, on try 2"},
		{store.Notification{Attempts: 6, Error: "503 Service Unavailable"}, "not sent after 6 tries: 503 Service Unavailable"},
		{store.Notification{Attempts: 1, Error: "404 Not Found"}, "not sent: 404 Not Found"},
	} {
		if got := tt.n.Outcome(); got != tt.want {
			t.Errorf("Outcome(%+v) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
