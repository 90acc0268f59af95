package charts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

const evilName = "<script>alert(1)</script>"

// testUI is a UI over a store with one fixture run ("run-1", named to
// test escaping, 120 windows) and a second small one.
type testUI struct {
	t   *testing.T
	st  store.Store
	srv *Server
}

func newTestUI(t *testing.T, opts Options) *testUI {
	t.Helper()
	st := sharedStore(t)
	opts.Store = st
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:8099"
	}
	return &testUI{t: t, st: st, srv: New(opts)}
}

var (
	shared     store.Store
	sharedDir  string
	sharedErr  error
	sharedOnce sync.Once
)

// sharedStore is seeded once per test binary (the tests only read it):
// run-1, named to test escaping, 120 windows; run-2, running, 6 windows.
func sharedStore(t *testing.T) store.Store {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "longhaul-charts-test-")
		sharedDir = dir
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = store.Open(context.Background(), filepath.Join(dir, "ui.db"))
		if sharedErr != nil {
			return
		}
		h := newHistograms(t)
		fixture{ID: "run-1", Name: evilName, Windows: 120}.seed(t, shared, h)
		fixture{ID: "run-2", Name: "nightly-api", Windows: 6, Status: store.Running}.seed(t, shared, h)
		seedNotifications(t, shared, store.Notification{RunID: "run-1"})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// get requests path with Host 127.0.0.1:8099 and returns the response and body.
