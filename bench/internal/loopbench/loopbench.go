// Package loopbench is what the driver's CPU-cost benchmarks (bench/driver and
// bench/protocols) share: a loopback target that answers every request with
// the same 40-byte JSON body, started pinned to one CPU, and load generators
// run pinned to another with the CPU time of their process measured.
//
//  1. The target's main serves with Serve(srv, ln), handling "/" with
//     ServeBody.
//  2. The benchmark starts it with StartTarget(bin, cpu) and gets its address.
//  3. It runs each generator with RunPinned (or Wrk for wrk) and divides the
//     CPU seconds by the requests the generator reports.
package loopbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Body is the 40-byte JSON body every request to a target's "/" gets.
var Body = []byte(`{"id":12345,"name":"longhaul","ok":true}`)

// ServeBody writes Body with its headers set directly (no canonicalising, no
// content sniffing), so that the target spends as little as it can per
// request. A test holds Content-Length to len(Body).
func ServeBody(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{"40"}
	_, _ = w.Write(Body)
}

// Serve prints "listening on ADDR" (the line StartTarget waits for) and
// serves on ln until SIGINT or SIGTERM.
func Serve(srv *http.Server, ln net.Listener) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("listening on %s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// StartTarget runs the target binary bin pinned to the CPU list cpu
// (taskset -c), on a free loopback port, with args after -addr; it returns
// the address the target printed and a stop function that ends it.
func StartTarget(bin, cpu string, args ...string) (string, func(), error) {
	cmd := exec.Command("taskset", append([]string{"-c", cpu, bin, "-addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start target: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("target did not start: %w", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		stop()
		return "", nil, fmt.Errorf("target said %q", line)
	}
	return addr, stop, nil
}

// Prepare checks that taskset, wrk and go are installed and builds the Go
// packages pkgs (paths from the repository root, where a benchmark runs)
// into a new temporary directory, each named by its last element. The
// caller removes the directory.
func Prepare(logf func(format string, a ...any), pkgs ...string) (dir string, err error) {
	for _, tool := range []string{"taskset", "wrk", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is needed (wrk: apt-get install -y wrk): %w", tool, err)
		}
	}
	dir, err = os.MkdirTemp("", "longhaul-loopbench-")
	if err != nil {
		return "", err
	}
	for _, pkg := range pkgs {
		logf("building %s", pkg)
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(pkg)), pkg).CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("build %s (run from the repository root): %v\n%s", pkg, err, out)
		}
	}
	return dir, nil
}

// RunPinned runs argv pinned to the CPU list cpu, with env added to this
// process's environment; it returns argv's stdout and the CPU seconds (user +
// system) of its process from the kernel's accounting (wait4 rusage).
func RunPinned(cpu string, env []string, argv ...string) ([]byte, float64, error) {
	cmd := exec.Command("taskset", append([]string{"-c", cpu}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("%s: %v: %s", argv[0], err, errb.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, 0, errors.New("no rusage")
	}
	return out.Bytes(), time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), nil
}

// RunnerSummary is bench/driver/runner's last output line.
type RunnerSummary struct {
	Requests        int64   `json:"requests"`
	Errors          int64   `json:"errors"`
	Seconds         float64 `json:"seconds"`
	RPS             float64 `json:"rps"`
	UserSeconds     float64 `json:"user_seconds"`
	SysSeconds      float64 `json:"sys_seconds"`
	CPUMicrosPerReq float64 `json:"cpu_us_per_request"`
	RSSBytes        int64   `json:"rss_bytes"`
	P50Ms           float64 `json:"p50_ms"`
	P99Ms           float64 `json:"p99_ms"`
	// WebSocket scenarios: data messages, pings and the most sessions open
	// at a window's close.
	MessagesIn      int64   `json:"messages_in,omitempty"`
	MessagesOut     int64   `json:"messages_out,omitempty"`
	Pings           int64   `json:"pings,omitempty"`
	PongTimeouts    int64   `json:"pong_timeouts,omitempty"`
	SessionsOpenMax int64   `json:"sessions_open_max,omitempty"`
	PingP99Ms       float64 `json:"ping_p99_ms,omitempty"`
	// TLS handshakes (https targets).
	Handshakes int64 `json:"tls_handshakes,omitempty"`
}

// ReadRunnerSummary reads the summary from the last line of the runner's
// output.
func ReadRunnerSummary(out []byte) (RunnerSummary, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	var s RunnerSummary
	if err := json.Unmarshal(lines[len(lines)-1], &s); err != nil {
		return s, fmt.Errorf("cannot read the runner's output: %v\n%s", err, out)
	}
	return s, nil
}

// RunnerWindow is the line bench/driver/runner prints per window with
// -windows.
type RunnerWindow struct {
	Index     int     `json:"index"`
	ElapsedS  float64 `json:"elapsed_s"`
	Requests  int64   `json:"requests"`
	RPS       float64 `json:"rps"`
	Errors    int64   `json:"errors"`
	RSSBytes  int64   `json:"rss_bytes"`
	HeapBytes uint64  `json:"heap_inuse_bytes"`
}

// WrkRun is what one run of wrk measured.
type WrkRun struct {
	Requests   int64
	Seconds    float64 // wrk's own measuring time
	CPUSeconds float64 // user + system time of wrk's process
}

var wrkRequests = regexp.MustCompile(`(\d+) requests in ([\d.]+)(us|ms|s|m)`)

// Wrk runs wrk with one thread and conns connections against url for d
// (whole seconds), pinned to cpu. A run with non-2xx answers or socket
// errors is an error: its requests would not be comparable.
func Wrk(cpu string, conns int, url string, d time.Duration) (WrkRun, error) {
	out, cpuSeconds, err := RunPinned(cpu, nil, "wrk", "-t1", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()))+"s", url)
	if err != nil {
		return WrkRun{}, err
	}
	m := wrkRequests.FindSubmatch(out)
	if m == nil {
		return WrkRun{}, fmt.Errorf("cannot read wrk's output:\n%s", out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) || bytes.Contains(out, []byte("Socket errors")) {
		return WrkRun{}, fmt.Errorf("wrk saw errors:\n%s", out)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	v, _ := strconv.ParseFloat(string(m[2]), 64)
	unit := map[string]float64{"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60}[string(m[3])]
	return WrkRun{Requests: n, Seconds: v * unit, CPUSeconds: cpuSeconds}, nil
}

// LoadAvg is the 1, 5 and 15-minute load averages as the kernel writes them,
// or "?": a report names the load its figures were measured under.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
