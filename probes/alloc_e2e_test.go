package probes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestAllocPerRequestDemoTarget runs the real demo target (its metrics page
// is VictoriaMetrics/metrics') twice, without and with DEMO_ALLOC_BYTES=N,
// sends the same few hundred requests to each, and checks that one window's
// alloc_bytes_per_request grows by N: at least N, and within a few per cent
// of N above the baseline.
func TestAllocPerRequestDemoTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo target")
	}
	const (
		n        = 64 << 10
		requests = 300
	)
	bin := filepath.Join(t.TempDir(), "demo-target")
	build := exec.Command("go", "build", "-o", bin, "./examples/demo-target")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the demo target: %v\n%s", err, out)
	}
	base := demoAllocWindow(t, bin, 0, requests)
	with := demoAllocWindow(t, bin, n, requests)
	for _, c := range []struct {
		name string
		p    window.Probes
	}{{"baseline", base}, {fmt.Sprintf("DEMO_ALLOC_BYTES=%d", n), with}} {
		p := c.p
		t.Logf("%s: %v bytes allocated per request, %v GC cycles per 1k requests, GC CPU %v s = %v of the process's %v s",
			c.name, deref(p.AllocBytesPerRequest), deref(p.GCPer1kRequests), deref(p.GCCPUSeconds), deref(p.GCCPUShare), deref(p.CPUSeconds))
		if p.AllocBytesPerRequest == nil || p.GCPer1kRequests == nil || p.GCCPUSeconds == nil {
			t.Fatalf("%s: no allocation or GC reading: %+v", c.name, p)
		}
	}
	got, baseline := *with.AllocBytesPerRequest, *base.AllocBytesPerRequest
	if got < n {
		t.Errorf("alloc_bytes_per_request %.0f with DEMO_ALLOC_BYTES=%d, want at least %d", got, n, n)
	}
	// The scrape itself is a request to the demo target, which allocates N
	// too: one in `requests`, so ~0.3 % of N on top.
	if extra, tol := got-baseline-n, 0.05*n; extra < -tol || extra > tol {
		t.Errorf("alloc_bytes_per_request %.0f = baseline %.0f + %d + %.0f; want within ±%.0f of baseline + N", got, baseline, n, extra, tol)
	}
	if *with.GCPer1kRequests <= *base.GCPer1kRequests {
		t.Errorf("GC cycles per 1k requests %v with N, %v without: want more with", *with.GCPer1kRequests, *base.GCPer1kRequests)
	}
	if with.GCCPUShare == nil {
		t.Error("no GC CPU share: the process probe and the page's go_gc_cpu_seconds_total were both read")
	}
}

// demoAllocWindow starts the demo target with DEMO_ALLOC_BYTES=alloc, samples
// one window in which it serves requests GET /health, and returns its probes.
func demoAllocWindow(t *testing.T, bin string, alloc, requests int) window.Probes {
	t.Helper()
	port := freeport.ForTest(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "DEMO_ALLOC_BYTES="+strconv.Itoa(alloc))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the demo target: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 2 * time.Second}
	get := func() error {
		resp, err := client.Get(url + "/health")
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	for deadline := time.Now().Add(5 * time.Second); get() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the demo target did not answer within 5 s")
		}
	}
	s, err := New(Config{TargetURL: url, PID: cmd.Process.Pid, Spec: scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}},
		Window: 4 * time.Second, MaxSampleTime: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	s.Start(context.Background())
	for range requests {
		if err := get(); err != nil {
			t.Fatal(err)
		}
	}
	w := &window.Window{Index: 0, Start: start, End: time.Now(), Requests: int64(requests)}
	s.Sample(context.Background(), w)
	if ps := s.Problems(); len(ps) > 0 {
		t.Fatalf("probe problems: %v", ps)
	}
	return w.Probes
}
