package charts

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// seedSchedule stores 12 nightly runs of schedule "nightly": CPU per
// request 100 µs (±1 %) until run 7 (index 6), 130 µs from it; run 4
// (index 3) failed.
func seedSchedule(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	h := newHistograms(t)
	for i := range 12 {
		start := fixtureT0.Add(time.Duration(i) * 24 * time.Hour)
		run := store.Run{ID: fmt.Sprintf("night-%02d", i), Name: "api", Kind: "soak", Status: store.Completed, Schedule: "nightly",
			Commit: fmt.Sprintf("%02dabcdef0123456789", i), CreatedAt: start, StartedAt: start, EndedAt: start.Add(time.Minute)}
		if i == 3 {
			run.Status, run.Reason = store.Failed, "target stopped answering"
		}
		if err := st.PutRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		cpu := 100 * (1 + 0.01*float64(i%3-1))
		if i >= 6 {
			cpu *= 1.3
		}
		for k := range 3 {
			w := window.Window{RunID: run.ID, Incarnation: 1, Index: k, Start: start.Add(time.Duration(k) * 10 * time.Second),
				End: start.Add(time.Duration(k+1) * 10 * time.Second), Requests: 1000, OK: 1000, RPS: 100, Histogram: h.all[0],
				Probes: window.Probes{CPUMicrosPerRequest: &cpu}}
			if err := st.PutWindow(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestSchedulePage(t *testing.T) {
	st := storetest.New(t)
	seedSchedule(t, st)
	if err := st.PutRun(context.Background(), store.Run{ID: "by-hand", Name: "api", Kind: "soak", Status: store.Completed, CreatedAt: fixtureT0}); err != nil {
		t.Fatal(err)
	}
	// A firing skipped because night-11 was still going.
	skipped := store.Run{ID: "skip-01", Name: "api", Kind: "soak", Status: store.Skipped, Schedule: "nightly",
		Reason: "run night-11 was still going", CreatedAt: fixtureT0.Add(11*24*time.Hour + 30*time.Second)}
	if err := st.PutRun(context.Background(), skipped); err != nil {
		t.Fatal(err)
	}
	next := fixtureT0.Add(15 * 24 * time.Hour)
	u := &testUI{t: t, st: st, srv: New(Options{Store: st, Addr: "127.0.0.1:8099", Schedules: func(context.Context) ([]ScheduleSummary, error) {
		return []ScheduleSummary{{Name: "nightly", Cron: "0 2 * * *", Next: next, Scenario: "api"}, {Name: "weekly", Cron: "@weekly", Paused: true}}, nil
	}})}

	body := u.mustGet("/schedules/nightly", "text/html")
	checkCSPClean(t, "schedule", body)
	for _, want := range []string{
		"regression", "cpu_us_per_request", "29.7 %", "run 7", "06abcdef01", // the change point, its run and commit
		`class="changepoint"`, `class="excluded"`, `href="/runs/night-03"`, "not in the series", // the failed night
		`<circle class="run"`, `href="/runs/night-11"`, `href="/?schedule=nightly"`,
		`class="excluded skipped"`, `s-skipped`, "not in the series: run night-11 was still going", // the skipped firing
	} {
		if !strings.Contains(body, want) {
			t.Errorf("schedule page lacks %q", want)
		}
	}
	// 11 runs in the series on 5 charts (p50, p95, p99, rps, CPU; no heap readings).
	if n := strings.Count(body, `<circle class="run"`); n != 11*5 {
		t.Errorf("%d run points, want 55", n)
	}
	if n := strings.Count(body, `class="changepoint"`); n != 1 {
		t.Errorf("%d change points drawn, want 1", n)
	}
	if n := strings.Count(body, `class="excluded skipped"`); n != 5 {
		t.Errorf("%d skipped marks, want one per chart (5)", n)
	}
	if page := u.mustGet("/runs/skip-01", "text/html"); !strings.Contains(page, "skipped") || !strings.Contains(page, "run night-11 was still going") {
		t.Error("the skipped firing's page does not say it was skipped, and why")
	}
	if res, _ := u.get("/schedules/nobody"); res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /schedules/nobody: %d, want 404", res.StatusCode)
	}

	list := u.mustGet("/schedules", "text/html")
	checkCSPClean(t, "schedules", list)
	for _, want := range []string{`href="/schedules/nightly"`, "0 2 * * *", "paused", "active", "weekly"} {
		if !strings.Contains(list, want) {
			t.Errorf("schedules page lacks %q", want)
		}
	}

	runs := u.mustGet("/?schedule=nightly", "text/html")
	if !strings.Contains(runs, "/runs/night-00") || strings.Contains(runs, "/runs/by-hand") || !strings.Contains(runs, "13 runs") {
		t.Errorf("runs page filtered by schedule: want the 12 nightly runs and the skipped firing only")
	}
	if !strings.Contains(runs, `href="/schedules/nightly"`) {
		t.Error("runs page filtered by schedule has no link to its history")
	}
}

func TestSchedulesPageWithoutTemporal(t *testing.T) {
	st := storetest.New(t)
	u := &testUI{t: t, st: st, srv: New(Options{Store: st, Addr: "127.0.0.1:8099"})}
	if body := u.mustGet("/schedules", "text/html"); !strings.Contains(body, "no Temporal server") {
		t.Error("schedules page without a lister does not say why it is empty")
	}
}

// A compare schedule's page: one row per comparison with its commits and
// B/A ratios, a chart of each ratio, the change point of the ratio's step,
// links to the comparisons, the skipped firing marked.
func TestSchedulePageCompare(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	for i := range 12 {
		start := fixtureT0.Add(time.Duration(i) * 24 * time.Hour)
		c := store.Comparison{ID: fmt.Sprintf("ab-%02d", i), Name: "api", Schedule: "nightly-ab", Status: store.Completed, Pairs: 3,
			A: store.Build{Ref: "v1", Commit: "aaaa0000aaaa"}, B: store.Build{Ref: "main", Commit: fmt.Sprintf("%02dbbbbbbbbbb", i)},
			CreatedAt: start, StartedAt: start}
		cpu := 1 + 0.01*float64(i%3-1)
		if i >= 6 {
			cpu *= 1.2
		}
		switch i {
		case 3:
			c.Status, c.Reason, c.StartedAt, c.A.Commit, c.B.Commit = store.Skipped, "comparison ab-02 was still going", time.Time{}, "", ""
		default:
			c.Verdicts = []analysis.Verdict{
				{Metric: analysis.MetricP50Ms, Outcome: analysis.Better, Ratio: 0.9 + 0.001*float64(i%2), Pairs: 3},
				{Metric: analysis.MetricCPUMicrosPerReq, Outcome: analysis.NoDifference, Ratio: cpu, Pairs: 3},
			}
		}
		if err := st.PutComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	u := &testUI{t: t, st: st, srv: New(Options{Store: st, Addr: "127.0.0.1:8099"})}
	body := u.mustGet("/schedules/nightly-ab", "text/html")
	checkCSPClean(t, "schedule", body)
	for _, want := range []string{
		"Comparisons", "commit A", "cpu_us_per_request B/A", "0.900 (-10.0 %) better", "no difference",
		"regression", "comparison 7", "06bbbbbbbb", `href="/comparisons/ab-06"`, // the change point
		`href="/comparisons/ab-00"`, `class="excluded skipped"`, "not in the series: comparison ab-02 was still going",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("compare schedule page lacks %q", want)
		}
	}
	// 11 comparisons in the series on 2 charts (p50, CPU: no other verdicts).
	if n := strings.Count(body, `<circle class="run"`); n != 11*2 {
		t.Errorf("%d points, want 22", n)
	}
	if n := strings.Count(body, `class="changepoint"`); n != 1 {
		t.Errorf("%d change points drawn, want 1", n)
	}
	if strings.Contains(body, "/runs/ab-") {
		t.Error("compare schedule page links comparisons as runs")
	}
	if page := u.mustGet("/comparisons/ab-03", "text/html"); !strings.Contains(page, "skipped") || !strings.Contains(page, "comparison ab-02 was still going") {
		t.Error("the skipped comparison's page does not say it was skipped, and why")
	}
}