func (u *testUI) get(path string, mod ...func(*http.Request)) (*http.Response, string) {
	u.t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099"+path, nil)
	for _, m := range mod {
		m(req)
	}
	rec := httptest.NewRecorder()
	u.srv.Handler().ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func (u *testUI) mustGet(path, contentType string) string {
	u.t.Helper()
	res, body := u.get(path)
	if res.StatusCode != http.StatusOK {
		u.t.Fatalf("GET %s: %d\n%s", path, res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, contentType) {
		u.t.Errorf("GET %s: Content-Type %q, want %s", path, ct, contentType)
	}
	if res.Header.Get("Content-Security-Policy") == "" {
		u.t.Errorf("GET %s: no Content-Security-Policy", path)
	}
	return body
}

var (
	inlineScript = regexp.MustCompile(`<script(?:\s[^>]*)?>`)
	styleAttr    = regexp.MustCompile(`\sstyle=`)
)

// checkCSPClean fails when a page has what its CSP would refuse: an inline
// script (other than a JSON data block) or a style attribute.
func checkCSPClean(t *testing.T, name, body string) {
	t.Helper()
	for _, tag := range inlineScript.FindAllString(body, -1) {
		if !strings.Contains(tag, "src=") && !strings.Contains(tag, `type="application/json"`) {
			t.Errorf("%s: inline script %s", name, tag)
		}
	}
	if styleAttr.MatchString(body) {
		t.Errorf("%s: a style attribute (refused by style-src 'self')", name)
	}
}

func TestRunsPage(t *testing.T) {
	u := newTestUI(t, Options{})
	body := u.mustGet("/", "text/html")
	checkCSPClean(t, "runs", body)
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "nightly-api", "/runs/run-1", "1 critical", "1 warning", "longhaul/demo-target:latest @3f2a9c1d5e7b", "120", "(1 lost)"} {
		if !strings.Contains(body, want) {
			t.Errorf("runs page lacks %q", want)
		}
	}
	if strings.Contains(body, evilName) {
		t.Error("runs page has the scenario name unescaped")
	}
	if i, j := strings.Index(body, "nightly-api"), strings.Index(body, "&lt;script"); i < 0 || j < 0 || i > j {
		t.Error("runs are not newest first") // run-2 was put second, same created time: id order
	}
	for _, tt := range []struct{ q, want, not string }{
		{"/?q=NIGHTLY", "nightly-api", "run-1"},
		{"/?status=running", "nightly-api", "/runs/run-1"},
		{"/?status=completed", "/runs/run-1", "nightly-api"},
		{"/?q=nomatch", "match these filters", "/runs/"},
	} {
		b := u.mustGet(tt.q, "text/html")
		if !strings.Contains(b, tt.want) || strings.Contains(b, tt.not) {
			t.Errorf("GET %s: want %q and not %q", tt.q, tt.want, tt.not)
		}
	}
	if res, _ := u.get("/?page=x"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("bad page number: %d", res.StatusCode)
	}
}

func TestRunsPagination(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	for i := range runsPageSize + 5 {
		if err := st.PutRun(ctx, store.Run{ID: "r" + string(rune('A'+i/26)) + string(rune('a'+i%26)), Name: "n", Kind: "soak", Status: store.Completed, CreatedAt: fixtureT0}); err != nil {
			t.Fatal(err)
		}
	}
	u := &testUI{t: t, st: st, srv: New(Options{Store: st, Addr: "127.0.0.1:8099"})}
	first, second := u.mustGet("/", "text/html"), u.mustGet("/?page=2", "text/html")
	if n := strings.Count(first, `href="/runs/`); n != runsPageSize {
		t.Errorf("page 1 lists %d runs, want %d", n, runsPageSize)
	}
	if n := strings.Count(second, `href="/runs/`); n != 5 {
		t.Errorf("page 2 lists %d runs, want 5", n)
	}
	if !strings.Contains(first, "older →") || !strings.Contains(second, "← newer") || !strings.Contains(second, "page 2 of 2") {
		t.Error("pager links missing")
	}
}

func TestRunPage(t *testing.T) {
	u := newTestUI(t, Options{})
	body := u.mustGet("/runs/run-1", "text/html")
	checkCSPClean(t, "run", body)
	if strings.Contains(body, evilName) {
		t.Error("run page has the scenario name unescaped")
	}
	for _, id := range []string{"throughput", "latency", "cpu", "memory", "tables", "rowsread"} {
		if !strings.Contains(body, `id="chart-`+id+`"`) {
			t.Errorf("no %s chart", id)
		}
	}
	for _, want := range []string{
		"critical", "leak", "windows 2–71", "collapse: items", // finding drawn on the charts
		"incarnation 2", "fitted 150.0 MiB/hour", "p99.9 on &lt; 1000 requests", "forced-GC checkpoint",
		"120 points, one per window", "${env:API_TOKEN}", "errors 5xx/s", "dropped starts/s",
		`<option>get</option>`, `<option>list</option>`, "lost (no measurements)",
		"<h3>Notifications</h3>", "<h3>Probe problems</h3>",
		"<strong>database</strong> failing in 2 of 119 windows (windows 30–31): <span class=\"mono\">read pg_stat_user_tables: connection refused</span>", "findings → <span class=\"mono\">https://hooks.example/longhaul</span>: sent",
		"findings, gate_failed → <span class=\"mono\">https://chat.example/webhook</span>: not sent after 3 tries: 503 Service Unavailable",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if n := strings.Count(body, "<svg xmlns"); n != 7 {
		t.Errorf("%d charts drawn, want 7 (six over time, the latency distribution)", n)
	}
	// The hover data, fetched on the first hover, has one entry per window.
	if !strings.Contains(body, `data-src="/runs/run-1/points"`) {
		t.Error("the page does not say where its hover data is")
	}
	var p pointsJSON
	if err := json.Unmarshal([]byte(u.mustGet("/runs/run-1/points", "application/json")), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.I) != 120 || p.N[0] != 2000 || p.I[119] != 119 {
		t.Errorf("hover data: %d points, n[0]=%d", len(p.I), p.N[0])
	}

	op := u.mustGet("/runs/run-1?op=list", "text/html")
	if !strings.Contains(op, "Latency of list") || !strings.Contains(op, `<option selected>list</option>`) {
		t.Error("op selector did not select list")
	}
	zoom := u.mustGet("/runs/run-1?from=10&to=20", "text/html")
	if !strings.Contains(zoom, "10 points, one per window") || !strings.Contains(zoom, "show the whole run") {
		t.Error("zoomed page is not the range at full resolution")
	}
	live := u.mustGet("/runs/run-2/live", "text/html")
	if !strings.Contains(live, `data-part="charts"`) || strings.Contains(live, "<html") {
		t.Error("live fragment is not the run's changing part")
	}
	running := u.mustGet("/runs/run-2", "text/html")
	if strings.Contains(running, "Notifications") {
		t.Error("a run that sent no notification lists notifications")
	}
	if !strings.Contains(running, `data-live="/runs/run-2/live"`) || !strings.Contains(running, "data-poll=") {
		t.Error("a running run's page does not poll")
	}
	if strings.Contains(body, "data-live=") {
		t.Error("a finished run's page polls")
	}
	var state map[string]any
	if err := json.Unmarshal([]byte(u.mustGet("/runs/run-2/state", "application/json")), &state); err != nil || state["windows"] != 6.0 || state["status"] != "running" {
		t.Errorf("state = %v, %v", state, err)
	}
	// The page carries the state it was rendered in: the poll's baseline is
	// the page, not the first answer (a window closing before the first poll
	// would otherwise never show).
	if key, _ := state["key"].(string); key == "" || !strings.Contains(running, `data-key="`+key+`"`) {
		t.Errorf("running page does not carry its state key %q", key)
	}

	for _, tt := range []struct {
		path string
		code int
	}{
		{"/runs/nope", 404}, {"/runs/run-1?from=x", 400}, {"/runs/run-1?from=20&to=10", 400},
		{"/runs/run-1?op=nope", 404}, {"/nope", 404}, {"/runs/nope/windows.csv", 404},
	} {
		if res, _ := u.get(tt.path); res.StatusCode != tt.code {
			t.Errorf("GET %s: %d, want %d", tt.path, res.StatusCode, tt.code)
		}
	}
}

// TestDownsampled: with at most 40 points, 120 windows become 15 spans of
// 8, merged exactly; zooming in gives full resolution again.
func TestDownsampled(t *testing.T) {
	u := newTestUI(t, Options{MaxPoints: 40})
	body := u.mustGet("/runs/run-1", "text/html")
	if !strings.Contains(body, "15 points, each 8 windows merged exactly") || !strings.Contains(body, "96–103") {
		t.Error("page is not downsampled to 15 spans of 8 windows")
	}
	spans, err := u.st.Spans(context.Background(), "run-1", store.SpanQuery{MaxPoints: 40})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := u.st.Windows(context.Background(), "run-1", store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range spans {
		sum, err := window.Merge(ws[sp.Index : sp.LastIndex+1])
		if err != nil {
			t.Fatal(err)
		}
		if sp.LatencyMs != sum.LatencyMs || sp.Requests != sum.Requests {
			t.Errorf("span %d–%d: %+v, want the merged windows' %+v", sp.Index, sp.LastIndex, sp.LatencyMs, sum.LatencyMs)
		}
	}
	zoom := u.mustGet("/runs/run-1?from=8&to=40", "text/html")
	if !strings.Contains(zoom, "32 points, one per window") {
		t.Error("zoom is not at full resolution")
	}
}

func TestDownloads(t *testing.T) {
	u := newTestUI(t, Options{})
	body := u.mustGet("/runs/run-1/windows.csv", "text/csv")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 121 || rows[0][1] != "index" || rows[1][1] != "0" || rows[120][1] != "119" {
		t.Errorf("CSV: %d rows (want a header and 120 windows)", len(rows))
	}
	if rows[73][4] != "true" {
		t.Errorf("window 72 (lost) gap column %q, want true", rows[73][4])
	}
	var ws []window.Window
	if err := json.Unmarshal([]byte(u.mustGet("/runs/run-1/windows.json", "application/json")), &ws); err != nil {
		t.Fatal(err)
	}
	if len(ws) != 120 || ws[5].Ops["get"].Requests == 0 || ws[5].RunID != "run-1" {
		t.Errorf("JSON: %d windows", len(ws))
	}
	if y := u.mustGet("/runs/run-1/scenario.yaml", "text/plain"); !strings.Contains(y, "${env:API_TOKEN}") {
		t.Errorf("scenario download: %q", y)
	}
	js := u.mustGet("/static/ui.js", "text/javascript")
	css := u.mustGet("/static/ui.css", "text/css")
	if len(js) < 1000 || len(css) < 1000 {
		t.Error("static files missing")
	}
}

func TestReadOnly(t *testing.T) {
	u := newTestUI(t, Options{})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		res, _ := u.get("/", func(r *http.Request) { r.Method = m })
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, res.StatusCode)
		}
	}
	if res, _ := u.get("/", func(r *http.Request) { r.Method = http.MethodHead }); res.StatusCode != http.StatusOK {
		t.Errorf("HEAD: %d", res.StatusCode)
	}
}

