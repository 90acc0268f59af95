package charts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// seedComparison stores a finished two-pair comparison whose rounds are
// small fixture runs; the second pair's A round was disturbed.
func seedComparison(t *testing.T, st store.Store) string {
	t.Helper()
	ctx := context.Background()
	if _, err := st.GetComparison(ctx, "cmp-1"); err == nil {
		return "cmp-1"
	}
	h := newHistograms(t)
	c := store.Comparison{ID: "cmp-1", Name: "api <b>v2</b>", Status: store.Completed, Order: "abba", Pairs: 2,
		A: store.Build{Ref: "main", Commit: "aaaa111"}, B: store.Build{Ref: "feature", Commit: "bbbb222"},
		RoundDuration: time.Minute, Window: 10 * time.Second, CreatedAt: fixtureT0, StartedAt: fixtureT0, EndedAt: fixtureT0.Add(4 * time.Minute),
		Equivalence: equivalence.Result{Status: equivalence.Different, Requests: 40, FirstDifference: &equivalence.Difference{
			Request: 7, Op: "get", Method: "GET", Path: "/items/<script>", What: "body", JSONPath: "$.name", A: `"x"`, B: `"<script>alert(1)</script>"`}},
		Verdicts: []analysis.Verdict{{Metric: analysis.MetricP50Ms, Outcome: analysis.Better, Ratio: 0.82, CI: [2]float64{0.75, 0.9}, Pairs: 2, PairsBBetter: 2,
			Method: "t-log-ratio-pooled", Summary: "p50: B won 2/2 pairs", Family: 7, PooledFrom: 3}},
		Looks: []store.Look{{Pairs: 2, Undecided: []string{analysis.MetricP99Ms}, Verdicts: []analysis.Verdict{
			{Metric: analysis.MetricCPUMicrosPerReq, Primary: true, Outcome: analysis.Worse, CI: [2]float64{1.28, 1.37}, Pairs: 2, DecidedAt: 2},
			{Metric: analysis.MetricP99Ms, Primary: true, Outcome: analysis.Inconclusive, CI: [2]float64{0.94, 1.12}, Pairs: 2, Floor: 0.03}}}},
	}
	for i, side := range []store.Side{store.SideA, store.SideB, store.SideB, store.SideA} {
		id := fmt.Sprintf("cmp-1-r%d", i)
		fixture{ID: id, Name: c.Name, Windows: 6}.seed(t, st, h)
		c.Rounds = append(c.Rounds, store.Round{Index: i, Pair: i / 2, Side: side, RunID: id, Status: store.Completed, Disturbed: i == 3, ForeignCPU: 0.02})
	}
	if err := st.PutComparison(ctx, c); err != nil {
		t.Fatal(err)
	}
	seedNotifications(t, st, store.Notification{ComparisonID: c.ID})
	return c.ID
}

func TestComparisonPage(t *testing.T) {
	u := newTestUI(t, Options{})
	id := seedComparison(t, u.st)
	body := u.mustGet("/comparisons/"+id, "text/html")
	checkCSPClean(t, "comparison", body)
	if strings.Contains(body, "<script>alert(1)</script>") || strings.Contains(body, "<b>v2</b>") {
		t.Error("comparison page has user text unescaped")
	}
	for _, want := range []string{
		"api &lt;b&gt;v2&lt;/b&gt;", "different", "request 7 (get): GET /items/&lt;script&gt;", "$.name",
		"p50_ms", "better", "-18.0 %", "2/2", "disturbed", `href="/runs/cmp-1-r0"`, `href="/runs/cmp-1-r3"`,
		"cpu_us_per_request", "main @aaaa111", "feature @bbbb222",
		"the intervals hold jointly over 7 metrics; noise pooled with 3 earlier comparisons of this scenario on this host.",
		"<h3>Notifications</h3>", "not sent after 3 tries: 503 Service Unavailable",
		"<b>after pair 2:</b> CPU/request: ", "worse — decided after pair 2; p99: −6.0 % … ", "still spans the 3 % floor; undecided: p99</li>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("comparison page lacks %q", want)
		}
	}
	run := u.mustGet("/runs/cmp-1-r2", "text/html")
	if !strings.Contains(run, `of <a href="/comparisons/cmp-1">comparison cmp-1</a>`) {
		t.Error("a round's run page does not link its comparison")
	}
	if runs := u.mustGet("/", "text/html"); !strings.Contains(runs, "comparison round") {
		t.Error("the runs page does not mark comparison rounds")
	}
	if res, _ := u.get("/comparisons/nope"); res.StatusCode != 404 {
		t.Errorf("missing comparison: %d", res.StatusCode)
	}
	var b strings.Builder
	if err := WriteComparisonPage(context.Background(), &b, u.st, id); err != nil || !strings.Contains(b.String(), "<style>") {
		t.Errorf("standalone comparison page: %v", err)
	}
	// WriteStoredPage finds either kind by its id.
	for _, id := range []string{id, "run-1"} {
		var b strings.Builder
		if err := WriteStoredPage(context.Background(), &b, u.st, id); err != nil || !strings.Contains(b.String(), "<style>") {
			t.Errorf("WriteStoredPage(%s): %v", id, err)
		}
	}
	if err := WriteStoredPage(context.Background(), io.Discard, u.st, "nope"); !errors.Is(err, report.ErrNotStored) {
		t.Errorf("WriteStoredPage(nope): %v, want report.ErrNotStored", err)
	}
}
