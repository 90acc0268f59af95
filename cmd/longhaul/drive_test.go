package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

const helloScenario = `name: hello
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`

// ndjson splits drive's JSON output into window objects and the summary.
type windowLine struct {
	Index     int                `json:"index"`
	Requests  int64              `json:"requests"`
	Errors    map[string]int64   `json:"errors"`
	Dropped   int64              `json:"dropped"`
	LatencyMs map[string]float64 `json:"latency_ms"`
	Type      string             `json:"type"`
}

func parseNDJSON(t *testing.T, out string) (windows []windowLine, summary windowLine) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l windowLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("output line %q is not JSON: %v", sc.Text(), err)
		}
		if l.Type == "summary" {
			summary = l
			continue
		}
		if summary.Type != "" {
			t.Fatalf("window line after the summary: %q", sc.Text())
		}
		windows = append(windows, l)
	}
	if summary.Type != "summary" {
		t.Fatalf("no summary line in %q", out)
	}
	return windows, summary
}

// storedWindows reads back every window of the single run in dsn.
func storedWindows(t *testing.T, dsn string) (store.Run, []window.Window) {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("store has %d runs, want 1", len(runs))
	}
	ws, err := st.Windows(context.Background(), runs[0].ID, store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	return runs[0], ws
}

// checkCounts verifies requests = ok + errors in every stored window and
// that stored and printed totals agree.
func checkCounts(t *testing.T, ws []window.Window, summary windowLine) {
	t.Helper()
	var total int64
	for _, w := range ws {
		if w.Requests != w.OK+w.Errors.Total() {
			t.Errorf("window %d: requests %d != ok %d + errors %d", w.Index, w.Requests, w.OK, w.Errors.Total())
		}
		total += w.Requests
	}
	if total != summary.Requests {
		t.Errorf("stored windows hold %d requests, the printed summary %d", total, summary.Requests)
	}
}

// fixedLatencyServer answers every request after sleeping 10 ms and records
// how long its handler really took (a loaded machine oversleeps), so the
// driver's percentiles can be compared with the server's own.
type fixedLatencyServer struct {
	*httptest.Server
	mu    sync.Mutex
	hist  []int64 // handler durations, µs
	count atomic.Int64
}

func newFixedLatencyServer(t *testing.T) *fixedLatencyServer {
	s := &fixedLatencyServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		time.Sleep(10 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":1,"name":"item","ok":true}`)
		s.count.Add(1)
		s.mu.Lock()
		s.hist = append(s.hist, time.Since(start).Microseconds())
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fixedLatencyServer) percentileMs(p float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := window.NewHistogram()
	for _, us := range s.hist {
		window.Record(h, us)
	}
	return float64(h.ValueAtQuantile(p)) / 1000
}

// The driver's percentiles match what a 10 ms server took, within 1 ms.
// The server runs in this process and a loaded machine delays goroutines
// now and then, so the timing check gets up to three attempts; the counting
// checks must hold on every one.
func TestDriveFixedLatency(t *testing.T) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		misses := driveFixedLatency(t)
		if len(misses) == 0 {
			return
		}
		if attempt == attempts {
			for _, m := range misses {
				t.Error(m)
			}
			return
		}
		t.Logf("attempt %d: %s; trying again", attempt, strings.Join(misses, "; "))
	}
}

// driveFixedLatency runs one drive against a fresh 10 ms server, checks the
// counts and returns the percentiles that were more than 1 ms off.
func driveFixedLatency(t *testing.T) (misses []string) {
	srv := newFixedLatencyServer(t)
	dsn := filepath.Join(t.TempDir(), "results.db")
	r := runLonghaul(t, runOpts{}, "drive", "--scenario", writeScenario(t, helloScenario), "--target", srv.URL,
		"--duration", "2s", "--window", "1s", "--vus", "4", "--format", "json", "--store", dsn)
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	windows, summary := parseNDJSON(t, r.stdout)
	if len(windows) != 2 {
		t.Errorf("%d windows for 2s of 1s windows, want 2", len(windows))
	}
	run, stored := storedWindows(t, dsn)
	if run.Status != store.Completed || run.Kind != "drive" || run.Name != "hello" {
		t.Errorf("stored run = %s %s %s, want completed drive hello", run.Status, run.Kind, run.Name)
	}
	if len(stored) != len(windows) {
		t.Errorf("%d windows stored, %d printed", len(stored), len(windows))
	}
	checkCounts(t, stored, summary)
	if got, want := summary.Requests, srv.count.Load(); got != want {
		t.Errorf("summary requests = %d, the server answered %d", got, want)
	}
	if summary.Requests < 100 {
		t.Errorf("only %d requests in 2 s at 4 VUs against a 10 ms server", summary.Requests)
	}
	for _, p := range []struct {
		key string
		q   float64
	}{{"p50", 50}, {"p90", 90}} {
		got, want := summary.LatencyMs[p.key], srv.percentileMs(p.q)
		if got < want || got > want+1 {
			misses = append(misses, fmt.Sprintf("%s = %.3f ms; the server took %.3f ms: want within 1 ms above it", p.key, got, want))
		}
	}
	return misses
}

