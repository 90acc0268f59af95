package probes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

func ptr[T any](v T) *T { return &v }

func TestNewConfigErrors(t *testing.T) {
	target := "http://127.0.0.1:8080"
	tests := []struct {
		name string
		cfg  Config
		want string // in the error message
	}{
		{
			name: "bad metric name",
			cfg:  Config{TargetURL: target, Spec: scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{Name: "go-heap"}}}},
			want: `probes.heap.metric.name "go-heap": not a Prometheus metric name`,
		},
		{
			name: "metric path without slash",
			cfg:  Config{TargetURL: target, Spec: scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{Path: "metrics"}}}},
			want: `probes.heap.metric.path "metrics": must start with /`,
		},
		{
			name: "empty heap section",
			cfg:  Config{TargetURL: target, Spec: scenarios.Probes{Heap: &scenarios.Heap{}}},
			want: "probes.heap: set at least one of metric, gc_hook, inspector",
		},
		{
			name: "heap metric without target URL",
			cfg:  Config{Spec: scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}}},
			want: "need the target's http URL",
		},
		{
			name: "negative gc hook every",
			cfg:  Config{TargetURL: target, Spec: scenarios.Probes{Heap: &scenarios.Heap{GCHook: &scenarios.GCHook{Every: -1}}}},
			want: "probes.heap.gc_hook.every -1: must be at least 1",
		},
		{
			name: "inspector port out of range",
			cfg:  Config{Spec: scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: 70000}}}},
			want: "probes.heap.inspector.port 70000: must be 1..65535",
		},
		{
			name: "inspector off this host",
			cfg:  Config{Spec: scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Host: "10.0.0.5"}}}},
			want: `probes.heap.inspector.host "10.0.0.5": must be a loopback address`,
		},
		{
			name: "process asked for a bare URL",
			cfg:  Config{TargetURL: target, Spec: scenarios.Probes{Process: ptr(true)}},
			want: "probes.process: the target is not a process longhaul runs",
		},
		{
			name: "database asked without one",
			cfg:  Config{Spec: scenarios.Probes{Database: &scenarios.DatabaseProbe{Postgres: ptr(true)}}},
			want: "probes.database: there is no database to sample",
		},
		{
			name: "unparsable DSN",
			cfg:  Config{DatabaseURL: "postgres://[::1"},
			want: "probes.database: database probe: parse dsn",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("New succeeded, want an error containing %q", tt.want)
			}
			if !errors.Is(err, ErrBadConfig) {
				t.Errorf("err = %v, want it to wrap ErrBadConfig", err)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line containing %q", err, tt.want)
			}
		})
	}
}

func TestNewEnabledProbes(t *testing.T) {
	target := "http://127.0.0.1:8080"
	allHeap := &scenarios.Heap{Metric: &scenarios.HeapMetric{}, GCHook: &scenarios.GCHook{}, Inspector: &scenarios.Inspector{}}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "bare URL, nothing asked", cfg: Config{TargetURL: target}, want: []string{}},
		{name: "local process by default", cfg: Config{TargetURL: target, PID: os.Getpid()}, want: []string{ProbeProcess}},
		{name: "process turned off", cfg: Config{PID: os.Getpid(), Spec: scenarios.Probes{Process: ptr(false)}}, want: []string{}},
		{name: "database by default", cfg: Config{DatabaseURL: "postgres://u@127.0.0.1/db"}, want: []string{ProbeDatabase}},
		{name: "database turned off", cfg: Config{DatabaseURL: "postgres://u@127.0.0.1/db", Spec: scenarios.Probes{Database: &scenarios.DatabaseProbe{Postgres: ptr(false)}}}, want: []string{}},
		{
			name: "everything",
			cfg:  Config{TargetURL: target, PID: os.Getpid(), DatabaseURL: "postgres://u@127.0.0.1/db", Spec: scenarios.Probes{Heap: allHeap}},
			want: []string{ProbeProcess, ProbeMetric, ProbeGCHook, ProbeInspector, ProbeDatabase},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Probes(); !slices.Equal(got, tt.want) {
				t.Errorf("Probes() = %v, want %v", got, tt.want)
			}
		})
	}
}

// fakeTarget serves a heap gauge (which grows by 1,000 per scrape) and a GC
// hook (answering 42,000). Broken makes both answer 500; Hang makes them
// block until the request is cancelled.
type fakeTarget struct {
	*httptest.Server
	scrapes, gcs atomic.Int64
	broken, hang atomic.Bool
}

