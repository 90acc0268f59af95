package charts

import (
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
)

// page is what every template's frame needs.
type page struct {
	Title string
	// Standalone pages (report --format html) carry their CSS and JS inline
	// and have no server behind them: no live updates, zoom or downloads.
	Standalone bool
	CSS        template.CSS
	JS         template.JS
	Nav        []navLink
}

type navLink struct {
	Text, Href string
}

var funcs = template.FuncMap{
	"svg":           func(b []byte) template.HTML { return template.HTML(b) }, // drawn by svgCanvas, which escapes its text
	"num":           fmtNum,
	"ms":            fmtMs,
	"count":         countOf,
	"elapsed":       fmtElapsed,
	"when":          fmtWhen,
	"bytes":         fmtBytes,
	"sev":           func(s analysis.Severity) string { return string(s) },
	"standaloneCSP": standaloneCSP,
	"commit":        func(c string) string { return c[:min(len(c), 10)] },
	"mul100":        func(f float64) float64 { return f * 100 },
	"lastLines":     fmtLastLines,
	"hex": func(c interface{ RGBA() (r, g, b, a uint32) }) string {
		r, g, b, _ := c.RGBA()
		return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
	},
}

func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmtCount(v)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtMs(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + " s"
	}
	return fmtNum(v) + " ms"
}

// countOf is fmtCount for any number type.
// fmtLastLines says how many of a process's last lines follow: "last line",
// "last 20 lines".
func fmtLastLines(n int) string {
	if n == 1 {
		return "last line"
	}
	return fmt.Sprintf("last %d lines", n)
}

func countOf(v any) string {
	switch n := v.(type) {
	case int:
		return fmtCount(float64(n))
	case int64:
		return fmtCount(float64(n))
	case float64:
		return fmtCount(n)
	}
	return fmt.Sprint(v)
}

// fmtCount writes v rounded with thousands separators: 12,345.
func fmtCount(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtWhen(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// --- runs

// runsPageSize is the number of runs per page of the list.
const runsPageSize = 50

type runsView struct {
	Page   page
	Rows   []runRow
	Q      string
	Status string
	Kind   string
	// Schedule filters the runs a schedule started.
	Schedule string
	Total    int
	PageNum  int
	Pages    int
	Prev     string
	Next     string
	// Statuses and Kinds fill the filter's menus.
	Statuses []string
	Kinds    []string
}

type runRow struct {
	Run      store.Run
	Href     string
	Duration string
	Build    string
	Windows  int
	Gaps     int
	Badges   []badge
	Round    *roundLink
}

type badge struct {
	Severity string
	N        int
}

// recordedEnv is the part of a run's recorded environment the UI shows.
type recordedEnv struct {
	Provider string `json:"provider"`
	Host     string `json:"host"`
	Image    string `json:"image"`
	Commit   string `json:"commit"`
	Database *struct {
		Kind  string `json:"kind"`
		Image string `json:"image"`
	} `json:"database"`
	Notes []string `json:"notes"`
}

func parseEnv(raw json.RawMessage) recordedEnv {
	var e recordedEnv
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &e)
	}
	return e
}

// build names what was tested: image and commit.
func (e recordedEnv) build() string {
	var parts []string
	if e.Image != "" {
		parts = append(parts, e.Image)
	}
	if e.Commit != "" {
		c := e.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		parts = append(parts, "@"+c)
	}
	return strings.Join(parts, " ")
}

func runDuration(r store.Run, now time.Time) string {
	start := r.StartedAt
	if start.IsZero() {
		return "–"
	}
	end := r.EndedAt
	if end.IsZero() {
		if r.Status.Done() {
			return "–"
		}
		end = now
	}
	return fmtElapsed(end.Sub(start).Seconds())
}

func badges(c store.RunCounts) []badge {
	var out []badge
	for _, s := range []analysis.Severity{analysis.Critical, analysis.Warning, analysis.Info} {
		if n := c.Findings[s]; n > 0 {
			out = append(out, badge{Severity: string(s), N: n})
		}
	}
	return out
}