func TestHostCheck(t *testing.T) {
	u := newTestUI(t, Options{Addr: "127.0.0.1:8099"})
	for host, want := range map[string]int{
		"127.0.0.1:8099": 200, "localhost:8099": 200, "LOCALHOST:8099": 200, "[::1]:8099": 200,
		"evil.example:8099": 403, "127.0.0.1:9999": 403, "attacker.com": 403, "": 403,
	} {
		res, _ := u.get("/", func(r *http.Request) { r.Host = host })
		if res.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, res.StatusCode, want)
		}
	}
}

func TestToken(t *testing.T) {
	u := newTestUI(t, Options{Addr: "0.0.0.0:8099", Token: "s3cret"})
	res, _ := u.get("/")
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", res.StatusCode)
	}
	if res, _ := u.get("/?token=wrong"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", res.StatusCode)
	}
	res, _ = u.get("/runs/run-1?token=s3cret&op=get")
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs/run-1?op=get" {
		t.Errorf("right token: %d to %q, want a redirect without the token", res.StatusCode, res.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == TokenCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cookie)
	}
	res, _ = u.get("/runs/run-1", func(r *http.Request) { r.AddCookie(cookie); r.Host = "ui.example.com:8099" })
	if res.StatusCode != http.StatusOK {
		t.Errorf("with the cookie: %d", res.StatusCode)
	}
	res, _ = u.get("/", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: TokenCookie, Value: "s3cres"}) })
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong cookie: %d", res.StatusCode)
	}
	if _, err := Listen(Options{Store: u.st, Addr: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("Listen on 0.0.0.0 without a token: %v", err)
	}
}