// hijack closes the connection without a response; with linger 0 the peer
// sees a reset.
func resetConn(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func TestDriveErrorClasses(t *testing.T) {
	tests := []struct {
		name    string
		class   string
		handler http.HandlerFunc
		// closeAfter closes the server this long into the run, so later
		// connections are refused.
		closeAfter time.Duration
	}{
		{"5xx", "5xx", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }, 0},
		{"reset", "reset", func(w http.ResponseWriter, r *http.Request) { resetConn(w) }, 0},
		{"timeout", "timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}, 0},
		{"refused", "refused", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Millisecond)
			w.WriteHeader(http.StatusOK)
		}, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			if tt.closeAfter > 0 {
				time.AfterFunc(tt.closeAfter, func() {
					// Listener first: a connection accepted between the two
					// calls would otherwise stay open and keep serving.
					srv.Listener.Close()
					srv.CloseClientConnections()
				})
			}
			scenario := writeScenario(t, helloScenario+"load: {timeout: 200ms}\n")
			dsn := filepath.Join(t.TempDir(), "results.db")
			r := runLonghaul(t, runOpts{}, "drive", "--scenario", scenario, "--target", srv.URL,
				"--duration", "1500ms", "--window", "500ms", "--vus", "2", "--format", "json", "--store", dsn)
			if r.code != exitOK {
				t.Fatalf("exit %d (a failing target is measured, not an error); stderr:\n%s", r.code, r.stderr)
			}
			_, summary := parseNDJSON(t, r.stdout)
			if summary.Errors[tt.class] == 0 {
				t.Errorf("errors.%s = 0, want > 0; errors: %v", tt.class, summary.Errors)
			}
			_, stored := storedWindows(t, dsn)
			checkCounts(t, stored, summary)
		})
	}
}

func TestDriveBadInput(t *testing.T) {
	srv := newFixedLatencyServer(t)
	hello := writeScenario(t, helloScenario)
	bad := writeScenario(t, "name: x\nops:\n  - name: a\n    wieght: 2\n    request: {path: /items}\n")
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	tests := []struct {
		name       string
		args       []string
		wantStderr string // a substring
		oneLine    bool
	}{
		{"no scenario", []string{"--target", srv.URL}, "--scenario FILE is required", true},
		{"no target", []string{"--scenario", hello}, "--target URL is required", true},
		{"missing file", []string{"--scenario", "/nonexistent.yaml", "--target", srv.URL}, "/nonexistent.yaml: cannot read", true},
		{"invalid scenario", []string{"--scenario", bad, "--target", srv.URL}, bad + `:4: unknown key "wieght"`, false},
		{"bad format", []string{"--scenario", hello, "--target", srv.URL, "--format", "xml"}, `unknown format "xml"`, true},
		{"vus and rate", []string{"--scenario", hello, "--target", srv.URL, "--vus", "2", "--rate", "10"}, "exclude each other", true},
		{"zero vus", []string{"--scenario", hello, "--target", srv.URL, "--vus", "0"}, "--vus must be ≥ 1", true},
		{"negative rate", []string{"--scenario", hello, "--target", srv.URL, "--rate", "-1"}, "--rate must be a positive", true},
		{"max-vus closed", []string{"--scenario", hello, "--target", srv.URL, "--max-vus", "5"}, "--max-vus belongs to the open model", true},
		{"window > duration", []string{"--scenario", hello, "--target", srv.URL, "--duration", "1s", "--window", "2s"}, "longer than the run", true},
		{"bad duration", []string{"--scenario", hello, "--target", srv.URL, "--duration", "soon"}, "invalid argument", true},
		{"unknown flag", []string{"--scenario", hello, "--target", srv.URL, "--colour"}, "unknown flag", true},
		{"not loopback", []string{"--scenario", hello, "--target", "http://192.0.2.1:8080"}, "not a loopback address", true},
		{"unreachable", []string{"--scenario", hello, "--target", closed}, "connection refused", true},
		{"bad url", []string{"--scenario", hello, "--target", "http://[::1"}, "--target", true},
		{"bad metrics addr", []string{"--scenario", hello, "--target", srv.URL, "--metrics-addr", "127.0.0.1:99999"}, "--metrics-addr", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "results.db")
			r := runLonghaul(t, runOpts{}, append([]string{"drive", "--store", dsn}, tt.args...)...)
			if r.code != exitBadInput {
				t.Errorf("exit %d, want %d; stderr %q", r.code, exitBadInput, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.wantStderr)
			}
			if lines := strings.Count(r.stderr, "\n"); tt.oneLine && lines != 1 {
				t.Errorf("stderr has %d lines, want one: %q", lines, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if _, err := os.Stat(dsn); err == nil {
				t.Errorf("bad input created the store %s; nothing should be recorded", dsn)
			}
		})
	}
}

var (
	timestampRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z"`)
	numberRE    = regexp.MustCompile(`"(\w+)":-?\d+(\.\d+)?([eE][+-]?\d+)?`)
)