// query returns the page's address with q's non-empty values.
func query(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// --- one run

type runView struct {
	Page     page
	Run      store.Run
	Env      recordedEnv
	Build    string
	Duration string
	Round    *roundLink
	Totals   totals
	Findings []findingView
	// ProbeProblems are the probes that failed during the run: part of
	// the result (a finding that lacks their evidence says so too).
	ProbeProblems []probeProblemView
	// Notifications are those a scheduled run sent (or failed to send).
	Notifications []notificationView
	// Logs are the output kept of the run's processes (at teardown).
	Logs       []logView
	Charts     []drawnChart
	Ops        []string
	Op         string
	From, To   int
	Zoomed     bool
	Resolution string
	// PointsJS is the hover data, in a standalone page only; a served page
	// fetches it from PointsURL.
	PointsJS  template.JS
	PointsURL string
	Table     tableView
	Summary   summaryView
	// CSVData, JSONData and ScenarioData are a saved report's downloads
	// (data: URLs); FileID names them.
	CSVData, JSONData, ScenarioData template.URL
	FileID                          string
	Scenario                        string
	Live                            bool
	PollMs                          int
	Base                            string // the page's own address, without query
	ResetZoom                       string
	StateURL                        string
	StateKey                        string // the live state the page was rendered in (see stateKey)
	LiveURL                         string
	CSVURL                          string
	JSONURL                         string
	ScenarioURL                     string
	// ProfileURL is the run's profile page, when it has Profiles.
	ProfileURL string
	Profiles   int
}

type totals struct {
	Windows, Gaps, Incarnations int
	Requests, Errors, Dropped   int64
	RPS                         float64
	ErrorPct                    float64
}

// notificationView is one notification as a page lists it.
type notificationView struct {
	At, URL, Events, Result string
	OK                      bool
}

func notificationViews(ns []store.Notification) []notificationView {
	out := make([]notificationView, 0, len(ns))
	for _, n := range ns {
		out = append(out, notificationView{At: fmtWhen(n.At), URL: n.URL, Events: strings.Join(n.Events, ", "), OK: n.OK, Result: n.Outcome()})
	}
	return out
}

// probeProblemView is one probe that failed in some windows of a run.
type probeProblemView struct {
	Probe, Where, Error string
}

// probeProblems lists the probes that failed in the spans, with the windows
// they failed in. A span merges windows at a coarse resolution and keeps
// the failures of its last one, so a count over merged spans is an upper
// bound and is said so.
func probeProblems(spans []store.Span) []probeProblemView {
	type acc struct {
		first, last, windows int
		err                  string
		merged               bool
	}
	by := map[string]*acc{}
	var order []string
	measured := 0
	for _, sp := range spans {
		n := max(1, sp.Windows) - sp.Gaps
		if sp.Gap || n <= 0 {
			continue
		}
		measured += n
		for _, f := range sp.ProbeFailures {
			a := by[f.Probe]
			if a == nil {
				a = &acc{first: sp.Index}
				by[f.Probe] = a
				order = append(order, f.Probe)
			}
			a.last, a.err = max(sp.Index, sp.LastIndex), f.Error
			a.windows += n
			a.merged = a.merged || n > 1
		}
	}
	slices.Sort(order)
	out := make([]probeProblemView, 0, len(order))
	for _, p := range order {
		a := by[p]
		count := fmt.Sprintf("%d of %d windows", a.windows, measured)
		if a.merged {
			count = "up to " + count
		}
		where := fmt.Sprintf("window %d", a.first)
		if a.last > a.first {
			where = fmt.Sprintf("windows %d–%d", a.first, a.last)
		}
		out = append(out, probeProblemView{Probe: p, Where: "failing in " + count + " (" + where + ")", Error: a.err})
	}
	return out
}

type findingView struct {
	analysis.Finding
	Range    string
	Evidence []kv
	// WindowLines are what the target printed during a crash's window
	// (its last ones; WindowLinesURL has them all), when they were kept.
	WindowLines    []string
	HasWindowLines bool
	WindowLinesURL string
}

type kv struct{ K, V string }

func findingViews(fs []analysis.Finding) []findingView {
	var out []findingView
	order := slices.Clone(fs)
	slices.SortStableFunc(order, func(a, b analysis.Finding) int { return b.Severity.Rank() - a.Severity.Rank() })
	for _, f := range order {
		v := findingView{Finding: f}
		e := f.Evidence
		switch {
		case e.LastWindow > e.FirstWindow:
			v.Range = fmt.Sprintf("windows %d–%d", e.FirstWindow, e.LastWindow)
		case e.FirstWindow > 0:
			v.Range = fmt.Sprintf("window %d", e.FirstWindow)
		}
		add := func(k, val string) { v.Evidence = append(v.Evidence, kv{k, val}) }
		if e.Table != "" {
			add("table", e.Table)
		}
		if op := findingOp(f); op != "" {
			add("op", op)
		}
		if e.Slope != 0 {
			val := fmtNum(e.Slope) + " " + e.SlopeUnit
			if e.SlopeUnit == "bytes/hour" {
				val = fmtBytes(e.Slope) + "/hour"
			}
			add("slope", val)
		}
		if e.PerKRequests != 0 {
			add("per 1,000 requests", fmtBytes(e.PerKRequests))
		}
		if e.Before != 0 || e.After != 0 {
			b, a := fmtNum(e.Before)+" "+e.Unit, fmtNum(e.After)+" "+e.Unit
			if e.Unit == "bytes" {
				b, a = fmtBytes(e.Before), fmtBytes(e.After)
			}
			add("before → after", b+" → "+a)
		}
		if e.PValue != 0 {
			add("p-value", strconv.FormatFloat(e.PValue, 'g', 3, 64))
		}
		if e.Correlation != 0 {
			add("correlation", strconv.FormatFloat(e.Correlation, 'f', 2, 64))
		}
		if len(e.Missing) > 0 {
			names := make([]string, len(e.Missing))
			for i, m := range e.Missing {
				names[i] = analysis.MissingLabel(m)
			}
			add("missing", strings.Join(names, ", "))
		}
		if e.Cause != "" {
			add("cause", strings.ReplaceAll(e.Cause, "_", " "))
		}
		if e.Thread != "" {
			add("busiest thread", e.Thread)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Notes)) {
			add(analysis.NoteLabel(k), analysis.FormatNote(k, e.Notes[k]))
		}
		out = append(out, v)
	}
	return out
}