func TestListen(t *testing.T) {
	u := newTestUI(t, Options{})
	ui, err := Listen(Options{Store: u.st, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	res, err := http.Get(ui.RunURL("run-1"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(ui.RunURL("run-1"), "http://127.0.0.1:") {
		t.Errorf("GET %s: %d", ui.RunURL("run-1"), res.StatusCode)
	}
	if _, err := Listen(Options{Store: u.st, Addr: "nonsense"}); err == nil {
		t.Error("Listen(nonsense) succeeded")
	}
	taken := strings.SplitN(ui.URL(), "/", 4)[2]
	if _, err := Listen(Options{Store: u.st, Addr: taken}); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Listen on the taken %s: %v, want EADDRINUSE", taken, err)
	}
	other, err := Listen(Options{Store: u.st, Addr: taken, AnyPortIfTaken: true})
	if err != nil {
		t.Fatalf("Listen on the taken %s with AnyPortIfTaken: %v", taken, err)
	}
	defer other.Close()
	if !strings.HasPrefix(other.URL(), "http://127.0.0.1:") || other.URL() == ui.URL() {
		t.Errorf("AnyPortIfTaken: %s, want another port of 127.0.0.1 than %s", other.URL(), ui.URL())
	}
}

func TestStandalonePage(t *testing.T) {
	u := newTestUI(t, Options{})
	var b bytes.Buffer
	if err := WriteRunPage(context.Background(), &b, u.st, "run-1"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, `src="/static`) || strings.Contains(page, `href="/static`) || strings.Contains(page, evilName) {
		t.Error("standalone page refers to the server or is unescaped")
	}
	if n := strings.Count(page, "<svg xmlns"); n != 7 {
		t.Errorf("%d charts, want 7 (six over time, the latency distribution)", n)
	}
	// The CSP meta allows exactly the inline script and style.
	js := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindStringSubmatch(page)
	css := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(page)
	if js == nil || css == nil {
		t.Fatal("no inline script or style")
	}
	for _, inline := range []string{js[1], css[1]} {
		sum := sha256.Sum256([]byte(inline))
		if h := "sha256-" + base64.StdEncoding.EncodeToString(sum[:]); !strings.Contains(page, strings.ReplaceAll(h, "+", "&#43;")) && !strings.Contains(page, h) {
			t.Errorf("CSP lacks %s", h)
		}
	}
	if err := WriteRunPage(context.Background(), io.Discard, u.st, "nope"); err == nil {
		t.Error("WriteRunPage(missing run) succeeded")
	}
}

// The window table has a probe's column only when the run has its
// readings: a target longhaul did not start has no CPU, RSS or database
// columns of dashes pushing the rest off the page.
func TestWindowTableColumns(t *testing.T) {
	heap, alloc := int64(1<<20), 4096.0
	spans := []store.Span{{Window: window.Window{Probes: window.Probes{HeapBytes: &heap}}}, {Window: window.Window{Probes: window.Probes{AllocBytesPerRequest: &alloc}}}}
	c := columnsOf(spans)
	if c != (probeCols{Heap: true, Alloc: true}) || c.width() != 15 {
		t.Errorf("columns %+v (width %d), want heap and the two allocation columns: 15", c, c.width())
	}
	if c := columnsOf(nil); c.width() != 12 {
		t.Errorf("no readings: width %d, want 12", c.width())
	}
	u := newTestUI(t, Options{})
	body := u.mustGet("/runs/run-1", "text/html")
	for _, th := range []string{"CPU µs/req", "RSS MiB", "heap MiB", "rows read/req"} {
		if !strings.Contains(body, `<th class="r">`+th+`</th>`) {
			t.Errorf("run page with %s readings lacks its column", th)
		}
	}
	if strings.Contains(body, "alloc KiB/req</th>") {
		t.Error("run page without allocation readings has their column")
	}
}
