package charts

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// fixture describes a synthetic soak for the UI's tests and benchmarks: a
// leak, a collapse as the items table grows, a lost window and a second
// incarnation, three ops, and quiet windows at the end whose p99.9 rests on
// few requests.
type fixture struct {
	ID, Name string
	Windows  int
	Window   time.Duration
	Status   store.Status
}

var fixtureT0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// histograms encodes a few latency distributions once: windows reuse them.
type histograms struct{ all, get, list, create [4][]byte }

func newHistograms(t testing.TB) *histograms {
	h := &histograms{}
	rng := rand.New(rand.NewPCG(1, 2))
	enc := func(median float64, n int) []byte {
		hh := window.NewHistogram()
		for range n {
			window.Record(hh, int64(median*math.Exp(rng.NormFloat64()*0.6)))
		}
		b, err := window.EncodeHistogram(hh)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for k := range 4 {
		m := 800 * math.Pow(2, float64(k))
		h.get[k], h.list[k], h.create[k] = enc(m, 600), enc(m*3, 300), enc(m*1.5, 100)
		h.all[k] = enc(m*1.6, 1000)
	}
	return h
}

func (f fixture) window(h *histograms, i int) window.Window {
	frac := float64(i) / float64(max(1, f.Windows-1))
	k := min(3, int(frac*4))
	inc := 1
	if frac > 0.6 {
		inc = 2
	}
	start := fixtureT0.Add(time.Duration(i) * f.Window)
	reqs := int64(2000 - 1200*frac)
	if i >= f.Windows-3 {
		reqs = 400 // too few for p99.9
	}
	lat := func(b []byte) window.Latency {
		hh, _ := window.DecodeHistogram(b)
		return window.LatencyOf(hh)
	}
	cpu := 120 + 80*frac
	rss := int64(80<<20) + int64(frac*60*(1<<20))
	heap := int64(40<<20) + int64(frac*50*(1<<20))
	w := window.Window{
		RunID: f.ID, Incarnation: inc, Index: i, Start: start, End: start.Add(f.Window),
		Requests: reqs, OK: reqs - 3, Errors: window.Errors{Status5xx: 2, Timeout: 1}, Dropped: int64(i % 3),
		RPS: float64(reqs) / f.Window.Seconds(), VUs: 16, InFlight: 16,
		LatencyMs: lat(h.all[k]), Histogram: h.all[k],
		Ops: map[string]window.OpStats{
			"get":    {Requests: reqs * 6 / 10, OK: reqs * 6 / 10, LatencyMs: lat(h.get[k]), Histogram: h.get[k]},
			"list":   {Requests: reqs * 3 / 10, OK: reqs*3/10 - 3, Errors: window.Errors{Status5xx: 2, Timeout: 1}, LatencyMs: lat(h.list[k]), Histogram: h.list[k]},
			"create": {Requests: reqs / 10, OK: reqs / 10, LatencyMs: lat(h.create[k]), Histogram: h.create[k]},
		},
		Probes: window.Probes{
			CPUSeconds: ptr(cpu * float64(reqs) / 1e6), CPUMicrosPerRequest: ptr(cpu),
			RSSBytes: ptr(rss), HeapBytes: ptr(heap), HeapForcedGC: i%3 == 0,
			Database: &window.Database{RowsReadPerRequest: 2 + 40*frac, Tables: []window.Table{
				{Name: "items", LiveRows: int64(1000 + 400*i), SeqScans: 10, SeqTuplesRead: int64(float64(reqs) * 40 * frac), RowsReadPerRequest: 40 * frac},
				{Name: "users", LiveRows: 16, IndexScans: 10, IndexTuplesFetched: reqs * 2, RowsReadPerRequest: 2},
			}},
		},
	}
	if i == 30 || i == 31 {
		w.ProbeFailures = []window.ProbeFailure{{Probe: "database", Error: "read pg_stat_user_tables: connection refused"}}
	}
	return w
}

func ptr[T any](v T) *T { return &v }

// lost is the index of the fixture's lost window (a gap), -1 for a run
// of 10 windows or fewer, which loses none.
func (f fixture) lost() int {
	if f.Windows <= 10 {
		return -1
	}
	return f.Windows * 6 / 10
}

// probedRunUI serves fixture f over a store of its own, its windows from
// first on carrying the readings probe adds (the lost window stays a gap).
func probedRunUI(t *testing.T, f fixture, first int, probe func(*window.Window)) *testUI {
	t.Helper()
	st := storetest.New(t)
	h := newHistograms(t)
	f.seed(t, st, h)
	for i := first; i < f.Windows; i++ {
		if i == f.lost() {
			continue
		}
		w := f.window(h, i)
		probe(&w)
		if err := st.PutWindow(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	return &testUI{t: t, st: st, srv: New(Options{Store: st, Addr: "127.0.0.1:8099"})}
}

// seed writes the fixture's run, windows and findings into st.
func (f fixture) seed(t testing.TB, st store.Store, h *histograms) {
	t.Helper()
	ctx := context.Background()
	if f.Window == 0 {
		f.Window = 10 * time.Second
	}
	if f.Status == "" {
		f.Status = store.Completed
	}
	run := store.Run{ID: f.ID, Name: f.Name, Kind: "soak", Status: f.Status, Incarnations: 2,
		Scenario:  "name: " + f.Name + "\nops:\n  - name: get\n    request: {method: GET, path: /items, headers: {Authorization: \"Bearer ${env:API_TOKEN}\"}}\n",
		CreatedAt: fixtureT0, StartedAt: fixtureT0,
		Environment: []byte(`{"provider":"docker","host":"ci-1","image":"longhaul/demo-target:latest","commit":"3f2a9c1d5e7b8a9c","database":{"kind":"postgres","image":"postgres:16"}}`)}
	if f.Status.Done() {
		run.EndedAt = fixtureT0.Add(time.Duration(f.Windows) * f.Window)
	}
	if err := st.PutRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	for i := range f.Windows {
		w := f.window(h, i)
		if i == f.lost() {
			w = window.Window{RunID: f.ID, Incarnation: 1, Index: i, Start: w.Start, End: w.End, Gap: true}
		}
		if err := st.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	lost := f.Windows * 6 / 10 // the leak's last window is the one before
	fs := []analysis.Finding{
		{Kind: analysis.KindLeak, Severity: analysis.Critical, Incarnation: 1,
			Summary:  fmt.Sprintf("post-GC heap grew 40.0 MiB → 70.0 MiB over %d windows", lost),
			Evidence: analysis.Evidence{FirstWindow: 2, LastWindow: lost - 1, Slope: 50 * (1 << 20) / (float64(f.Windows) * f.Window.Hours()), SlopeUnit: "bytes/hour", PValue: 1e-9, Unit: "bytes", Before: 40 << 20, After: 70 << 20}},
		{Kind: analysis.KindCollapse, Severity: analysis.Warning, Incarnation: 1,
			Summary:  "throughput fell 60 % (2,000 → 800 req/s) while items grew: seq scans on items read 40 rows per request",
			Evidence: analysis.Evidence{FirstWindow: f.Windows / 4, LastWindow: f.Windows - 1, Table: "items", Before: 200, After: 80, Unit: "req/s"}},
	}
	if err := st.PutFindings(ctx, f.ID, fs); err != nil {
		t.Fatal(err)
	}
}

// seedNotifications records two notifications of the run or comparison
// that of names (its RunID or ComparisonID): one sent, one that failed
// after its retries.
func seedNotifications(t testing.TB, st store.Store, of store.Notification) {
	t.Helper()
	for _, n := range []store.Notification{
		{URL: "https://hooks.example/longhaul", Events: []string{"findings"}, OK: true, Attempts: 1, At: fixtureT0.Add(20 * time.Minute)},
		{URL: "https://chat.example/webhook", Events: []string{"findings", "gate_failed"}, Attempts: 3, Error: "503 Service Unavailable", At: fixtureT0.Add(21 * time.Minute)},
	} {
		n.RunID, n.ComparisonID = of.RunID, of.ComparisonID
		if err := st.PutNotification(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
}