// normalise keeps the shape of drive's JSON output: keys, nesting, line
// types, window indexes and counts; timestamps become "T" and measured
// numbers 0.
func normalise(s string) string {
	s = timestampRE.ReplaceAllString(s, `"T"`)
	return numberRE.ReplaceAllStringFunc(s, func(m string) string {
		key := numberRE.FindStringSubmatch(m)[1]
		if key == "index" || key == "windows" {
			return m
		}
		return `"` + key + `":0`
	})
}

func TestDriveJSONGolden(t *testing.T) {
	srv := newFixedLatencyServer(t)
	scenario := writeScenario(t, `name: two-ops
ops:
  - name: list
    weight: 3
    request: {method: GET, path: /items}
  - name: get
    weight: 1
    request: {method: GET, path: /items/1}
`)
	r := runLonghaul(t, runOpts{}, "drive", "--scenario", scenario, "--target", srv.URL,
		"--duration", "1s", "--window", "500ms", "--vus", "2", "--format", "json", "--store", filepath.Join(t.TempDir(), "r.db"))
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	got := []byte(normalise(r.stdout))
	path := filepath.Join("testdata", "drive-json.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("normalised JSON output differs (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", got, want)
	}
}

func TestDriveTextDefaultStore(t *testing.T) {
	srv := newFixedLatencyServer(t)
	home := t.TempDir()
	r := runLonghaul(t, runOpts{env: map[string]string{"HOME": home}}, "drive",
		"--scenario", writeScenario(t, helloScenario), "--target", srv.URL, "--duration", "1s", "--window", "500ms", "--vus", "2")
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) < 7 || !strings.Contains(lines[0], "elapsed") || !strings.Contains(lines[0], "p99.9 ms") {
		t.Fatalf("text output does not start with a header and window lines:\n%s", r.stdout)
	}
	if !strings.HasPrefix(lines[len(lines)-4], "summary: 2 windows") || !strings.HasPrefix(lines[len(lines)-2], "all ") {
		t.Errorf("text output does not end with the summary table:\n%s", r.stdout)
	}
	dsn := filepath.Join(home, ".local", "share", "longhaul", "longhaul.db")
	if _, ws := storedWindows(t, dsn); len(ws) != 2 {
		t.Errorf("%d windows in the default store, want 2", len(ws))
	}
	if !strings.Contains(r.stderr, dsn) {
		t.Errorf("stderr %q does not say where the run was stored (%s)", r.stderr, dsn)
	}
}

// Ctrl-C stops the run, still prints the summary and keeps every closed
// window in the store; the live metrics answer while it runs.
func TestDriveInterrupt(t *testing.T) {
	srv := newFixedLatencyServer(t)
	dsn := filepath.Join(t.TempDir(), "results.db")
	metricsAddr := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	sig := make(chan os.Signal, 1)
	stdout := &lockedbuf.Buffer{}
	var metricsBody string
	go func() {
		// After the first window: read the metrics, then interrupt.
		for !strings.Contains(stdout.String(), `"index":0`) {
			time.Sleep(20 * time.Millisecond)
		}
		if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			metricsBody = string(b)
		}
		sig <- os.Interrupt
	}()
	r := runLonghaul(t, runOpts{interrupts: sig, stdout: stdout}, "drive",
		"--scenario", writeScenario(t, helloScenario), "--target", srv.URL,
		"--duration", "1m", "--window", "300ms", "--vus", "2", "--format", "json", "--store", dsn, "--metrics-addr", metricsAddr)
	if r.code != exitFailed {
		t.Errorf("exit %d after Ctrl-C, want %d (cancelled); stderr:\n%s", r.code, exitFailed, r.stderr)
	}
	windows, summary := parseNDJSON(t, r.stdout)
	run, stored := storedWindows(t, dsn)
	if run.Status != store.Cancelled || run.EndedAt.IsZero() {
		t.Errorf("stored run: status %s, ended %v; want cancelled with an end time", run.Status, run.EndedAt)
	}
	if len(stored) != len(windows) || len(windows) == 0 {
		t.Errorf("%d windows printed, %d stored: want the same, at least one", len(windows), len(stored))
	}
	checkCounts(t, stored, summary)
	if !strings.Contains(metricsBody, "longhaul_requests_total") {
		t.Errorf("/metrics during the run has no longhaul_requests_total:\n%.500s", metricsBody)
	}
}

// --store takes a PostgreSQL URL as well as a SQLite file.
func TestDrivePostgresStore(t *testing.T) {
	dsn := pgtest.Start(t)
	srv := newFixedLatencyServer(t)
	r := runLonghaul(t, runOpts{}, "drive", "--scenario", writeScenario(t, helloScenario), "--target", srv.URL,
		"--duration", "1s", "--window", "500ms", "--vus", "2", "--format", "json", "--store", dsn)
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	windows, summary := parseNDJSON(t, r.stdout)
	run, stored := storedWindows(t, dsn)
	if run.Status != store.Completed || len(stored) != len(windows) {
		t.Errorf("stored run %s with %d windows; want completed with %d", run.Status, len(stored), len(windows))
	}
	checkCounts(t, stored, summary)
	if !strings.Contains(r.stderr, "postgres://postgres@") {
		t.Errorf("stderr %q does not name the store", r.stderr)
	}
}
