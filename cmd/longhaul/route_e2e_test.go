package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
)

// End-to-end tests of the docker route (issue 9 §4): the demo soak in
// containers (TestDemoSoakDocker) drives its target inside the target
// container's network namespace, so docker-proxy, which relays the
// target's published port, does no work during the soak; a worker without
// CAP_SYS_ADMIN falls back to the published port, says so in the record,
// and its soak works too — and there the same watcher sees docker-proxy
// busy, so its silence on the netns route means something.

// routeOf is the route part of a run's recorded environment.
type routeOf struct {
	Route string `json:"route"`
	NetNS *struct {
		Path, ID, URL string
	} `json:"netns"`
	Notes []string `json:"notes"`
}

// proxyWatch follows the docker-proxy of the demo target's published port
// in the run whose target has LONGHAUL_TEST_MARK=mark in its environment,
// from when it first sees it until stop: the CPU it used meanwhile.
type proxyWatch struct {
	mark string
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	pid   int
	first int64 // CPU clock ticks at first sight
	last  int64
}

func watchProxy(t *testing.T, mark string) *proxyWatch {
	t.Helper()
	w := &proxyWatch{mark: mark, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	t.Cleanup(func() { w.finish() })
	return w
}

func (w *proxyWatch) loop() {
	defer close(w.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var container string
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		if container == "" {
			container = findMarked(w.mark)
			continue
		}
		w.mu.Lock()
		if w.pid == 0 {
			if pid := proxyOf(container); pid > 0 {
				w.pid = pid
				w.first = cpuTicks(pid)
				w.last = w.first
			}
		} else if c := cpuTicks(w.pid); c >= 0 {
			w.last = c
		}
		w.mu.Unlock()
	}
}

// finish stops the watch and returns docker-proxy's pid (0: never seen)
// and its CPU ticks while watched.
func (w *proxyWatch) finish() (pid int, ticks int64) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pid, w.last - w.first
}

// findMarked returns the id of the running longhaul container whose
// environment holds LONGHAUL_TEST_MARK=mark, or "".
func findMarked(mark string) string {
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=dev.longhaul=1").Output()
	if err != nil {
		return ""
	}
	for _, id := range strings.Fields(string(out)) {
		env, err := exec.Command("docker", "inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", id).Output()
		if err == nil && bytes.Contains(env, []byte("LONGHAUL_TEST_MARK="+mark+"\n")) {
			return id
		}
	}
	return ""
}

// proxyOf finds the docker-proxy process relaying container's port 8080.
func proxyOf(container string) int {
	out, err := exec.Command("docker", "port", container, "8080/tcp").Output()
	if err != nil {
		return 0
	}
	var hostPort string
	for _, ln := range strings.Fields(string(out)) {
		if strings.HasPrefix(ln, "127.0.0.1:") {
			hostPort = strings.TrimPrefix(ln, "127.0.0.1:")
		}
	}
	if hostPort == "" {
		return 0
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "docker-proxy" {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-host-port" && args[i+1] == hostPort {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				return pid
			}
		}
	}
	return 0
}

// cpuTicks is utime+stime of pid in clock ticks, -1 when it is gone.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

func routeOfRun(t *testing.T, run store.Run) routeOf {
	t.Helper()
	var r routeOf
	if err := json.Unmarshal(run.Environment, &r); err != nil {
		t.Fatalf("environment %s: %v", run.Environment, err)
	}
	return r
}

// quietTicks bounds docker-proxy's CPU while a soak is watched, in clock
// ticks (1/100 s): on the netns route it relays nothing but the health
// wait's few requests; on the published port it relays every request
// (~125 µs of CPU each).
const quietTicks = 5

// checkProxyQuiet is TestDemoSoakDocker's part: the soak went through the
// container's network namespace and docker-proxy stayed idle.
func checkProxyQuiet(t *testing.T, run store.Run, pid int, ticks int64) {
	t.Helper()
	r := routeOfRun(t, run)
	if r.Route != "netns" || r.NetNS == nil || r.NetNS.URL != "http://127.0.0.1:8080" {
		t.Errorf("route %q, netns %+v, notes %q: want netns at the container's 127.0.0.1:8080", r.Route, r.NetNS, r.Notes)
	}
	if pid == 0 {
		t.Fatal("never found the docker-proxy of the target's published port")
	}
	t.Logf("docker-proxy %d: %d ticks during the soak", pid, ticks)
	if ticks >= quietTicks {
		t.Errorf("docker-proxy used %d ticks (%d ms) of CPU during a netns-route soak; want it idle (< %d)", ticks, ticks*10, quietTicks)
	}
}

// routeFallbackScenario is the demo target on its own (SQLite inside the
// container, no database to wait for), hit on /health: a quick soak whose
// every request crosses the route under test.
const routeFallbackScenario = `name: route-fallback
load: {vus: 4, window: 1s, duration: 3s}
environment:
  provider: docker
  target: {image: longhaul/demo-target:latest, health: /health}
ops:
  - {name: health, weight: 1, request: {method: GET, path: /health}}
`

// TestDockerRouteFallback: a worker without CAP_SYS_ADMIN (setpriv drops
// it) cannot enter the container's namespace; it drives the published
// port, says so in the record, and its soak works. The watcher that finds
// docker-proxy idle on the netns route (TestDemoSoakDocker) sees it busy
// here, so that silence means something.
func TestDockerRouteFallback(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak in a container")
	}
	requireDocker(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	scenario := filepath.Join(t.TempDir(), "route-fallback.yaml")
	if err := os.WriteFile(scenario, []byte(routeFallbackScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	const windows = 3
	mark := strconv.FormatInt(time.Now().UnixNano(), 36)
	w := watchProxy(t, mark)
	data := t.TempDir()
	p := startProcWith(t, procOptions{prefix: []string{setpriv, "--inh-caps=-all", "--bounding-set=-sys_admin", "--"}},
		"run", scenario, "--data", data, "--target-env", "LONGHAUL_TEST_MARK="+mark)
	code := p.exitCode(2 * time.Minute)
	pid, ticks := w.finish()
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	st := storeOf(t, data)
	run := onlyRun(t, st)
	ws := runWindows(t, st, run.ID)
	if gaps := checkWindows(t, ws, windows); gaps != 0 || run.Status != store.Completed {
		t.Errorf("status %s, %d gaps", run.Status, gaps)
	}
	for _, w := range ws {
		if w.Requests == 0 || w.Errors.Total() != 0 {
			t.Errorf("window %d: %d requests, %d errors", w.Index, w.Requests, w.Errors.Total())
		}
	}
	r := routeOfRun(t, run)
	notes := strings.Join(r.Notes, "\n")
	if r.Route != "published-port" || r.NetNS != nil || !strings.Contains(notes, "CAP_SYS_ADMIN") {
		t.Errorf("route %q, netns %+v, notes %q: want the published port, and why", r.Route, r.NetNS, r.Notes)
	}
	t.Logf("docker-proxy %d: %d ticks during the soak", pid, ticks)
	if pid == 0 || ticks < quietTicks {
		t.Errorf("docker-proxy %d used %d ticks relaying a whole soak; the watcher should see it busy (≥ %d)", pid, ticks, quietTicks)
	}
	checkNoLabelled(t, run.ID)
}
