package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// seedStore writes a finished run with a few windows into a new SQLite file.
func seedStore(t *testing.T) (dsn, runID string) {
	t.Helper()
	dsn = filepath.Join(t.TempDir(), "ui.db")
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	runID = "run-ui"
	if err := st.PutRun(ctx, store.Run{ID: runID, Name: "<b>ui</b>", Kind: "soak", Status: store.Completed, Scenario: "name: ui\n",
		CreatedAt: t0, StartedAt: t0, EndedAt: t0.Add(5 * time.Second), Incarnations: 1}); err != nil {
		t.Fatal(err)
	}
	h := window.NewHistogram()
	for us := int64(500); us < 5000; us += 7 {
		window.Record(h, us)
	}
	enc, err := window.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		w := window.Window{RunID: runID, Incarnation: 1, Index: i, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second),
			Requests: h.TotalCount(), OK: h.TotalCount(), RPS: float64(h.TotalCount()), LatencyMs: window.LatencyOf(h), Histogram: enc}
		if err := st.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	return dsn, runID
}

func TestReportHTML(t *testing.T) {
	dsn, id := seedStore(t)
	code, stdout, stderr := runCommand(t, "report", id, "--store", dsn, "--format", "html")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "<!doctype html>") || !strings.Contains(stdout, "&lt;b&gt;ui&lt;/b&gt;") || !strings.Contains(stdout, "<svg xmlns") || strings.Contains(stdout, `src="/static`) {
		t.Errorf("not a self-contained run page:\n%.400s", stdout)
	}
	if code, _, stderr := runCommand(t, "report", id, "--store", dsn, "--format", "pdf"); code != exitBadInput || !strings.Contains(stderr, "html") {
		t.Errorf("--format pdf: exit %d, %q", code, stderr)
	}
}

func TestUICommand(t *testing.T) {
	dsn, id := seedStore(t)
	var out, errOut lockedbuf.Buffer
	sig := make(chan os.Signal, 1)
	a := &app{stdout: &out, stderr: &errOut, stdin: strings.NewReader(""), getenv: func(string) string { return "" }, interrupts: sig}
	code := make(chan int, 1)
	go func() { code <- a.run(context.Background(), []string{"ui", "--addr", "127.0.0.1:0", "--store", dsn}) }()
	addr := regexp.MustCompile(`longhaul UI at (http://127\.0\.0\.1:\d+/)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no address printed: %q %q", out.String(), errOut.String())
		}
	}
	res, err := http.Get(base + "runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(body, []byte("&lt;b&gt;ui&lt;/b&gt;")) {
		t.Errorf("GET run page: %d", res.StatusCode)
	}
	sig <- os.Interrupt
	select {
	case c := <-code:
		if c != exitOK {
			t.Errorf("exit %d", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("longhaul ui did not stop on Ctrl-C")
	}

	if c, _, stderr := runCommand(t, "ui", "--addr", "0.0.0.0:0", "--store", dsn); c != exitBadInput || !strings.Contains(stderr, "token") {
		t.Errorf("non-loopback without a token: exit %d, %q", c, stderr)
	}
}

// checkLiveUI: a followed run prints its live page's address; the page is
// served while the run goes on and says it updates itself.
func checkLiveUI(t *testing.T, stderr, runID string) {
	t.Helper()
	m := regexp.MustCompile(`live charts: (http://127\.0\.0\.1:\d+/runs/\S+)`).FindStringSubmatch(stderr)
	if m == nil || !strings.HasSuffix(m[1], runID) {
		t.Fatalf("no live charts address for run %s in:\n%s", runID, stderr)
	}
	res, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(body, []byte("data-live=")) || !bytes.Contains(body, []byte(`id="chart-latency"`)) {
		t.Errorf("live page: %d, live %v", res.StatusCode, bytes.Contains(body, []byte("data-live=")))
	}
}

// TestReportNotifications: `longhaul report` lists a scheduled run's
// notifications, sent or not, and a comparison's.
func TestReportNotifications(t *testing.T) {
	dsn, id := seedStore(t)
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 8, 1, 0, 0, time.UTC)
	cmp := store.Comparison{ID: "cmp-ui", Name: "ui", Status: store.Completed, Pairs: 1, Order: "ab", CreatedAt: at}
	err = errors.Join(st.PutComparison(ctx, cmp),
		st.PutNotification(ctx, store.Notification{RunID: id, URL: "https://hooks.example/lh", Events: []string{"findings"}, OK: true, Attempts: 1, At: at}),
		st.PutNotification(ctx, store.Notification{ComparisonID: cmp.ID, URL: "https://hooks.example/lh", Events: []string{"worse"}, Attempts: 3, Error: "connection refused", At: at}),
		st.Close())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ id, want string }{
		{id, "notifications:\n  2026-12-01 08:01:00Z findings -> https://hooks.example/lh: sent\n"},
		{cmp.ID, "notifications:\n  2026-12-01 08:01:00Z worse -> https://hooks.example/lh: not sent after 3 tries: connection refused\n"},
	} {
		code, stdout, stderr := runCommand(t, "report", tt.id, "--store", dsn)
		if code != exitOK || !strings.Contains(stdout, tt.want) {
			t.Errorf("report %s: exit %d, stdout lacks %q:\n%s\n%s", tt.id, code, tt.want, stdout, stderr)
		}
		// NDJSON: one {"type":"notification"} line.
		code, stdout, stderr = runCommand(t, "report", tt.id, "--store", dsn, "--format", "json")
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var o struct{ Type, URL string }
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				t.Fatalf("report %s --format json: line %q: %v", tt.id, line, err)
			}
			if o.Type == "notification" {
				got = append(got, o.URL)
			}
		}
		if code != exitOK || !slices.Equal(got, []string{"https://hooks.example/lh"}) {
			t.Errorf("report %s --format json: exit %d, notifications to %v: %s", tt.id, code, got, stderr)
		}
	}
}
