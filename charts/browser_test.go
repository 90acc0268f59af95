package charts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
)

// findChromium returns a Chromium binary or "" when none is installed.
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// browser is one headless Chromium for all of a test's pages; it records
// console errors, exceptions and failed requests.
type browser struct {
	t        *testing.T
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	shots    string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := findChromium()
	if bin == "" {
		t.Skip("no Chromium found (install the chromium package): the UI is not tested in a browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.Flag("hide-scrollbars", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t, shots: os.Getenv("LONGHAUL_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	} else if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancelC := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(func() { cancelC(); cancelA() })
	b.ctx = ctx // the first Do starts the browser: no timeout on it
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{})
		return err
	}))
	if err != nil {
		t.Fatalf("start Chromium %s: %v", bin, err)
	}
	return b
}

// listen records what goes wrong in the page. It runs in the tab's event
// loop: it must return fast and run no command.
func (b *browser) listen(ev any) {
	var p string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p = fmt.Sprintf("console %s: %s", e.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		p = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			p += " " + e.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
			p = fmt.Sprintf("log %s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventLoadingFailed:
		if !e.Canceled {
			p = "request failed: " + e.ErrorText
		}
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 {
			p = fmt.Sprintf("HTTP %d for %s", e.Response.Status, e.Response.URL)
		}
	}
	if p != "" {
		b.mu.Lock()
		b.problems = append(b.problems, p)
		b.mu.Unlock()
	}
}

// do runs steps with a time limit.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action that returns a value, with a time limit.
func value[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

func js[T any](b *browser, what, expr string) T {
	b.t.Helper()
	return value(b, what, chromedp.Evaluate[T](expr))
}

// clean fails the test if anything went wrong in the browser since the last call.
func (b *browser) clean(page string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("%s: %s", page, p)
	}
	b.problems = nil
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := value(b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

// chartState is what a page's charts drew, as the browser sees it.
type chartState struct {
	ID     string  `json:"id"`
	SVG    bool    `json:"svg"`
	Paths  int     `json:"paths"`
	Series int     `json:"series"` // series paths drawn
	Width  float64 `json:"width"`  // widest series path over the data area's width
	Empty  string  `json:"empty"`
}

const chartsJS = `Array.from(document.querySelectorAll('figure.chart')).map(f => {
  const svg = f.querySelector('.plot svg');
  const ps = Array.from(f.querySelectorAll('.plot svg path'));
  const series = ps.filter(p => p.getAttribute('stroke-width') === '1.3');
  const area = svg ? (+svg.dataset.px1 - +svg.dataset.px0) : 1;
  return {id: f.dataset.chart, svg: !!svg, paths: ps.length, series: series.length,
    width: Math.max(0, ...series.map(p => p.getBBox().width)) / area,
    empty: (f.querySelector('.empty') || {}).textContent || ''};
})`

func (b *browser) charts() []chartState {
	b.t.Helper()
	return js[[]chartState](b, "read charts", chartsJS)
}

// plotPoint returns viewport coordinates of fraction fx across the data area
// of chart id (scrolled into view), at mid height.
func (b *browser) plotPoint(id string, fx float64) (x, y float64) {
	b.t.Helper()
	pos := js[[]float64](b, "locate "+id, fmt.Sprintf(`(() => { document.querySelector('#chart-%s').scrollIntoView();
	  const s = document.querySelector('#chart-%s .plot svg'); const r = s.getBoundingClientRect();
	  const x0 = +s.dataset.px0 / +s.dataset.vw, x1 = +s.dataset.px1 / +s.dataset.vw;
	  return [r.left + r.width * (x0 + (x1 - x0) * %g), r.top + r.height / 2]; })()`, id, id, fx))
	return pos[0], pos[1]
}

// hover moves the pointer over chart id and returns the tooltip's text.
func (b *browser) hover(id string, fx float64) string {
	b.t.Helper()
	x, y := b.plotPoint(id, fx)
	b.do("hover "+id, chromedp.MouseEvent(chromedp.MouseMoved, x, y), chromedp.WaitVisible(chromedp.CSS("#chart-"+id+" .tip")))
	return value(b, "tooltip "+id, chromedp.Text(chromedp.CSS("#chart-"+id+" .tip")))
}

func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	t0 := time.Now()
	b := newBrowser(t)
	t.Logf("browser up in %v", time.Since(t0))
	st := storetest.New(t)
	h := newHistograms(t)
	fixture{ID: "run-1", Name: evilName, Windows: 120}.seed(t, st, h)
	seedNotifications(t, st, store.Notification{RunID: "run-1"})
	live := fixture{ID: "run-live", Name: "live soak", Windows: 12, Window: 10 * time.Second, Status: store.Running}
	live.seed(t, st, h)
	ui, err := Listen(Options{Store: st, Addr: "127.0.0.1:0", Poll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	t.Logf("seeded in %v", time.Since(t0))

	// Runs list.
	b.do("runs page", chromedp.Navigate(ui.URL()), chromedp.WaitVisible(chromedp.CSS("table.runs")))
	if rows := js[int](b, "count runs", `document.querySelectorAll('table.runs tbody tr').length`); rows != 2 {
		t.Errorf("runs page lists %d runs, want 2", rows)
	}
	b.screenshot("runs")
	b.clean("runs page")

	// A run: every chart drawn, the escaped name shown as text, hover values.
	b.do("run page", chromedp.Navigate(ui.RunURL("run-1")), chromedp.WaitVisible(chromedp.CSS("#chart-latency svg")))
	if title := value(b, "title", chromedp.Text(chromedp.CSS("h1"))); !strings.Contains(title, evilName) {
		t.Errorf("title %q: the scenario name must show as text", title)
	}
	if n := value(b, "notifications", chromedp.Text(chromedp.CSS("ul.notifications"))); !strings.Contains(n, "sent") || !strings.Contains(n, "not sent after 3 tries: 503 Service Unavailable") {
		t.Errorf("notifications read %q, want one sent and one not sent after 3 tries", n)
	}
	cs := b.charts()
	if len(cs) != 6 {
		t.Errorf("%d charts, want 6", len(cs))
	}
	for _, c := range cs {
		if !c.SVG || c.Series < 1 || c.Width < 0.4 {
			t.Errorf("chart %s: svg %v, %d series, widest %.2f of the data area (want its series drawn across the run)", c.ID, c.SVG, c.Series, c.Width)
		}
	}
	if tip := b.hover("latency", 0.5); !regexp.MustCompile(`window (5[5-9]|6[0-5])\b`).MatchString(tip) || !strings.Contains(tip, "p99.9") || !strings.Contains(tip, "requests") {
		t.Errorf("latency hover shows %q, want a mid-run window's percentiles and requests", tip)
	}
	if tip := b.hover("memory", 0.99); !strings.Contains(tip, "post-GC heap") || !regexp.MustCompile(`window 11[5-9]\b`).MatchString(tip) || !strings.Contains(tip, "p99.9 on < 1,000") {
		t.Errorf("memory hover shows %q, want a last window's heap and its few requests", tip)
	}
	b.hover("latency", 0.5)
	b.screenshot("run")
	b.checkSummary("run page")
	b.clean("run page")

	// Zoom: drag across the throughput chart, land on the range at full resolution.
	x0, y := b.plotPoint("throughput", 0.25)
	x1, _ := b.plotPoint("throughput", 0.5)
	b.do("zoom",
		chromedp.MouseEvent(chromedp.MouseMoved, x0, y),
		chromedp.MouseEvent(chromedp.MousePressed, x0, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, x1, y, chromedp.ButtonLeft),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/runs/run-1"]`))) // "show the whole run"
	if url := value(b, "location", chromedp.Location()); !strings.Contains(url, "from=") || !strings.Contains(url, "to=") {
		t.Errorf("after a drag the page is %s, want a zoomed range", url)
	}
	for _, c := range b.charts() {
		if !c.SVG || c.Series < 1 || c.Width < 0.4 {
			t.Errorf("zoomed chart %s: %d series, widest %.2f", c.ID, c.Series, c.Width)
		}
	}
	b.screenshot("run-zoomed")
	b.clean("zoomed run page")

	// Op selector: choosing an op reloads the page with its latency chart.
	b.do("op selector", chromedp.Navigate(ui.RunURL("run-1")), chromedp.WaitVisible(chromedp.CSS("form.opsel select")),
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('form.opsel select'); s.value = 'list'; s.dispatchEvent(new Event('change')); })()`),
		chromedp.Sleep(time.Second), chromedp.WaitVisible(chromedp.CSS("#chart-latency svg")))
	if h := value(b, "latency title", chromedp.Text(chromedp.CSS("#chart-latency h3"))); h != "Latency of list" {
		t.Errorf("latency chart %q after choosing the op list", h)
	}
	b.clean("op selector")

	// Live: the open page of a running run takes in new windows without a reload.
	b.do("live page", chromedp.Navigate(ui.RunURL("run-live")), chromedp.WaitVisible(chromedp.CSS("#chart-throughput svg")))
	js[chromedp.Void](b, "mark the page", `window.__mark = 1`)
	for i := live.Windows; i < live.Windows+3; i++ {
		if err := st.PutWindow(context.Background(), live.window(h, i)); err != nil {
			t.Fatal(err)
		}
	}
	b.do("live update", chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelector('#windows tbody td').textContent === '%d'`, live.Windows+2),
		chromedp.WithPollingTimeout(20*time.Second)))
	if !js[bool](b, "same page", `window.__mark === 1`) {
		t.Error("the live page reloaded instead of updating its parts")
	}
	if tip := b.hover("throughput", 0.995); !strings.Contains(tip, fmt.Sprintf("window %d", live.Windows+2)) {
		t.Errorf("hover on the live page after the update shows %q, want the newest window", tip)
	}
	b.screenshot("run-live")
	b.clean("live page")

	// The self-contained report: opened from a file, its inline script runs
	// under its own CSP (hover works, nothing refused).
	f := filepath.Join(t.TempDir(), "report.html")
	out, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteRunPage(context.Background(), out, st, "run-1"); err != nil {
		t.Fatal(err)
	}
	out.Close()
	b.do("report file", chromedp.Navigate("file://"+f), chromedp.WaitVisible(chromedp.CSS("#chart-cpu svg")))
	if tip := b.hover("cpu", 0.1); !strings.Contains(tip, "CPU") {
		t.Errorf("report file hover shows %q", tip)
	}
	b.checkSummary("report file")
	// Its downloads are in the file: data: URLs whose CSV has a row per window.
	csvRows := js[int](b, "read the embedded CSV", `(() => { const a = [...document.querySelectorAll('a[download]')].find(a => a.textContent === 'windows.csv');
	  if (!a || !a.href.startsWith('data:text/csv;base64,')) return -1;
	  return atob(a.href.split(',')[1]).trim().split('\n').length - 1; })()`)
	if csvRows != 120 {
		t.Errorf("the report file's windows.csv has %d rows, want 120 (one per window, embedded as a data: URL)", csvRows)
	}
	b.screenshot("report-file")
	b.clean("report file")

	// A comparison and a schedule's history: the other pages a person opens.
	cmp := seedComparison(t, st)
	b.do("comparison page", chromedp.Navigate(ui.URL()+"comparisons/"+cmp), chromedp.WaitVisible(chromedp.CSS("h1")))
	if text := value(b, "comparison text", chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "<script>alert(1)</script>") ||
		!strings.Contains(text, "disturbed") || !strings.Contains(text, "p50_ms") {
		t.Errorf("comparison page lacks its difference (as text), a disturbed round or the verdict: %.300q", text)
	}
	if n := js[int](b, "count round links", `document.querySelectorAll('a[href^="/runs/cmp-1-r"]').length`); n < 4 {
		t.Errorf("comparison page links %d rounds, want 4", n)
	}
	b.screenshot("comparison")
	b.clean("comparison page")

	seedSchedule(t, st)
	b.do("schedule page", chromedp.Navigate(ui.URL()+"schedules/nightly"), chromedp.WaitVisible(chromedp.CSS(".plot svg")))
	if n := js[int](b, "count schedule charts", `[...document.querySelectorAll('.plot svg')].filter(s => s.querySelectorAll('path').length > 0).length`); n < 1 {
		t.Error("schedule page draws no chart")
	}
	if text := value(b, "schedule text", chromedp.Text(chromedp.CSS("body"))); !strings.Contains(text, "cpu_us_per_request") || !strings.Contains(text, "regression") {
		t.Errorf("schedule page lacks the CPU change point: %.300q", text)
	}
	b.screenshot("schedule")
	b.clean("schedule page")
}

// summaryState is a run page's summary as the browser shows it.
type summaryState struct {
	Tiles map[string]string   `json:"tiles"`
	Head  []string            `json:"head"`
	Rows  map[string][]string `json:"rows"`
	Dist  int                 `json:"dist"` // series paths of the distribution plot
}

// checkSummary reads the summary's tiles, its per-op percentile table and
// its distribution plot, and checks them against the fixture's ops.
func (b *browser) checkSummary(page string) {
	b.t.Helper()
	s := js[summaryState](b, "read the summary", `(() => {
	  const tiles = {}; document.querySelectorAll('#summary [data-tile]').forEach(t => tiles[t.dataset.tile] = t.querySelector('.tvalue').textContent);
	  const head = [...document.querySelectorAll('#summary table.summary thead th')].map(th => th.textContent);
	  const rows = {}; document.querySelectorAll('#summary table.summary tbody tr').forEach(tr => rows[tr.dataset.op] = [...tr.children].map(td => td.textContent));
	  const dist = document.querySelectorAll('#chart-distribution svg path[stroke-width="1.3"]').length;
	  return {tiles, head, rows, dist}; })()`)
	for _, k := range []string{"rps", "errors", "dropped", "p50", "p99", "max"} {
		if s.Tiles[k] == "" {
			b.t.Errorf("%s: no %s tile (tiles %v)", page, k, s.Tiles)
		}
	}
	if !strings.HasSuffix(s.Tiles["errors"], "%") || !strings.HasSuffix(s.Tiles["dropped"], "%") {
		b.t.Errorf("%s: error and dropped tiles %q, %q: want rates", page, s.Tiles["errors"], s.Tiles["dropped"])
	}
	if want := "op requests req/s errors p50 p90 p95 p99 p99.9 max"; strings.Join(s.Head, " ") != want {
		b.t.Errorf("%s: summary columns %q, want %q", page, strings.Join(s.Head, " "), want)
	}
	for _, op := range []string{"all", "list", "create"} {
		r := s.Rows[op]
		if len(r) != 10 {
			b.t.Errorf("%s: summary row %s is %q", page, op, r)
			continue
		}
		// p50 ≤ p90 ≤ p95 ≤ p99 ≤ p99.9 ≤ max, all read from the page.
		prev := 0.0
		for i := 4; i < 10; i++ {
			var v float64
			if _, err := fmt.Sscan(strings.ReplaceAll(r[i], ",", ""), &v); err != nil || v < prev || v <= 0 {
				b.t.Errorf("%s: op %s percentile %s = %q out of order", page, op, s.Head[i], r[i])
			}
			prev = v
		}
	}
	if s.Dist < 2 {
		b.t.Errorf("%s: the latency distribution draws %d series, want the run's and its ops'", page, s.Dist)
	}
}