func newFakeTarget(t testing.TB) *fakeTarget {
	f := &fakeTarget{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.hang.Load() {
			<-r.Context().Done()
			return
		}
		if f.broken.Load() {
			http.Error(w, "broken", 500)
			return
		}
		switch r.URL.Path {
		case "/metrics":
			n := f.scrapes.Add(1)
			fmt.Fprintf(w, "# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes %d\n", 1000*n)
		case "/debug/gc":
			f.gcs.Add(1)
			fmt.Fprint(w, `{"heap_bytes": 42000}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// startSampler makes a Sampler of cfg, starts it, and closes it when the
// test ends; a config New refuses ends the test.
func startSampler(t *testing.T, cfg Config) *Sampler {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Start(context.Background())
	return s
}

func win(i int, requests int64) *window.Window {
	end := time.Now()
	return &window.Window{Index: i, Start: end.Add(-time.Second), End: end, Requests: requests}
}

func TestSampleHeapSources(t *testing.T) {
	f := newFakeTarget(t)
	s := startSampler(t, Config{
		TargetURL: f.URL,
		Spec:      scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}, GCHook: &scenarios.GCHook{Every: 3}}},
		Window:    10 * time.Second,
		Logger:    slog.New(slog.DiscardHandler),
	})
	type reading struct {
		heap   int64
		forced bool
	}
	var got []reading
	for i := range 6 {
		w := win(i, 100)
		s.Sample(context.Background(), w)
		if w.Probes.HeapBytes == nil {
			t.Fatalf("window %d: no heap reading", i)
		}
		got = append(got, reading{*w.Probes.HeapBytes, w.Probes.HeapForcedGC})
	}
	// Start scraped once (1000); windows scrape 2000, 3000, ...; windows 2
	// and 5 are GC checkpoints (every 3), whose forced reading wins.
	want := []reading{{2000, false}, {3000, false}, {42000, true}, {5000, false}, {6000, false}, {42000, true}}
	if !slices.Equal(got, want) {
		t.Errorf("heap readings = %v, want %v", got, want)
	}
	if got, want := f.gcs.Load(), int64(2); got != want {
		t.Errorf("GC hook called %d times, want %d", got, want)
	}
	if len(s.Problems()) != 0 {
		t.Errorf("Problems() = %v, want none", s.Problems())
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer = lockedbuf.Buffer

func TestSampleFailurePolicy(t *testing.T) {
	f := newFakeTarget(t)
	f.broken.Store(true)
	var logs syncBuffer
	s := startSampler(t, Config{
		TargetURL: f.URL,
		Spec:      scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}},
		Window:    10 * time.Second,
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
	})
	for i := range 5 {
		w := win(i, 100)
		s.Sample(context.Background(), w)
		if w.Probes.HeapBytes != nil {
			t.Fatalf("window %d: heap = %d from a broken endpoint, want nil", i, *w.Probes.HeapBytes)
		}
	}
	if got, want := strings.Count(logs.String(), "level=WARN"), 1; got != want {
		t.Errorf("%d warnings over 6 failures, want %d:\n%s", got, want, logs.String())
	}
	ps := s.Problems()
	if len(ps) != 1 || ps[0].Probe != ProbeMetric || ps[0].Failures != 6 || !strings.Contains(ps[0].Message, "status 500") {
		t.Errorf("Problems() = %+v, want one heap.metric problem with 6 failures and the status", ps)
	}

	f.broken.Store(false)
	w := win(5, 100)
	s.Sample(context.Background(), w)
	if w.Probes.HeapBytes == nil {
		t.Error("no heap reading after the endpoint recovered")
	}
	if !strings.Contains(logs.String(), "probe recovered") {
		t.Errorf("no recovery line in the log:\n%s", logs.String())
	}
	if ps := s.Problems(); len(ps) != 0 {
		t.Errorf("Problems() after recovery = %v, want none", ps)
	}
}

func TestSampleBoundedTime(t *testing.T) {
	f := newFakeTarget(t)
	s, err := New(Config{
		TargetURL:     f.URL,
		Spec:          scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}, GCHook: &scenarios.GCHook{Every: 1}}},
		MaxSampleTime: 100 * time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f.hang.Store(true)
	for i := range 3 {
		w := win(i, 100)
		start := time.Now()
		s.Sample(context.Background(), w)
		if d := time.Since(start); d > 300*time.Millisecond {
			t.Errorf("window %d: Sample took %v with a hanging target, budget 100ms", i, d)
		}
		if w.Probes.HeapBytes != nil {
			t.Errorf("window %d: heap reading from a hanging target", i)
		}
	}
	if got := len(s.Problems()); got != 2 {
		t.Errorf("%d problems, want 2 (metric and GC hook): %v", got, s.Problems())
	}
}

func TestSampleBudget(t *testing.T) {
	tests := []struct {
		name   string
		max    time.Duration
		window time.Duration
		w      time.Duration
		want   time.Duration
	}{
		{name: "long windows: the cap", window: 30 * time.Second, want: time.Second},
		{name: "3s windows: a quarter", window: 3 * time.Second, want: 750 * time.Millisecond},
		{name: "from the window itself", w: 2 * time.Second, want: 500 * time.Millisecond},
		{name: "tiny windows: the floor", window: 100 * time.Millisecond, want: minSampleTime},
		{name: "custom cap", max: 200 * time.Millisecond, window: 10 * time.Second, want: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Window: tt.window, MaxSampleTime: tt.max})
			if err != nil {
				t.Fatal(err)
			}
			end := time.Now()
			if got := s.budget(&window.Window{Start: end.Add(-tt.w), End: end}); got != tt.want {
				t.Errorf("budget = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSampleProcess(t *testing.T) {
	c := helperCmd("idle")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Process.Kill()
	// Sampling before the helper is running can read a process that is
	// still inside execve, whose new address space has no resident pages
	// yet (RSS 0, seen once in CI); wait until it says it is running.
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("idle helper said %q, want ready", line)
	}
	s, err := New(Config{PID: c.Process.Pid, Window: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Without Start, the first window has no baseline: RSS but no CPU delta.
	w := win(0, 1000)
	s.Sample(context.Background(), w)
	if w.Probes.RSSBytes == nil || *w.Probes.RSSBytes <= 0 {
		t.Fatalf("RSS = %v, want > 0", w.Probes.RSSBytes)
	}
	if w.Probes.CPUSeconds != nil {
		t.Errorf("CPU delta %v in the first window without Start, want nil", *w.Probes.CPUSeconds)
	}
	w = win(1, 1000)
	s.Sample(context.Background(), w)
	if w.Probes.CPUSeconds == nil || w.Probes.CPUMicrosPerRequest == nil {
		t.Fatalf("no CPU reading in the second window: %+v", w.Probes)
	}
	if cpu := *w.Probes.CPUSeconds; cpu < 0 || cpu > 0.1 {
		t.Errorf("idle process used %.3f s of CPU in a window", cpu)
	}
	if got, want := *w.Probes.CPUMicrosPerRequest, *w.Probes.CPUSeconds*1e6/1000; got != want {
		t.Errorf("CPU µs per request = %v, want %v", got, want)
	}
	w = win(2, 0)
	s.Sample(context.Background(), w)
	if w.Probes.CPUSeconds == nil || w.Probes.CPUMicrosPerRequest != nil {
		t.Errorf("window without requests: CPU %v, per request %v; want a CPU reading and no per-request figure", w.Probes.CPUSeconds, w.Probes.CPUMicrosPerRequest)
	}

	// The target dies: readings stop, the sampler does not.
	c.Process.Kill()
	c.Wait()
	w = win(3, 1000)
	s.Sample(context.Background(), w)
	if w.Probes.RSSBytes != nil || w.Probes.CPUSeconds != nil {
		t.Errorf("readings from a dead process: %+v", w.Probes)
	}
	if ps := s.Problems(); len(ps) != 1 || !strings.Contains(ps[0].Message, ErrProcessGone.Error()) {
		t.Errorf("Problems() = %+v, want the process gone", ps)
	}
}

func TestSampleAfterClose(t *testing.T) {
	f := newFakeTarget(t)
	s, err := New(Config{TargetURL: f.URL, Spec: scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	w := win(0, 1)
	s.Sample(context.Background(), w)
	if w.Probes.HeapBytes != nil {
		t.Error("Sample after Close filled the window")
	}
}

func ExampleSampler() {
	// A target exposing the live heap after GC as a Prometheus gauge.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "go_gc_heap_live_bytes 5.6623104e+07")
	}))
	defer target.Close()

	s, err := New(Config{
		Spec:      scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}},
		TargetURL: target.URL,
		Window:    10 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	s.Start(context.Background())

	w := window.Window{Index: 0, End: time.Now(), Requests: 1000}
	s.Sample(context.Background(), &w)
	fmt.Println(*w.Probes.HeapBytes, w.Probes.HeapForcedGC)
	// Output: 56623104 false
}