// tableView is one page of the window table, newest first.
type tableView struct {
	Rows []tableRow
	// Cols says which probe columns the table has: each only when some
	// window of the run has its readings (a run of a target longhaul did
	// not start has no CPU or RSS; only a Go target has allocations), so
	// a column of dashes never pushes the rest off the page.
	Cols probeCols
	// GapSpan is how many columns a lost window's note spans (all but
	// window and at).
	GapSpan    int
	PageNum    int
	Pages      int
	Prev, Next string
	Merged     bool
}

type tableRow struct {
	Windows string
	// LogURL is what the target printed during the window, when kept.
	LogURL                   string
	At                       string
	Requests                 int64
	RPS, ErrorPct            float64
	Dropped                  int64
	P50, P90, P95, P99, P999 float64
	Max                      float64
	Few                      bool
	CPU, RSS, Heap, RowsRead float64
	AllocKiB, GCPer1k        float64 // per request, per 1,000 requests; NaN: no reading
	// Thread is the target's busiest thread and ThreadBusy how busy it was
	// (its CPU share where the busy time was not read; NaN: no reading).
	Thread        string
	ThreadBusy    float64
	ForcedGC, Gap bool
	Incarnation   int
}

// probeCols are the window table's optional columns.
type probeCols struct{ CPU, RSS, Heap, RowsRead, Alloc, Thread bool }

// columnsOf says which probe readings the spans have.
func columnsOf(spans []store.Span) probeCols {
	var c probeCols
	for _, sp := range spans {
		p := sp.Probes
		c.CPU = c.CPU || p.CPUMicrosPerRequest != nil
		c.RSS = c.RSS || p.RSSBytes != nil
		c.Heap = c.Heap || p.HeapBytes != nil
		c.RowsRead = c.RowsRead || p.Database != nil
		c.Alloc = c.Alloc || p.AllocBytesPerRequest != nil || p.GCPer1kRequests != nil
		c.Thread = c.Thread || p.HottestThreadCores != nil
	}
	return c
}

// width is the table's column count with these probe columns.
func (c probeCols) width() int {
	n := 12 // window, at, requests, req/s, errors, dropped, six latencies
	for _, on := range []bool{c.CPU, c.RSS, c.Heap, c.RowsRead, c.Alloc, c.Alloc, c.Thread} {
		if on {
			n++
		}
	}
	return n
}

// tablePageSize is the number of rows per page of the window table.
const tablePageSize = 50

// num is a float64 that marshals with 4 significant digits, NaN as null:
// the hover data stays small.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 4, 64), nil
}

// pointsJSON is the hover data: one entry per point of the charts, as
// columns.
type pointsJSON struct {
	I    []int   `json:"i"` // first window index
	J    []int   `json:"j"` // last window index
	W    []int   `json:"w"` // windows merged
	G    []int   `json:"g"` // lost windows among them
	T0   []num   `json:"t0"`
	T1   []num   `json:"t1"`
	N    []int64 `json:"n"` // requests: the samples behind the percentiles
	RPS  []num   `json:"rps"`
	Err  []num   `json:"err"`
	Drop []num   `json:"drop"`
	P50  []num   `json:"p50"`
	P90  []num   `json:"p90"`
	P95  []num   `json:"p95"`
	P99  []num   `json:"p99"`
	P999 []num   `json:"p999"`
	Max  []num   `json:"max"`
	CPU  []num   `json:"cpu"`
	RSS  []num   `json:"rss"`
	Heap []num   `json:"heap"`
	GC   []int   `json:"gc"`
	RR   []num   `json:"rr"`
	// AL and GCR are a Go target's KiB allocated per request and GC cycles
	// per 1,000 requests; absent when the run has none.
	AL  []num `json:"al,omitempty"`
	GCR []num `json:"gcr,omitempty"`
}
