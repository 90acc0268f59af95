package probes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// nodeTarget is examples/node-target/server.js running under node --inspect.
type nodeTarget struct {
	cmd           *exec.Cmd
	URL           string // http://127.0.0.1:PORT
	InspectorHost string
	InspectorPort int
}

var (
	listeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	debuggerRE  = regexp.MustCompile(`Debugger listening on ws://127\.0\.0\.1:(\d+)/`)
)

// startNodeTarget runs the example Node.js target with its inspector on a
// free loopback port; leakBytes > 0 makes it retain that much per request.
// It skips the test when node is not installed.
func startNodeTarget(t testing.TB, leakBytes int) *nodeTarget {
	t.Helper()
	return startNodeTargetEnv(t, fmt.Sprintf("LEAK_BYTES=%d", leakBytes))
}

// startNodeTargetEnv is startNodeTarget with the target's environment
// (LEAK_BYTES=N, LEAK_BUFFER_BYTES=N).
func startNodeTargetEnv(t testing.TB, env ...string) *nodeTarget {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the inspector probe needs a real Node.js process")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "examples", "node-target", "server.js")
	cmd := exec.Command(node, "--inspect=127.0.0.1:0", script)
	cmd.Env = append(append(os.Environ(), "PORT=0"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	nt := &nodeTarget{cmd: cmd, InspectorHost: "127.0.0.1"}
	urls := make(chan string, 1)
	ports := make(chan int, 1)
	go scanFor(stdout, listeningRE, func(m []string) { urls <- m[1] })
	go scanFor(stderr, debuggerRE, func(m []string) {
		var p int
		fmt.Sscan(m[1], &p)
		ports <- p
	})
	timeout := time.After(10 * time.Second)
	for nt.URL == "" || nt.InspectorPort == 0 {
		select {
		case nt.URL = <-urls:
		case nt.InspectorPort = <-ports:
		case <-timeout:
			t.Fatal("node target did not print its addresses within 10s")
		}
	}
	return nt
}

func scanFor(r io.Reader, re *regexp.Regexp, found func([]string)) {
	sc := bufio.NewScanner(r)
	done := false
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil && !done {
			found(m)
			done = true
		}
	}
}

// load sends n requests over one keep-alive connection.
func load(t testing.TB, url string, n int) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	for range n {
		resp, err := c.Get(url + "/items")
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func TestInspectorClientLeakVsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two node processes under load")
	}
	const (
		checkpoints = 6
		perWindow   = 500  // requests between checkpoints
		leakBytes   = 2048 // retained per request by the leaky twin
	)
	heaps := map[string][]int64{}
	for _, tc := range []struct {
		name string
		leak int
	}{{"clean", 0}, {"leaky", leakBytes}} {
		nt := startNodeTarget(t, tc.leak)
		in := NewInspectorClient(fmt.Sprintf("%s:%d", nt.InspectorHost, nt.InspectorPort))
		defer in.Close()
		ctx := context.Background()
		load(t, nt.URL, 200) // warm up (JIT, lazily built objects)
		for range checkpoints {
			load(t, nt.URL, perWindow)
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			h, err := in.HeapAfterGC(cctx)
			cancel()
			if err != nil {
				t.Fatalf("%s: HeapAfterGC: %v", tc.name, err)
			}
			heaps[tc.name] = append(heaps[tc.name], h)
		}
		t.Logf("%s heap after GC: %v", tc.name, heaps[tc.name])
	}
	growth := func(h []int64) int64 { return h[len(h)-1] - h[0] }
	// The leaky twin retains (checkpoints-1) × perWindow × leakBytes ≈ 5 MB
	// between the first and last checkpoint; the clean one should stay flat.
	wantLeak := int64((checkpoints - 1) * perWindow * leakBytes)
	if g := growth(heaps["leaky"]); g < wantLeak*8/10 {
		t.Errorf("leaky heap grew %d bytes over %d checkpoints, want at least %d (80%% of what it retained)", g, checkpoints, wantLeak*8/10)
	}
	for i := 1; i < len(heaps["leaky"]); i++ {
		if heaps["leaky"][i] <= heaps["leaky"][i-1] {
			t.Errorf("leaky heap did not grow between checkpoints %d and %d: %v", i-1, i, heaps["leaky"])
		}
	}
	if g := growth(heaps["clean"]); g > wantLeak/10 {
		t.Errorf("clean heap grew %d bytes over %d checkpoints, want under %d", g, checkpoints, wantLeak/10)
	}
}

func TestInspectorClientReconnects(t *testing.T) {
	nt := startNodeTarget(t, 0)
	in := NewInspectorClient(fmt.Sprintf("127.0.0.1:%d", nt.InspectorPort))
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := in.HeapAfterGC(ctx); err != nil {
		t.Fatal(err)
	}
	first := in.sess
	// Drop the WebSocket under the client, as a restarted inspector would.
	first.conn.CloseNow()
	<-first.done
	if _, err := in.HeapAfterGC(ctx); err != nil {
		t.Fatalf("HeapAfterGC after the connection dropped: %v", err)
	}
	if in.sess == first {
		t.Error("no new session after the connection dropped")
	}
	// The same session serves later calls.
	second := in.sess
	if _, err := in.HeapAfterGC(ctx); err != nil {
		t.Fatal(err)
	}
	if in.sess != second {
		t.Error("a healthy session was replaced")
	}
}

