package charts

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
)

// ComparisonReader is what the comparison page reads; store.Store has it.
type ComparisonReader interface {
	GetComparison(ctx context.Context, id string) (store.Comparison, error)
	RoundOfRun(ctx context.Context, runID string) (string, store.Round, error)
	ComparisonNotifications(ctx context.Context, comparisonID string) ([]store.Notification, error)
}

var _ ComparisonReader = store.Store(nil)

type comparisonView struct {
	Page     page
	C        store.Comparison
	Duration string
	Verdicts []verdictView
	// Note says what the intervals hold over and where their noise came
	// from (analysis.IntervalNote).
	Note string
	// Looks are a sequential comparison's primary metrics after each pair
	// (analysis.Sequential.Progress), newest last.
	Looks   []lookView
	Metrics []metricPairs
	Rounds  []roundView
	Same    bool
	// Notifications are those a scheduled comparison sent or failed to send.
	Notifications []notificationView
	// ProfileURL is the comparison's profile page (?side=A|B).
	ProfileURL string
}

type lookView struct {
	Pairs int
	Lines []string
}

type verdictView struct {
	analysis.Verdict
	RatioPct string
	CI       string
}

// metricPairs is one metric's rounds in order, as A/B pairs.
type metricPairs struct {
	Metric string
	Unit   string
	Pairs  []pairView
}

type pairView struct {
	Pair       int
	A, B       roundCell
	Ratio      string
	Disturbed  bool
	Superseded bool
}

type roundCell struct {
	Value string
	Href  string
	Index int
	Has   bool
}

type roundView struct {
	store.Round
	Href string
}

// metricUnits names the unit of each compared metric.
var metricUnits = map[string]string{
	analysis.MetricP50Ms: "ms", analysis.MetricP95Ms: "ms", analysis.MetricP99Ms: "ms", analysis.MetricRPS: "req/s",
	analysis.MetricCPUMicrosPerReq: "µs/request", analysis.MetricHeapBytes: "bytes", analysis.MetricRSSBytes: "bytes",
	analysis.MetricRowsReadPerRequest: "rows/request",
	analysis.MetricAllocBytesPerReq:   "bytes/request", analysis.MetricGCPer1kRequests: "GC cycles/1k requests",
}

func fmtMetric(v float64, unit string) string {
	switch unit {
	case "bytes":
		return fmtBytes(v)
	case "bytes/request":
		return fmtBytes(v) + "/request"
	}
	return fmtNum(v) + " " + unit
}

func pct(r float64) string {
	if r == 0 {
		return "–"
	}
	return fmt.Sprintf("%+.1f %%", (r-1)*100)
}

func (s *Server) comparisonPage(w http.ResponseWriter, r *http.Request) error {
	cr, ok := s.opts.Store.(ComparisonReader)
	if !ok {
		return fmt.Errorf("%w: this store keeps no comparisons", errNotFound)
	}
	v, err := buildComparison(r.Context(), s.opts.Store, cr, r.PathValue("id"), false)
	if err != nil {
		return err
	}
	return render(w, "comparison.html", v)
}

func buildComparison(ctx context.Context, st Reader, cr ComparisonReader, id string, standalone bool) (comparisonView, error) {
	c, err := cr.GetComparison(ctx, id)
	if err != nil {
		return comparisonView{}, err
	}
	v := comparisonView{Page: page{Title: "Comparison " + c.Name, Standalone: standalone, Nav: []navLink{{"Runs", "/"}}}, C: c, Same: c.SameBuild(),
		ProfileURL: "/comparisons/" + url.PathEscape(id) + "/profile"}
	v.Duration = runDuration(store.Run{Status: c.Status, StartedAt: c.StartedAt, EndedAt: c.EndedAt}, time.Now())
	for _, vd := range c.Verdicts {
		vv := verdictView{Verdict: vd, RatioPct: pct(vd.Ratio)}
		if vd.CI[0] != 0 || vd.CI[1] != 0 {
			vv.CI = fmt.Sprintf("[%s, %s]", pct(vd.CI[0]), pct(vd.CI[1]))
		}
		v.Verdicts = append(v.Verdicts, vv)
	}
	v.Note = analysis.IntervalNote(c.Verdicts)
	for _, l := range c.Looks {
		s := analysis.Sequential{Verdicts: l.Verdicts, Undecided: l.Undecided, Pairs: l.Pairs}
		v.Looks = append(v.Looks, lookView{Pairs: l.Pairs, Lines: s.Progress()})
	}
	ns, err := cr.ComparisonNotifications(ctx, id)
	if err != nil {
		return comparisonView{}, err
	}
	v.Notifications = notificationViews(ns)
	// Each round's value of each metric, from its run's windows, as the
	// verdicts computed them.
	values := map[int]analysis.RoundValues{}
	for _, rd := range c.Rounds {
		href := ""
		if rd.RunID != "" {
			href = "/runs/" + url.PathEscape(rd.RunID)
			if ws, err := st.Windows(ctx, rd.RunID, store.AllWindows); err == nil && len(ws) > 0 {
				if rv, err := analysis.RoundValuesOf(ws, c.Warmup); err == nil {
					values[rd.Index] = rv
				}
			}
		}
		v.Rounds = append(v.Rounds, roundView{Round: rd, Href: href})
	}
	for _, m := range analysis.Metrics {
		mp := metricPairs{Metric: m, Unit: metricUnits[m]}
		pairs := map[int]*pairView{}
		var order []int
		for _, rv := range v.Rounds {
			p := pairs[rv.Pair]
			if p == nil {
				p = &pairView{Pair: rv.Pair}
				pairs[rv.Pair] = p
				order = append(order, rv.Pair)
			}
			cell := roundCell{Href: rv.Href, Index: rv.Index, Value: "–"}
			if val, ok := values[rv.Index][m]; ok {
				cell.Value, cell.Has = fmtMetric(val, mp.Unit), true
			}
			if rv.Side == store.SideA {
				p.A = cell
			} else {
				p.B = cell
			}
			p.Disturbed = p.Disturbed || rv.Disturbed
			p.Superseded = p.Superseded || rv.Superseded
		}
		any := false
		for _, k := range order {
			p := pairs[k]
			a, okA := values[p.A.Index][m]
			b, okB := values[p.B.Index][m]
			if okA && okB && a > 0 && p.A.Has && p.B.Has {
				p.Ratio = pct(b / a)
			}
			any = any || p.A.Has || p.B.Has
			mp.Pairs = append(mp.Pairs, *p)
		}
		if any {
			v.Metrics = append(v.Metrics, mp)
		}
	}
	return v, nil
}

// WriteComparisonPage writes the page of comparison id as one
// self-contained HTML file, like WriteRunPage.
func WriteComparisonPage(ctx context.Context, w interface{ Write([]byte) (int, error) }, st Reader, id string) error {
	cr, ok := st.(ComparisonReader)
	if !ok {
		return fmt.Errorf("this store keeps no comparisons")
	}
	v, err := buildComparison(ctx, st, cr, id, true)
	if err != nil {
		return err
	}
	v.Page.CSS, v.Page.JS = cssJS()
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, "comparison.html", v); err != nil {
		return fmt.Errorf("render comparison %s: %w", id, err)
	}
	_, err = w.Write([]byte(b.String()))
	return err
}
