package activities_test

import (
	"context"
	"fmt"
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
		v, err := env.ExecuteActivity(a.PrepareNotice, activities.NoticeInput{RunID: last, Schedule: "nightly", UIURL: "http://ui"})
		if err != nil {
			t.Fatal(err)
		}
		var got activities.Notice
		if err := v.Get(&got); err != nil {
			t.Fatal(err)
		}
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
