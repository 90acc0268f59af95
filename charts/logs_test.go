package charts

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
)

// TestRunPageLogs: a run whose processes' output was kept shows, under its
// findings, a link to each and the last lines of the target's latest
// incarnation; each link serves the whole text. A run without kept output
// shows no such part.
func TestRunPageLogs(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	f, h := fixture{ID: "run-l", Name: "api", Windows: 4}, newHistograms(t)
	f.seed(t, st, h)
	put := func(inc int, source string, lines int) {
		var text bytes.Buffer
		for i := range lines {
			fmt.Fprintf(&text, "%s %d line %d <b>\n", source, inc, i)
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(text.Bytes())
		zw.Close()
		if err := st.PutLog(ctx, store.TargetLog{RunID: "run-l", Incarnation: inc, Source: source, Bytes: int64(text.Len()), Data: gz.Bytes()}); err != nil {
			t.Fatal(err)
		}
	}
	put(1, "target", 5)
	put(2, "target", 50)
	put(2, "database", 3)

	u := &testUI{t: t, st: st, srv: New(Options{Store: st, Addr: "127.0.0.1:8099"})}
	body := u.mustGet("/runs/run-l", "text/html")
	checkCSPClean(t, "run", body)
	for _, want := range []string{
		"<h3>Output kept</h3>",
		`href="/runs/run-l/logs/target?incarnation=2">target, incarnation 2</a>`,
		`href="/runs/run-l/logs/database?incarnation=2">database, incarnation 2</a>`,
		"the target's last 20 lines",
		"target 2 line 49 &lt;b&gt;", // escaped
		"target 2 line 30 &lt;b&gt;",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	for _, not := range []string{"target 2 line 29 ", "target 1 line 4 "} {
		if strings.Contains(body, not) {
			t.Errorf("run page shows %q: only the latest incarnation's last 20 lines", not)
		}
	}
	whole := u.mustGet("/runs/run-l/logs/target?incarnation=2", "text/plain")
	if n := strings.Count(whole, "\n"); n != 50 || !strings.HasPrefix(whole, "target 2 line 0 <b>") {
		t.Errorf("the target's log: %d lines, starting %.30q; want all 50", n, whole)
	}
	for path, code := range map[string]int{
		"/runs/run-l/logs/target?incarnation=3": http.StatusNotFound,
		"/runs/run-l/logs/secrets":              http.StatusBadRequest,
		"/runs/run-l/logs/target?incarnation=x": http.StatusBadRequest,
	} {
		if res, _ := u.get(path); res.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, res.StatusCode, code)
		}
	}
	fixture{ID: "run-n", Name: "quiet", Windows: 2}.seed(t, st, h)
	if other := u.mustGet("/runs/run-n", "text/html"); strings.Contains(other, "Output kept") {
		t.Error("a run without kept output shows an output part")
	}
}

// TestRunPageWindowLines: a crash finding shows what the target printed
// during its window, the window table links each window whose lines were
// kept to them, and the link serves that window's lines only.
func TestRunPageWindowLines(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	f, h := fixture{ID: "run-w", Name: "api", Windows: 4}, newHistograms(t)
	f.seed(t, st, h)
	text := "window 1 line\nwindow 2 <last words>\npanic: boom\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	w2 := strings.Index(text, "window 2")
	if err := st.PutLog(ctx, store.TargetLog{RunID: "run-w", Incarnation: 1, Source: "target", Bytes: int64(len(text)), Data: gz.Bytes(),
		Windows: []store.LogWindow{{Index: 1, From: 0, To: w2}, {Index: 2, From: w2, To: len(text)}}}); err != nil {
		t.Fatal(err)
	}
	crash := analysis.Finding{Kind: analysis.KindCrash, Severity: analysis.Critical, Incarnation: 1, Summary: "the target was killed",
		Evidence: analysis.Evidence{FirstWindow: 2, LastWindow: 2, Output: []string{"panic: boom"}}}
	if err := st.PutFindings(ctx, "run-w", []analysis.Finding{crash}); err != nil {
		t.Fatal(err)
	}

	u := &testUI{t: t, st: st, srv: New(Options{Store: st, Addr: "127.0.0.1:8099"})}
	body := u.mustGet("/runs/run-w", "text/html")
	checkCSPClean(t, "run", body)
	for _, want := range []string{
		"printed during window 2 (2 lines)",
		"window 2 &lt;last words&gt;\npanic: boom\n",
		`<a href="/runs/run-w/logs/target?window=2">as text</a>`,
		`<a href="/runs/run-w/logs/target?window=1" title="what the target printed during this window">1</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(body, `logs/target?window=3"`) {
		t.Error("window 3, whose lines were not kept, is linked")
	}
	if got := u.mustGet("/runs/run-w/logs/target?window=2", "text/plain"); got != "window 2 <last words>\npanic: boom\n" {
		t.Errorf("window 2's lines = %q", got)
	}
	if res, _ := u.get("/runs/run-w/logs/target?window=3"); res.StatusCode != http.StatusNotFound {
		t.Errorf("window 3's lines: %d, want 404", res.StatusCode)
	}
}
