package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/internal/testbin"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
	"github.com/longhaul-dev/longhaul/workflows"
)

// The end-to-end tests' harness: the targets and scenarios they soak,
// longhaul run in this process or as processes (dev, worker), the store
// read back, and the starts several tests share. A test file keeps only
// what its own tests need (shipped_e2e_test.go's startDemoTarget,
// compare_e2e_test.go's compareRun, ...).

// ---- The test binary as the longhaul command, and its targets.

// TestMain lets the test binary act as the longhaul command, so end-to-end
// tests run `longhaul dev` and `longhaul worker` as real processes (to
// kill -9 them) without linking a second 200 MB binary.
func TestMain(m *testing.M) {
	if os.Getenv("LONGHAUL_TEST_MAIN") == "1" {
		if d, err := time.ParseDuration(os.Getenv(provisionHeartbeatEnv)); err == nil {
			workflows.ProvisionHeartbeatTimeout = d
		}
		main()
		return
	}
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// soakTarget builds testdata/soaktarget once per test binary.
func soakTarget(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "testdata/soaktarget")
}

// buildDemoTarget builds examples/demo-target once per test binary.
func buildDemoTarget(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "../../examples/demo-target")
}

// ---- Scenarios.

func writeScenario(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// localScenario drives the soak target, run by the local provider, for
// windows × 1 s.
func localScenario(t *testing.T, windows int) string {
	t.Helper()
	return writeScenario(t, localScenarioYAML(t, windows))
}

// localScenarioYAML is localScenario's YAML.
func localScenarioYAML(t *testing.T, windows int) string {
	t.Helper()
	return localYAML("e2e", fmt.Sprintf("{vus: 2, duration: %ds, window: 1s, timeout: 2s}", windows), soakTarget(t), "20s") + getItems
}

// localYAML is a scenario's name and load, and an environment in which the
// local provider runs command, healthy once /health answers within
// healthTimeout; the scenario's ops (getItems) and probes follow.
func localYAML(name, load, command, healthTimeout string) string {
	return fmt.Sprintf(`name: %s
load: %s
environment:
  provider: local
  target:
    command: [%q]
    health: /health
    health_timeout: %s
`, name, load, command, healthTimeout)
}

// getItems is the ops of a scenario whose one op is GET /items.
const getItems = `ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`

// listItems is the ops and probes of a scenario of the demo target whose one
// op lists 20 items of a random bucket, with the process probe (more probes
// may follow it).
const listItems = `ops:
  - name: list
    weight: 1
    request: {method: GET, path: /items, query: {bucket: "{{ randInt 0 9 }}", limit: "20"}}
probes:
  process: true
`

// demoCompare skips in -short mode, else builds the demo target and
// returns its compareScenario and a data directory.
func demoCompare(t *testing.T) (file, data string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end comparison")
	}
	return compareScenario(t, buildDemoTarget(t)), t.TempDir()
}

// ---- longhaul in this process: a command, a run followed to its end.

// driveRun is one in-process run of the longhaul command.
type driveRun struct {
	code           int
	stdout, stderr string
}

type runOpts struct {
	env        map[string]string
	interrupts chan os.Signal
	stdout     *lockedbuf.Buffer // optional, to watch output while it runs
}

