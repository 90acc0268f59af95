package activities

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul/window"
)

// pushSink records the bodies pushed to it.
type pushSink struct {
	mu     sync.Mutex
	bodies []string
	status int
}

func (s *pushSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rd = zr
	}
	b, _ := io.ReadAll(rd)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, string(b))
	if s.status != 0 {
		w.WriteHeader(s.status)
	}
}

func (s *pushSink) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		return ""
	}
	return s.bodies[len(s.bodies)-1]
}

func TestLivePush(t *testing.T) {
	sink := &pushSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	var logs bytes.Buffer
	p := newLivePush(srv.URL, `run-"1"`, "demo", "host-a", slog.New(slog.NewTextHandler(&logs, nil)))
	p.Metrics().GetOrCreateCounter(`longhaul_requests_total{op="get",class="ok"}`).Add(7)

	cpu, rss, alloc, gcs, share, xact := 12.5, int64(4096), 2048.5, 7.25, 0.125, 1.5
	p.Window(context.Background(), window.Window{RPS: 70, LatencyMs: window.Latency{P99: 20}, Probes: window.Probes{CPUMicrosPerRequest: &cpu, RSSBytes: &rss,
		AllocBytesPerRequest: &alloc, GCPer1kRequests: &gcs, GCCPUShare: &share, Database: &window.Database{XactPerRequest: &xact}}})
	got := sink.last()
	labels := `run="run-\"1\"",scenario="demo",host="host-a"`
	for _, want := range []string{
		`longhaul_requests_total{` + labels + `,op="get",class="ok"} 7`,
		`longhaul_windows_total{` + labels + `} 1`,
		`longhaul_window_requests_per_second{` + labels + `} 70`,
		`longhaul_window_latency_seconds{` + labels + `,quantile="0.99"} 0.02`,
		`longhaul_target_cpu_micros_per_request{` + labels + `} 12.5`,
		`longhaul_target_rss_bytes{` + labels + `} 4096`,
		`longhaul_target_alloc_bytes_per_request{` + labels + `} 2048.5`,
		`longhaul_target_gc_per_1k_requests{` + labels + `} 7.25`,
		`longhaul_target_gc_cpu_share{` + labels + `} 0.125`,
		`longhaul_database_xact_per_request{` + labels + `} 1.5`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("push lacks %s:\n%s", want, got)
		}
	}

	// A window without a CPU reading removes the gauge rather than pushing a stale value.
	p.Window(context.Background(), window.Window{RPS: 60})
	if got := sink.last(); strings.Contains(got, "longhaul_target_cpu_micros_per_request") || strings.Contains(got, "alloc_bytes") || strings.Contains(got, "xact") ||
		!strings.Contains(got, `longhaul_windows_total{`+labels+`} 2`) {
		t.Errorf("second push:\n%s", got)
	}

	// Failed pushes are logged once, and do not stop anything.
	sink.mu.Lock()
	sink.status = http.StatusServiceUnavailable
	sink.mu.Unlock()
	p.Window(context.Background(), window.Window{})
	p.Window(context.Background(), window.Window{})
	if n := strings.Count(logs.String(), "push of live metrics failed"); n != 1 {
		t.Errorf("%d failure lines, want 1:\n%s", n, logs.String())
	}
	if newLivePush("", "r", "s", "h", nil) != nil || (*livePush)(nil).Metrics() != nil {
		t.Error("no URL: want no push and no metrics set")
	}
}

func TestHostID(t *testing.T) {
	if got := HostID(HostQueueName("box-1")); got != "box-1" {
		t.Errorf("hostID = %q, want box-1", got)
	}
	if got := HostID("custom-queue"); got != "custom-queue" {
		t.Errorf("HostID(custom-queue) = %q", got)
	}
}
