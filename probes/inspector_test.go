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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the inspector probe needs a real Node.js process")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "examples", "node-target", "server.js")
	cmd := exec.Command(node, "--inspect=127.0.0.1:0", script)
	cmd.Env = append(os.Environ(), "PORT=0", fmt.Sprintf("LEAK_BYTES=%d", leakBytes))
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
	port := freePort(t)
	var logs syncBuffer
	s, err := New(Config{
		Spec:   scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: port}}},
		Logger: newTextLogger(&logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Start(context.Background())
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
	s, err := New(Config{
		TargetURL: nt.URL,
		PID:       nt.cmd.Process.Pid,
		Spec:      scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: nt.InspectorPort}}},
		Window:    4 * time.Second, // a 1 s budget for a forced GC
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Start(context.Background())
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
