package activities_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/notify"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// nightlyStore holds n completed runs of schedule "nightly", CPU per
// request 100 µs (±1 %) before run step and 125 µs from it.
func nightlyStore(t *testing.T, n, step int) *activitiestest.Store {
	t.Helper()
	ctx := context.Background()
	st := &activitiestest.Store{}
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("run-%02d", i)
		start := t0.Add(time.Duration(i) * 24 * time.Hour)
		if err := st.PutRun(ctx, store.Run{ID: id, Name: "api", Kind: "soak", Status: store.Completed, Schedule: "nightly", Commit: "c" + id, CreatedAt: start}); err != nil {
			t.Fatal(err)
		}
		cpu := 100 * (1 + 0.01*float64(i%3-1))
		if i >= step {
			cpu *= 1.25
		}
		h := window.NewHistogram()
		window.Record(h, 5000)
		enc, err := window.EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			w := window.Window{RunID: id, Incarnation: 1, Index: k, Start: start.Add(time.Duration(k) * time.Second), End: start.Add(time.Duration(k+1) * time.Second),
				Requests: 1, OK: 1, Histogram: enc, Probes: window.Probes{CPUMicrosPerRequest: &cpu}}
			if err := st.PutWindow(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st
}

func TestPrepareNoticeReportsANewChangePoint(t *testing.T) {
	for _, tt := range []struct {
		runs   int
		events []string
	}{
		{9, nil},                                // 3 runs after the step: too few to report it
		{10, []string{notify.EventChangePoint}}, // the 4th run after the step shows it
		{11, nil},                               // already reported
	} {
		st := nightlyStore(t, tt.runs, 6)
		last := fmt.Sprintf("run-%02d", tt.runs-1)
		if tt.runs == 11 {
			// A warning on the newest run is worth telling on its own.
			if err := st.PutFindings(context.Background(), last, []analysis.Finding{{Kind: "error_surge", Severity: analysis.Warning, Summary: "errors rose"}}); err != nil {
				t.Fatal(err)
			}
			// The schedule's --fail-on warning fails the gate on it too.
			r, err := st.GetRun(context.Background(), last)
			if err != nil {
				t.Fatal(err)
			}
			r.FailOn = "warning"
			if err := st.PutRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			tt.events = []string{notify.EventFindings, notify.EventGateFailed}
		}
		a := &activities.Activities{Store: st}
		env := newEnv(a)
		got := execute[activities.Notice](t, env, a.PrepareNotice, activities.NoticeInput{RunID: last, Schedule: "nightly", UIURL: "http://ui"})
		p := got.Payload
		if fmt.Sprint(p.Events) != fmt.Sprint(tt.events) {
			t.Errorf("%d runs: events %v, want %v (payload %+v)", tt.runs, p.Events, tt.events, p)
		}
		if tt.runs == 11 && (len(p.GateReasons) != 1 || !strings.Contains(p.GateReasons[0], "--fail-on warning")) {
			t.Errorf("gate reasons %q, want the warning finding under --fail-on warning", p.GateReasons)
		}
		if tt.runs == 10 {
			if len(p.ChangePoints) != 1 || p.ChangePoints[0].RunID != "run-06" || p.ChangePoints[0].Metric != analysis.MetricCPUMicrosPerReq || p.ChangePoints[0].Direction != analysis.Regression {
				t.Errorf("change points %+v, want cpu_us_per_request at run-06", p.ChangePoints)
			}
			if p.URL != "http://ui/runs/"+last || p.HistoryURL != "http://ui/schedules/nightly" || p.Commit != "c"+last {
				t.Errorf("payload = %+v", p)
			}
		}
	}
}

// nightlyCompareStore holds n completed comparisons of schedule
// "nightly-ab": B/A of CPU per request about 1.00 (±1 %, no difference)
// before comparison step, 1.15 (worse) from it; p50's flat at 0.95 (better).
func nightlyCompareStore(t *testing.T, n, step int) *activitiestest.Store {
	t.Helper()
	ctx := context.Background()
	st := &activitiestest.Store{}
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for i := range n {
		start := t0.Add(time.Duration(i) * 24 * time.Hour)
		cpu, out := 1+0.01*float64(i%3-1), analysis.NoDifference
		if i >= step {
			cpu, out = cpu*1.15, analysis.Worse
		}
		c := store.Comparison{
			ID: fmt.Sprintf("cmp-%02d", i), Name: "api", Schedule: "nightly-ab", Status: store.Completed, Pairs: 3,
			A: store.Build{Ref: "v1.4.0", Commit: "a14"}, B: store.Build{Ref: "main", Commit: fmt.Sprintf("b%02d", i)},
			CreatedAt: start, StartedAt: start, EndedAt: start.Add(time.Hour),
			Verdicts: []analysis.Verdict{
				{Metric: analysis.MetricP50Ms, Outcome: analysis.Better, Ratio: 0.95, Pairs: 3},
				{Metric: analysis.MetricCPUMicrosPerReq, Outcome: out, Ratio: cpu, Pairs: 3, Summary: "cpu_us_per_request"},
			},
		}
		if err := st.PutComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestPrepareCompareNotice(t *testing.T) {
	for _, tt := range []struct {
		name   string
		n      int
		failed bool
		events []string
	}{
		{"clean", 10, false, nil},
		{"worse with a new change point", 10, false, []string{notify.EventWorse, notify.EventChangePoint}},
		{"worse, the point already told", 11, false, []string{notify.EventWorse}},
		{"failed", 10, true, []string{notify.EventFailed}},
	} {
		step := 6
		if tt.name == "clean" {
			step = tt.n
		}
		st := nightlyCompareStore(t, tt.n, step)
		last := fmt.Sprintf("cmp-%02d", tt.n-1)
		if tt.failed {
			if err := st.SetComparisonStatus(context.Background(), last, store.Failed, "round 3 failed", time.Now()); err != nil {
				t.Fatal(err)
			}
			c, _ := st.GetComparison(context.Background(), last)
			c.Verdicts = nil
			if err := st.PutComparison(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
		a := &activities.Activities{Store: st}
		got := execute[activities.Notice](t, newEnv(a), a.PrepareCompareNotice, activities.CompareNoticeInput{ComparisonID: last, Schedule: "nightly-ab", UIURL: "http://ui"})
		p := got.Payload
		if fmt.Sprint(p.Events) != fmt.Sprint(tt.events) {
			t.Errorf("%s: events %v, want %v (payload %+v)", tt.name, p.Events, tt.events, p)
		}
		if p.Kind != notify.KindCompare || p.ComparisonID != last || p.RunID != "" || p.CommitA != "a14" || p.CommitB != fmt.Sprintf("b%02d", tt.n-1) ||
			p.Commit != p.CommitB || p.URL != "http://ui/comparisons/"+last || p.HistoryURL != "http://ui/schedules/nightly-ab" {
			t.Errorf("%s: payload %+v", tt.name, p)
		}
		wantWorse := 0
		if slices.Contains(tt.events, notify.EventWorse) {
			wantWorse = 1
		}
		if len(p.Verdicts) != wantWorse || (wantWorse == 1 && (p.Verdicts[0].Metric != analysis.MetricCPUMicrosPerReq || p.Verdicts[0].Ratio < 1.1)) {
			t.Errorf("%s: verdicts %+v, want %d (cpu)", tt.name, p.Verdicts, wantWorse)
		}
		if slices.Contains(tt.events, notify.EventChangePoint) {
			if len(p.ChangePoints) != 1 || p.ChangePoints[0].RunID != "cmp-06" || p.ChangePoints[0].Metric != analysis.MetricCPUMicrosPerReq || p.ChangePoints[0].Direction != analysis.Regression {
				t.Errorf("%s: change points %+v, want cpu_us_per_request at cmp-06", tt.name, p.ChangePoints)
			}
		}
	}
}