func runLonghaul(t *testing.T, o runOpts, args ...string) driveRun {
	t.Helper()
	stdout := o.stdout
	if stdout == nil {
		stdout = &lockedbuf.Buffer{}
	}
	var stderr lockedbuf.Buffer
	env := o.env
	if env == nil {
		env = map[string]string{"HOME": t.TempDir()}
	}
	a := &app{
		stdout: stdout, stderr: &stderr, stdin: strings.NewReader(""),
		getenv:     func(k string) string { return env[k] },
		interrupts: o.interrupts,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := a.run(ctx, args)
	return driveRun{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// runCommand runs one longhaul command in-process.
func runCommand(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut, stdin: strings.NewReader(""),
		getenv: func(string) string { return "" }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = a.run(ctx, args)
	return code, out.String(), errOut.String()
}

// soakRun runs `longhaul run` in-process, in the background.
type soakRun struct {
	stdout, stderr *lockedbuf.Buffer
	sig            chan os.Signal
	code           chan int
}

func startSoakRun(t *testing.T, args ...string) *soakRun {
	t.Helper()
	r := &soakRun{stdout: &lockedbuf.Buffer{}, stderr: &lockedbuf.Buffer{}, sig: make(chan os.Signal, 2), code: make(chan int, 1)}
	home := t.TempDir()
	a := &app{
		stdout: r.stdout, stderr: r.stderr, stdin: strings.NewReader(""),
		getenv:     func(k string) string { return map[string]string{"HOME": home}[k] },
		interrupts: r.sig,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	go func() {
		defer cancel()
		r.code <- a.run(ctx, append([]string{"run"}, args...))
	}()
	return r
}

func (r *soakRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case c := <-r.code:
		return c
	case <-time.After(3 * time.Minute):
		t.Fatalf("longhaul run did not end; stderr:\n%s", r.stderr.String())
		return -1
	}
}

// completed waits for the followed run to exit 0 and returns the run
// (which must have completed) and its windows.
func (r *soakRun) completed(t *testing.T, st store.Store, runID string) (store.Run, []window.Window) {
	t.Helper()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("longhaul run exit %d, want 0; stderr:\n%s", code, r.stderr.String())
	}
	run, err := st.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.Completed {
		t.Errorf("status %s (%s), want completed", run.Status, run.Reason)
	}
	return run, runWindows(t, st, runID)
}

// ---- longhaul as processes: dev, worker (to kill -9 them).

// proc is a longhaul process: the test binary re-executed as the command.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *lockedbuf.Buffer
	done chan struct{}
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProcWith(t, procOptions{}, args...)
}

// procOptions adjust a longhaul process started by startProcWith.
type procOptions struct {
	env    []string             // added to the test's environment
	attr   *syscall.SysProcAttr // e.g. a private mount namespace
	prefix []string             // a command that runs longhaul, e.g. setpriv dropping a capability
}

func startProcWith(t *testing.T, o procOptions, args ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string(nil), o.prefix...), exe), args...)
	p := &proc{t: t, cmd: exec.Command(argv[0], argv[1:]...), out: &lockedbuf.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), o.env...), "LONGHAUL_TEST_MAIN=1")
	p.cmd.SysProcAttr = o.attr
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of longhaul %s:\n%s", strings.Join(args, " "), p.out.String())
		}
	})
	return p
}

func (p *proc) waitFor(what string, timeout time.Duration) {
	p.t.Helper()
	if !p.waitForOrExit(what, timeout) {
		p.t.Fatalf("process exited before printing %q:\n%s", what, p.out.String())
	}
}

// waitForOrExit waits until the process prints what (true) or exits first
// (false); it fails the test after timeout.
func (p *proc) waitForOrExit(what string, timeout time.Duration) bool {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.out.String(), what) {
		select {
		case <-p.done:
			return strings.Contains(p.out.String(), what)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q after %s:\n%s", what, timeout, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// stop interrupts the process (Ctrl-C) and waits for it to exit.
func (p *proc) stop() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("process did not stop within 30 s of an interrupt:\n%s", p.out.String())
	}
}

func (p *proc) kill9() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// startDev starts `longhaul dev --data data` on a free port and waits until
// its frontend serves; it returns the process and the frontend's address. The
// test finds the port free and the child binds it later, so another process
// (a parallel test package) can take it in between: then the start is tried
// again on a fresh port.
func startDev(t *testing.T, data string, args ...string) (*proc, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := strconv.Itoa(freeport.ForTest(t))
		dev := startProc(t, append([]string{"dev", "--data", data, "--port", port}, args...)...)
		if dev.waitForOrExit("temporal dev server at", time.Minute) {
			return dev, net.JoinHostPort("127.0.0.1", port)
		}
		if attempt == 3 || !strings.Contains(dev.out.String(), "address already in use") {
			t.Fatalf("longhaul dev exited before serving:\n%s", dev.out.String())
		}
		t.Logf("port %s was taken before longhaul dev bound it; trying another", port)
	}
}

// startWorker starts `longhaul worker` on addr with data directory data.
func startWorker(t *testing.T, addr, data string) *proc {
	t.Helper()
	w := startProc(t, "worker", "--temporal", addr, "--data", data)
	w.waitFor("worker on", time.Minute)
	return w
}

