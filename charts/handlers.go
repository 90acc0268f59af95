package charts

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/profiles"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// intParam reads a non-negative integer query parameter (0 when absent).
func intParam(r *http.Request, name string) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s=%q is not a non-negative integer", errBadRequest, name, s)
	}
	return n, nil
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	pageNum, err := intParam(r, "page")
	if err != nil {
		return err
	}
	pageNum = max(pageNum, 1)
	opts := store.ListOptions{NameContains: strings.TrimSpace(q.Get("q")), Status: store.Status(q.Get("status")), Kind: q.Get("kind"),
		Schedule: strings.TrimSpace(q.Get("schedule"))}
	v, err := buildRuns(r.Context(), s.opts.Store, opts, pageNum, time.Now())
	if err != nil {
		return err
	}
	return render(w, "runs.html", v)
}

func buildRuns(ctx context.Context, st Reader, opts store.ListOptions, pageNum int, now time.Time) (runsView, error) {
	v := runsView{Page: page{Title: "Runs", Nav: []navLink{{"Schedules", "/schedules"}}}, Q: opts.NameContains, Status: string(opts.Status), Kind: opts.Kind, Schedule: opts.Schedule, PageNum: pageNum,
		Statuses: []string{"queued", "running", "pending", "completed", "failed", "cancelled", "skipped"}, Kinds: []string{"soak", "drive"}}
	total, err := st.CountRuns(ctx, opts)
	if err != nil {
		return v, err
	}
	v.Total = total
	v.Pages = max(1, (total+runsPageSize-1)/runsPageSize)
	opts.Limit, opts.Offset = runsPageSize, (pageNum-1)*runsPageSize
	runs, err := st.ListRuns(ctx, opts)
	if err != nil {
		return v, err
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	counts, err := st.Counts(ctx, ids)
	if err != nil {
		return v, err
	}
	for _, r := range runs {
		c := counts[r.ID]
		v.Rows = append(v.Rows, runRow{Run: r, Href: "/runs/" + url.PathEscape(r.ID), Duration: runDuration(r, now),
			Build: parseEnv(r.Environment).build(), Windows: c.Windows, Gaps: c.Gaps, Badges: badges(c), Round: roundOf(ctx, st, r.ID)})
	}
	link := func(p int) string {
		return query("/", "q", v.Q, "status", v.Status, "kind", v.Kind, "schedule", v.Schedule, "page", strconv.Itoa(p))
	}
	if pageNum > 1 {
		v.Prev = link(pageNum - 1)
	}
	if pageNum < v.Pages {
		v.Next = link(pageNum + 1)
	}
	return v, nil
}

// roundLink says which comparison round a run is.
type roundLink struct {
	Href  string
	ID    string
	Round store.Round
}

// roundOf returns the comparison round run id is, or nil (not a round, or
// a store without comparisons).
func roundOf(ctx context.Context, st Reader, id string) *roundLink {
	cr, ok := st.(ComparisonReader)
	if !ok {
		return nil
	}
	cid, rd, err := cr.RoundOfRun(ctx, id)
	if err != nil {
		return nil
	}
	return &roundLink{Href: "/comparisons/" + url.PathEscape(cid), ID: cid, Round: rd}
}

// runQuery is what a run page's address selects: a zoomed range, an op, a
// page of the window table.
type runQuery struct {
	From, To  int
	Op        string
	TablePage int
}

func parseRunQuery(r *http.Request) (runQuery, error) {
	var q runQuery
	var err error
	if q.From, err = intParam(r, "from"); err != nil {
		return q, err
	}
	if q.To, err = intParam(r, "to"); err != nil {
		return q, err
	}
	if q.TablePage, err = intParam(r, "tpage"); err != nil {
		return q, err
	}
	if q.To != 0 && q.To <= q.From {
		return q, fmt.Errorf("%w: to=%d must be after from=%d", errBadRequest, q.To, q.From)
	}
	q.Op = r.URL.Query().Get("op")
	return q, nil
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) error {
	v, err := s.requestedRun(r)
	if err != nil {
		return err
	}
	v.PollMs = int(s.opts.Poll / time.Millisecond)
	return render(w, "run.html", v)
}

// runLive is the changing part of a run page, for the page's poll.
func (s *Server) runLive(w http.ResponseWriter, r *http.Request) error {
	v, err := s.requestedRun(r)
	if err != nil {
		return err
	}
	return render(w, "run-live", v)
}

// requestedRun is the view of the run that r's path names, as r's query
// (range, op) asks for it.
func (s *Server) requestedRun(r *http.Request) (runView, error) {
	q, err := parseRunQuery(r)
	if err != nil {
		return runView{}, err
	}
	return buildRun(r.Context(), s.opts.Store, r.PathValue("id"), q, false, s.opts.MaxPoints)
}

// runState is what the poll compares: status and window count.
func (s *Server) runState(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	run, err := s.opts.Store.GetRun(r.Context(), id)
	if err != nil {
		return err
	}
	c, err := s.opts.Store.Counts(r.Context(), []string{id})
	if err != nil {
		return err
	}
	fs, err := s.opts.Store.Findings(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(map[string]any{"status": run.Status, "windows": c[id].Windows, "findings": len(fs), "done": run.Status.Done(),
		"key": stateKey(run.Status, c[id].Windows, len(fs))})
}

// stateKey names what a live page shows: a page rendered with one key
// refreshes its parts as soon as the poll reads another. The page carries
// the key it was rendered with, so a window that closes between the page's
// render and its first poll is not taken for the baseline.
func stateKey(status store.Status, windows, findings int) string {
	return fmt.Sprintf("%s/%d/%d", status, windows, findings)
}

// runData is what a run page is drawn from.
type runData struct {
	run   store.Run
	fs    []analysis.Finding
	spans []store.Span
	tl    *timeline
	ops   []string
}

// loadRun reads a run's page data: the run, its findings, the spans of the
// range (at most maxPoints) and the ops it has.
func loadRun(ctx context.Context, st Reader, id string, q runQuery, maxPoints int) (*runData, error) {
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &runData{run: run}
	if d.fs, err = st.Findings(ctx, id); err != nil {
		return nil, err
	}
	if d.spans, err = st.Spans(ctx, id, store.SpanQuery{FromIndex: q.From, ToIndex: q.To, Ops: q.Op != "", MaxPoints: maxPoints}); err != nil {
		return nil, err
	}
	// The op menu comes from the last window's ops (every op appears in
	// every window with traffic).
	if n := len(d.spans); n > 0 {
		tail, err := st.Spans(ctx, id, store.SpanQuery{FromIndex: d.spans[n-1].LastIndex, ToIndex: d.spans[n-1].LastIndex + 1, Ops: true})
		if err != nil {
			return nil, err
		}
		for _, sp := range tail {
			for name := range sp.Ops {
				d.ops = append(d.ops, name)
			}
		}
		slices.Sort(d.ops)
	}
	if q.Op != "" && !slices.Contains(d.ops, q.Op) {
		return nil, fmt.Errorf("%w: run %s has no op %q", errNotFound, id, q.Op)
	}
	// x is the time since the run's first window, zoomed or not.
	var start time.Time
	if first, err := st.Spans(ctx, id, store.SpanQuery{ToIndex: 1}); err == nil && len(first) > 0 {
		start = first[0].Start
	} else if len(d.spans) > 0 {
		start = d.spans[0].Start
	}
	d.tl = newTimeline(start, d.spans)
	if (q.From > 0 || q.To > 0) && len(d.tl.x0) > 0 {
		d.tl.begin = d.tl.x0[0]
	}
	return d, nil
}

// buildRun gathers a run page.
func buildRun(ctx context.Context, st Reader, id string, q runQuery, standalone bool, maxPoints int) (runView, error) {
	d, err := loadRun(ctx, st, id, q, maxPoints)
	if err != nil {
		return runView{}, err
	}
	run := d.run
	base := "/runs/" + url.PathEscape(id)
	v := runView{Page: page{Title: run.Name, Standalone: standalone, Nav: []navLink{{"Runs", "/"}}}, Run: run, Env: parseEnv(run.Environment),
		Op: q.Op, Ops: d.ops, From: q.From, To: q.To, Zoomed: q.From > 0 || q.To > 0, Scenario: run.Scenario, Live: !run.Status.Done() && !standalone,
		Base: base, ResetZoom: query(base, "op", q.Op), StateURL: base + "/state",
		LiveURL:   query(base+"/live", "from", itoa(q.From), "to", itoa(q.To), "op", q.Op, "tpage", itoa(q.TablePage)),
		PointsURL: query(base+"/points", "from", itoa(q.From), "to", itoa(q.To), "op", q.Op),
		CSVURL:    base + "/windows.csv", JSONURL: base + "/windows.json", ScenarioURL: base + "/scenario.yaml"}
	if v.Live {
		c, err := st.Counts(ctx, []string{id})
		if err != nil {
			return runView{}, err
		}
		v.StateKey = stateKey(run.Status, c[id].Windows, len(d.fs))
	}
	if pr, ok := st.(profiles.Reader); ok && !standalone {
		if ps, err := pr.Profiles(ctx, id, store.ProfileQuery{}); err == nil && len(ps) > 0 {
			v.ProfileURL, v.Profiles = base+"/profile", len(ps)
		}
	}
	v.Build = v.Env.build()
	v.Duration = runDuration(run, time.Now())
	v.Round = roundOf(ctx, st, id)
	v.Findings = findingViews(d.fs)
	v.ProbeProblems = probeProblems(d.spans)
	ns, err := st.Notifications(ctx, id)
	if err != nil {
		return runView{}, err
	}
	v.Notifications = notificationViews(ns)
	var kept []store.TargetLog
	if !standalone {
		kept = keptLogs(ctx, st, id)
		v.Logs = logViews(kept, base)
		addWindowLines(v.Findings, kept, base)
	}
	v.Totals = sumTotals(d.spans, run)
	v.Resolution = resolution(d.spans)
	for _, spec := range chartSet(d.tl, d.fs, q.Op) {
		c, err := drawChart(spec)
		if err != nil {
			return v, fmt.Errorf("chart %s: %w", spec.ID, err)
		}
		v.Charts = append(v.Charts, c)
	}
	if standalone {
		// No server to fetch the hover data from: it goes in the page.
		b, err := json.Marshal(points(d.tl, q.Op)) // escapes <, > and &: safe inside <script>
		if err != nil {
			return v, err
		}
		v.PointsJS = template.JS(b)
	}
	v.Table = windowTable(d.tl, q, base)
	linkWindowLines(&v.Table, kept, base)
	if standalone {
		if v.CSVData, v.JSONData, v.ScenarioData, err = embeddedDownloads(ctx, st, run); err != nil {
			return v, fmt.Errorf("downloads of run %s: %w", id, err)
		}
		v.FileID = safeName(id)
	}
	if v.Summary, err = buildSummary(ctx, st, id); err != nil {
		return v, fmt.Errorf("summary of run %s: %w", id, err)
	}
	return v, nil
}

// runPoints is the hover data of a run page, fetched by its script on the
// first hover.
func (s *Server) runPoints(w http.ResponseWriter, r *http.Request) error {
	q, err := parseRunQuery(r)
	if err != nil {
		return err
	}
	d, err := loadRun(r.Context(), s.opts.Store, r.PathValue("id"), q, s.opts.MaxPoints)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(points(d.tl, q.Op))
}

func lastIndex(spans []store.Span) int {
	if len(spans) == 0 {
		return 0
	}
	return spans[len(spans)-1].Index
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func sumTotals(spans []store.Span, run store.Run) totals {
	var t totals
	var secs float64
	for _, sp := range spans {
		t.Windows += sp.Windows
		t.Gaps += sp.Gaps
		if sp.Gap {
			continue
		}
		t.Requests += sp.Requests
		t.Errors += sp.Errors.Total()
		t.Dropped += sp.Dropped
		// A span's RPS is over its measured windows' time.
		if sp.RPS > 0 {
			secs += float64(sp.Requests) / sp.RPS
		}
	}
	if secs > 0 {
		t.RPS = float64(t.Requests) / secs
	}
	if t.Requests > 0 {
		t.ErrorPct = 100 * float64(t.Errors) / float64(t.Requests)
	}
	t.Incarnations = run.Incarnations
	return t
}

// resolution says what one point of the charts is.
func resolution(spans []store.Span) string {
	if len(spans) == 0 {
		return ""
	}
	most := 1
	for _, sp := range spans {
		most = max(most, sp.Windows)
	}
	if most == 1 {
		return fmt.Sprintf("%s points, one per window (full resolution)", fmtCount(float64(len(spans))))
	}
	return fmt.Sprintf("%s points, each %d windows merged exactly (histograms merged, counts summed); drag across a chart to zoom to full resolution",
		fmtCount(float64(len(spans))), most)
}

func points(tl *timeline, op string) pointsJSON {
	n := len(tl.spans)
	p := pointsJSON{I: make([]int, n), J: make([]int, n), W: make([]int, n), G: make([]int, n), T0: make([]num, n), T1: make([]num, n), N: make([]int64, n),
		RPS: make([]num, n), Err: make([]num, n), Drop: make([]num, n), P50: make([]num, n), P90: make([]num, n), P95: make([]num, n), P99: make([]num, n),
		P999: make([]num, n), Max: make([]num, n), CPU: make([]num, n), RSS: make([]num, n), Heap: make([]num, n), GC: make([]int, n), RR: make([]num, n)}
	for i, sp := range tl.spans {
		p.I[i], p.J[i], p.W[i], p.G[i] = sp.Index, sp.LastIndex, sp.Windows, sp.Gaps
		p.T0[i], p.T1[i] = num(tl.x0[i]), num(tl.x1[i])
		l, reqs := sp.LatencyMs, sp.Requests
		if op != "" {
			l, reqs = sp.Ops[op].LatencyMs, sp.Ops[op].Requests
		}
		nanIf := func(v float64) num {
			if sp.Gap || reqs == 0 {
				return num(math.NaN())
			}
			return num(v)
		}
		p.N[i] = reqs
		p.RPS[i], p.Err[i], p.Drop[i] = nanIf(sp.RPS), num(float64(sp.Errors.Total())), num(float64(sp.Dropped))
		p.P50[i], p.P90[i], p.P95[i], p.P99[i], p.P999[i], p.Max[i] = nanIf(l.P50), nanIf(l.P90), nanIf(l.P95), nanIf(l.P99), nanIf(l.P999), nanIf(l.Max)
		p.CPU[i], p.RSS[i], p.Heap[i] = num(deref(sp.Probes.CPUMicrosPerRequest)), num(mib(sp.Probes.RSSBytes)), num(mib(sp.Probes.HeapBytes))
		if sp.Probes.HeapForcedGC {
			p.GC[i] = 1
		}
		p.RR[i] = num(math.NaN())
		if d := sp.Probes.Database; d != nil {
			p.RR[i] = num(d.RowsReadPerRequest)
		}
	}
	if columnsOf(tl.spans).Alloc {
		p.AL, p.GCR = make([]num, n), make([]num, n)
		for i, sp := range tl.spans {
			p.AL[i], p.GCR[i] = num(allocKiB(sp)), num(optNaN(sp.Probes.GCPer1kRequests))
		}
	}
	return p
}

// allocKiB is a span's KiB allocated per request, NaN without a reading.
func allocKiB(sp store.Span) float64 {
	if p := sp.Probes.AllocBytesPerRequest; p != nil {
		return *p / 1024
	}
	return math.NaN()
}

func optNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// threadBusy is how busy the target's busiest thread was: its busy share,
// else its CPU share, else NaN.
func threadBusy(p window.Probes) float64 {
	if p.HottestThreadBusy != nil {
		return *p.HottestThreadBusy
	}
	return optNaN(p.HottestThreadCores)
}

func windowTable(tl *timeline, q runQuery, base string) tableView {
	n := len(tl.spans)
	t := tableView{Pages: max(1, (n+tablePageSize-1)/tablePageSize), PageNum: max(q.TablePage, 1), Cols: columnsOf(tl.spans)}
	t.GapSpan = t.Cols.width() - 2
	t.PageNum = min(t.PageNum, t.Pages)
	// Newest first: page 1 ends at the last span.
	hi := n - (t.PageNum-1)*tablePageSize
	lo := max(0, hi-tablePageSize)
	for i := hi - 1; i >= lo; i-- {
		sp := tl.spans[i]
		row := tableRow{At: fmtElapsed(tl.x0[i]), Requests: sp.Requests, RPS: sp.RPS, Dropped: sp.Dropped, Gap: sp.Gap, Incarnation: sp.LastIncarnation,
			P50: sp.LatencyMs.P50, P90: sp.LatencyMs.P90, P95: sp.LatencyMs.P95, P99: sp.LatencyMs.P99, P999: sp.LatencyMs.P999, Max: sp.LatencyMs.Max, Few: sp.Requests < FewSamples,
			CPU: deref(sp.Probes.CPUMicrosPerRequest), RSS: mib(sp.Probes.RSSBytes), Heap: mib(sp.Probes.HeapBytes), ForcedGC: sp.Probes.HeapForcedGC, RowsRead: math.NaN(),
			AllocKiB: allocKiB(sp), GCPer1k: optNaN(sp.Probes.GCPer1kRequests), Thread: sp.Probes.HottestThread, ThreadBusy: threadBusy(sp.Probes)}
		if sp.Windows > 1 {
			row.Windows = fmt.Sprintf("%d–%d", sp.Index, sp.LastIndex)
			t.Merged = true
		} else {
			row.Windows = strconv.Itoa(sp.Index)
		}
		if sp.Requests > 0 {
			row.ErrorPct = 100 * float64(sp.Errors.Total()) / float64(sp.Requests)
		}
		if d := sp.Probes.Database; d != nil {
			row.RowsRead = d.RowsReadPerRequest
		}
		t.Rows = append(t.Rows, row)
	}
	link := func(p int) string {
		return query(base, "from", itoa(q.From), "to", itoa(q.To), "op", q.Op, "tpage", strconv.Itoa(p)) + "#windows"
	}
	if t.PageNum > 1 {
		t.Prev = link(t.PageNum - 1)
	}
	if t.PageNum < t.Pages {
		t.Next = link(t.PageNum + 1)
	}
	return t
}

// allWindows reads every window of the run at full resolution, without
// histograms, for the downloads.
func allWindows(ctx context.Context, st Reader, id string, ops bool) ([]store.Span, error) {
	if _, err := st.GetRun(ctx, id); err != nil {
		return nil, err
	}
	return st.Spans(ctx, id, store.SpanQuery{MaxPoints: math.MaxInt32, Ops: ops})
}

// csvHeader: one row per window; the columns the charts draw.
var csvHeader = []string{"incarnation", "index", "start", "end", "gap", "requests", "ok", "errors", "errors_4xx", "errors_5xx",
	"errors_refused", "errors_reset", "errors_timeout", "errors_other", "errors_unexpected", "errors_interrupted",
	"dropped", "rps", "vus", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms",
	"cpu_us_per_request", "rss_bytes", "heap_bytes", "heap_forced_gc", "rows_read_per_request"}

// csvOptional are columns written after csvHeader only when some window
// has a reading of them, so a run without them keeps the header above.
var csvOptional = []struct {
	name string
	get  func(p window.Probes) *float64
}{
	{"alloc_bytes_per_request", func(p window.Probes) *float64 { return p.AllocBytesPerRequest }},
	{"gc_per_1k_requests", func(p window.Probes) *float64 { return p.GCPer1kRequests }},
	{"hottest_thread_cores", func(p window.Probes) *float64 { return p.HottestThreadCores }},
	{"hottest_thread_busy", func(p window.Probes) *float64 { return p.HottestThreadBusy }},
	{"target_busy_cores", func(p window.Probes) *float64 { return p.TargetBusyCores }},
	{"database_busy_cores", func(p window.Probes) *float64 { return p.DatabaseBusyCores }},
	{"driver_busy_cores", func(p window.Probes) *float64 { return p.DriverBusyCores }},
	{"gc_cpu_share", func(p window.Probes) *float64 { return p.GCCPUShare }},
	{"xact_per_request", func(p window.Probes) *float64 {
		if p.Database == nil {
			return nil
		}
		return p.Database.XactPerRequest
	}},
}

func (s *Server) windowsCSV(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	spans, err := allWindows(r.Context(), s.opts.Store, id, false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="windows-%s.csv"`, safeName(id)))
	return writeWindowsCSV(w, spans)
}

// writeWindowsCSV writes one row per window of spans (full resolution).
func writeWindowsCSV(w io.Writer, spans []store.Span) error {
	cw := csv.NewWriter(w)
	var optional []int // indexes in csvOptional
	for k, c := range csvOptional {
		if slices.ContainsFunc(spans, func(sp store.Span) bool { return c.get(sp.Window.Probes) != nil }) {
			optional = append(optional, k)
		}
	}
	head := slices.Clone(csvHeader)
	for _, k := range optional {
		head = append(head, csvOptional[k].name)
	}
	_ = cw.Write(head)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(p *float64) string {
		if p == nil {
			return ""
		}
		return f(*p)
	}
	opti := func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, sp := range spans {
		ww := sp.Window
		l := ww.LatencyMs
		rr := ""
		if ww.Probes.Database != nil {
			rr = f(ww.Probes.Database.RowsReadPerRequest)
		}
		row := []string{strconv.Itoa(ww.Incarnation), strconv.Itoa(ww.Index), ww.Start.Format(time.RFC3339Nano), ww.End.Format(time.RFC3339Nano),
			strconv.FormatBool(ww.Gap), i64(ww.Requests), i64(ww.OK), i64(ww.Errors.Total())}
		for c := window.Class(1); c < window.NumClasses; c++ {
			row = append(row, i64(ww.Errors.Get(c)))
		}
		row = append(row, i64(ww.Dropped), f(ww.RPS), strconv.Itoa(ww.VUs), f(l.P50), f(l.P90), f(l.P95), f(l.P99), f(l.P999), f(l.Max),
			opt(ww.Probes.CPUMicrosPerRequest), opti(ww.Probes.RSSBytes), opti(ww.Probes.HeapBytes), strconv.FormatBool(ww.Probes.HeapForcedGC), rr)
		for _, k := range optional {
			row = append(row, opt(csvOptional[k].get(ww.Probes)))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func (s *Server) windowsJSON(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	spans, err := allWindows(r.Context(), s.opts.Store, id, true)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="windows-%s.json"`, safeName(id)))
	return writeWindowsJSON(w, id, spans)
}

// writeWindowsJSON writes the windows of spans as one JSON array.
func writeWindowsJSON(w io.Writer, id string, spans []store.Span) error {
	ws := make([]window.Window, len(spans))
	for i, sp := range spans {
		ws[i] = sp.Window
		ws[i].RunID = id
	}
	return json.NewEncoder(w).Encode(ws)
}

// embeddedDownloads are a saved report's windows.csv, windows.json and
// scenario.yaml as data: URLs: the file carries its data, with no server
// to fetch it from.
func embeddedDownloads(ctx context.Context, st Reader, run store.Run) (csvURL, jsonURL, scenarioURL template.URL, err error) {
	spans, err := allWindows(ctx, st, run.ID, true)
	if err != nil {
		return "", "", "", err
	}
	var c, j bytes.Buffer
	if err := writeWindowsCSV(&c, spans); err != nil {
		return "", "", "", err
	}
	if err := writeWindowsJSON(&j, run.ID, spans); err != nil {
		return "", "", "", err
	}
	data := func(mime string, b []byte) template.URL {
		return template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b))
	}
	return data("text/csv", c.Bytes()), data("application/json", j.Bytes()), data("text/plain", []byte(run.Scenario)), nil
}

func (s *Server) scenarioYAML(w http.ResponseWriter, r *http.Request) error {
	run, err := s.opts.Store.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="scenario-%s.yaml"`, safeName(run.ID)))
	_, err = w.Write([]byte(run.Scenario)) // as submitted: ${env:...} references, never their values
	return err
}

// safeName keeps a file name to letters, digits, '-' and '_'.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