func TestInspectorRefused(t *testing.T) {
	// A port nothing listens on: Start reports it once, Sample leaves the
	// heap nil, nothing blocks.
	port := freeport.ForTest(t)
	var logs syncBuffer
	s := startSampler(t, Config{
		Spec:   scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: port}}},
		Logger: newTextLogger(&logs),
	})
	ps := s.Problems()
	if len(ps) != 1 || ps[0].Probe != ProbeInspector || !strings.Contains(ps[0].Message, "at start") {
		t.Fatalf("Problems() after Start = %+v, want the inspector refused at start", ps)
	}
	for i := range 3 {
		w := &window.Window{Index: i, End: time.Now(), Requests: 10}
		s.Sample(context.Background(), w)
		if w.Probes.HeapBytes != nil {
			t.Errorf("window %d: heap from a refused inspector", i)
		}
	}
	if got := strings.Count(logs.String(), "level=WARN"); got != 1 {
		t.Errorf("%d warnings, want 1:\n%s", got, logs.String())
	}
}

func TestSampleInspector(t *testing.T) {
	nt := startNodeTarget(t, 4096)
	s := startSampler(t, Config{
		TargetURL: nt.URL,
		PID:       nt.cmd.Process.Pid,
		Spec:      scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: nt.InspectorPort}}},
		Window:    4 * time.Second, // a 1 s budget for a forced GC
	})
	var heaps []int64
	for i := range 3 {
		load(t, nt.URL, 300)
		w := &window.Window{Index: i, End: time.Now(), Requests: 300}
		s.Sample(context.Background(), w)
		if w.Probes.HeapBytes == nil || !w.Probes.HeapForcedGC {
			t.Fatalf("window %d: heap %v forced %v, want a forced-GC reading (problems: %v)", i, w.Probes.HeapBytes, w.Probes.HeapForcedGC, s.Problems())
		}
		if w.Probes.CPUMicrosPerRequest == nil || *w.Probes.CPUMicrosPerRequest <= 0 {
			t.Errorf("window %d: CPU per request %v, want > 0 for node under load", i, w.Probes.CPUMicrosPerRequest)
		}
		heaps = append(heaps, *w.Probes.HeapBytes)
	}
	if !(heaps[0] < heaps[1] && heaps[1] < heaps[2]) {
		t.Errorf("heap of a leaking target = %v, want it growing", heaps)
	}
}

// TestSampleNodeOffHeap: a Node.js target retaining a Buffer per request
// grows process.memoryUsage().external and arrayBuffers by about that much
// per request while its V8 heap grows by far less; every window after the
// first has an event-loop delay reading.
func TestSampleNodeOffHeap(t *testing.T) {
	const perWindow, leak = 400, 8192
	nt := startNodeTargetEnv(t, fmt.Sprintf("LEAK_BUFFER_BYTES=%d", leak))
	s := startSampler(t, Config{
		TargetURL: nt.URL,
		PID:       nt.cmd.Process.Pid,
		Spec:      scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: nt.InspectorPort}}},
		Window:    4 * time.Second,
	})
	var ws []*window.Window
	for i := range 4 {
		load(t, nt.URL, perWindow)
		w := &window.Window{Index: i, End: time.Now(), Requests: perWindow}
		s.Sample(context.Background(), w)
		if w.Probes.Node == nil {
			t.Fatalf("window %d: no memoryUsage reading (problems: %v)", i, s.Problems())
		}
		if i > 0 && w.Probes.EventLoopDelay == nil {
			t.Errorf("window %d: no event-loop delay reading", i)
		}
		if d := w.Probes.EventLoopDelay; d != nil && (d.Count <= 0 || d.P50Ms < 0 || d.P99Ms < d.P50Ms || d.MaxMs < d.P99Ms) {
			t.Errorf("window %d: event-loop delay %+v, want samples with 0 <= p50 <= p99 <= max", i, *d)
		}
		ws = append(ws, w)
	}
	if ws[0].Probes.EventLoopDelay != nil {
		t.Errorf("window 0: event-loop delay %+v, want none (the histogram starts with the first reading)", *ws[0].Probes.EventLoopDelay)
	}
	first, last := ws[0].Probes.Node, ws[len(ws)-1].Probes.Node
	retained := int64((len(ws) - 1) * perWindow * leak)
	t.Logf("external %d → %d, arrayBuffers %d → %d, heapUsed %d → %d, rss %d → %d (retained %d)",
		first.ExternalBytes, last.ExternalBytes, first.ArrayBuffersBytes, last.ArrayBuffersBytes,
		first.HeapUsedBytes, last.HeapUsedBytes, first.RSSBytes, last.RSSBytes, retained)
	if g := last.ArrayBuffersBytes - first.ArrayBuffersBytes; g < retained*9/10 || g > retained*12/10 {
		t.Errorf("arrayBuffers grew %d bytes, want about the %d retained", g, retained)
	}
	if g := last.ExternalBytes - first.ExternalBytes; g < retained*9/10 {
		t.Errorf("external grew %d bytes, want at least 90%% of the %d retained", g, retained)
	}
	// Each retained Buffer keeps a small object on the V8 heap too (its
	// handle, the array slot): up to 11 % of the retained bytes seen. The
	// off-heap leak finding allows the heap a quarter of the growth; so does
	// this check.
	if g := *ws[len(ws)-1].Probes.HeapBytes - *ws[0].Probes.HeapBytes; g > retained/4 {
		t.Errorf("V8 heap grew %d bytes, want under a quarter of the %d retained off the heap", g, retained)
	}
}