func processGone(pid int) bool {
	// Signal 0 probes; a zombie (not yet reaped by an exited parent's init)
	// counts as gone as well.
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] == "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if processGone(pid) {
			return
		}
	}
	t.Errorf("target process %d still running after teardown", pid)
}

// ---- The store a test reads back.

// openStore opens the store at dsn (an SQLite file or a PostgreSQL URL),
// closed when t ends: after the test's own deferred calls, before the
// cleanups registered earlier (the database's removal, the stack's down).
func openStore(t *testing.T, dsn string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// storeOf opens the store the commands use under dataDir (see openStore).
func storeOf(t *testing.T, dataDir string) store.Store {
	t.Helper()
	return openStore(t, filepath.Join(dataDir, datadir.StoreFile))
}

// onlyRun returns the one run in st, waiting for it to appear.
func onlyRun(t *testing.T, st store.Store) store.Run {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rs, err := st.ListRuns(context.Background(), store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 1 {
			return rs[0]
		}
	}
	t.Fatal("no run in the store after a minute")
	return store.Run{}
}

// runWindows reads every window of a run.
func runWindows(t *testing.T, st store.Store, runID string) []window.Window {
	t.Helper()
	ws, err := st.Windows(context.Background(), runID, store.AllWindows)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// waitWindow waits until the run has committed window index (any incarnation).
func waitWindow(t *testing.T, st store.Store, runID string, index int) []window.Window {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ws := runWindows(t, st, runID)
		for _, w := range ws {
			if w.Index >= index {
				return ws
			}
		}
	}
	t.Fatalf("run %s never reached window %d", runID, index)
	return nil
}

// waitEnvironment waits until the run records its environment.
func waitEnvironment(t *testing.T, st store.Store, runID string) store.Run {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, err := st.GetRun(context.Background(), runID)
		if err == nil && len(r.Environment) > 0 {
			return r
		}
	}
	t.Fatalf("run %s has no environment after a minute", runID)
	return store.Run{}
}

// targetPID is the local target's pid recorded in the run's environment.
func targetPID(t *testing.T, run store.Run) int {
	t.Helper()
	var env struct {
		Target struct {
			PID int `json:"pid"`
		} `json:"target"`
	}
	if err := json.Unmarshal(run.Environment, &env); err != nil || env.Target.PID == 0 {
		t.Fatalf("run %s: no target pid in its environment %s (%v)", run.ID, run.Environment, err)
	}
	return env.Target.PID
}

// ---- Started together: a soak with its own worker, a live soak.

// workerSoak is a soak of the local scenario for windows, followed from a
// client of a `longhaul dev` without a worker of its own, driven by one
// separate worker (the one a fault test stops).
type workerSoak struct {
	data, addr string
	worker     *proc
	run        *soakRun
	st         store.Store
	runID      string
}

// startWorkerSoak starts it and returns once the run is recorded.
func startWorkerSoak(t *testing.T, windows int) *workerSoak {
	t.Helper()
	w := &workerSoak{data: t.TempDir()}
	_, w.addr = startDev(t, w.data, "--worker=false")
	w.worker = w.startWorker(t)
	w.run = startSoakRun(t, localScenario(t, windows), "--temporal", w.addr, "--data", w.data, "--format", "json")
	w.st = storeOf(t, w.data)
	w.runID = onlyRun(t, w.st).ID
	return w
}

// startWorker starts another worker of the same host.
func (w *workerSoak) startWorker(t *testing.T) *proc {
	t.Helper()
	return startWorker(t, w.addr, w.data)
}

// liveSoak is a soak of the local scenario followed by r, recorded as run
// in st, its target up as process pid.
type liveSoak struct {
	r   *soakRun
	st  store.Store
	run store.Run
	pid int
}

// startLiveSoak starts a soak of the local scenario for windows on the
// data directory data (args: more flags of longhaul run) and returns once
// `after` windows are stored and its environment is recorded.
func startLiveSoak(t *testing.T, data string, windows, after int, args ...string) liveSoak {
	t.Helper()
	r := startSoakRun(t, append([]string{localScenario(t, windows), "--data", data, "--format", "json"}, args...)...)
	st := storeOf(t, data)
	run := onlyRun(t, st)
	waitWindow(t, st, run.ID, after)
	run = waitEnvironment(t, st, run.ID)
	return liveSoak{r: r, st: st, run: run, pid: targetPID(t, run)}
}
