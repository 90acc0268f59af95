package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
	"github.com/longhaul-dev/longhaul/workflows"
)

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
	if soakTargetPath != "" {
		os.RemoveAll(filepath.Dir(soakTargetPath))
	}
	os.Exit(code)
}

var (
	soakTargetOnce sync.Once
	soakTargetPath string
	soakTargetErr  error
)

// soakTarget builds testdata/soaktarget once per test binary.
func soakTarget(t *testing.T) string {
	t.Helper()
	soakTargetOnce.Do(func() {
		dir, err := os.MkdirTemp("", "longhaul-soaktarget-")
		if err != nil {
			soakTargetErr = err
			return
		}
		soakTargetPath = filepath.Join(dir, "soaktarget")
		out, err := exec.Command("go", "build", "-o", soakTargetPath, "./testdata/soaktarget").CombinedOutput()
		if err != nil {
			soakTargetErr = fmt.Errorf("build soaktarget: %v\n%s", err, out)
		}
	})
	if soakTargetErr != nil {
		t.Fatal(soakTargetErr)
	}
	return soakTargetPath
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
	return fmt.Sprintf(`name: e2e
load: {vus: 2, duration: %ds, window: 1s, timeout: 2s}
environment:
  provider: local
  target:
    command: [%q]
    health: /health
    health_timeout: 20s
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`, windows, soakTarget(t))
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a longhaul process: the test binary re-executed as the command.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *lockedBuffer
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
	p := &proc{t: t, cmd: exec.Command(argv[0], argv[1:]...), out: &lockedBuffer{}, done: make(chan struct{})}
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

// startDev starts `longhaul dev --data data` on a free port and waits until
// its frontend serves; it returns the process and the frontend's address. The
// test finds the port free and the child binds it later, so another process
// (a parallel test package) can take it in between: then the start is tried
// again on a fresh port.
func startDev(t *testing.T, data string, args ...string) (*proc, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := strconv.Itoa(freeTCPPort(t))
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

// soakRun runs `longhaul run` in-process, in the background.
type soakRun struct {
	stdout, stderr *lockedBuffer
	sig            chan os.Signal
	code           chan int
}

func startSoakRun(t *testing.T, args ...string) *soakRun {
	t.Helper()
	r := &soakRun{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, sig: make(chan os.Signal, 2), code: make(chan int, 1)}
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

// storeOf opens the store the commands use under dataDir.
func storeOf(t *testing.T, dataDir string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dataDir, datadir.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
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

// checkWindows verifies that each slot 0..slots-1 appears exactly once
// (window or gap) and returns the number of gaps.
func checkWindows(t *testing.T, ws []window.Window, slots int) (gaps int) {
	t.Helper()
	seen := map[int]int{}
	for _, w := range ws {
		seen[w.Index]++
		if w.Gap {
			gaps++
		}
	}
	for i := 0; i < slots; i++ {
		if seen[i] != 1 {
			t.Errorf("window slot %d appears %d times, want once", i, seen[i])
		}
	}
	if len(ws) != slots {
		t.Errorf("%d windows stored, want %d", len(ws), slots)
	}
	return gaps
}

// reportLine decodes the last NDJSON line of longhaul run --format json.
func reportLine(t *testing.T, stdout string) follow.ReportObject {
	t.Helper()
	var last string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			last = sc.Text()
		}
	}
	var r follow.ReportObject
	if err := json.Unmarshal([]byte(last), &r); err != nil || r.Type != "report" {
		t.Fatalf("last output line is not a report object (%v): %q", err, last)
	}
	return r
}

// TestSoakSurvivesWorkerKill: kill -9 the only worker during window 7 of a
// 20-window soak, start another: the run completes, the windows committed
// before the kill are unchanged, every slot is stored once, and the window
// lost with the worker is a gap, reported as such.
func TestSoakSurvivesWorkerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~45 s)")
	}
	ws0 := startWorkerSoak(t, 20)
	r, st := ws0.run, ws0.st
	run := onlyRun(t, st)
	before := waitWindow(t, st, run.ID, 6)
	ws0.worker.kill9()
	ws0.startWorker(t)

	run, ws := r.completed(t, st, run.ID)
	gaps := checkWindows(t, ws, 20)
	if gaps < 1 {
		t.Errorf("no gap recorded for the window in progress at the kill")
	}
	byIndex := map[int]window.Window{}
	for _, w := range ws {
		byIndex[w.Index] = w
	}
	for _, b := range before {
		if got := byIndex[b.Index]; !reflect.DeepEqual(got, b) {
			t.Errorf("window %d changed after the kill:\n got %+v\nwant %+v", b.Index, got, b)
		}
	}
	rep := reportLine(t, r.stdout.String())
	if rep.Status != store.Completed || rep.Gaps != gaps || rep.Windows != 20-gaps {
		t.Errorf("report line: status %s, windows %d, gaps %d; want completed, %d, %d", rep.Status, rep.Windows, rep.Gaps, 20-gaps, gaps)
	}
	if !strings.Contains(r.stdout.String(), `"gap":true`) {
		t.Errorf("the gap was not printed as a window line")
	}
	waitGone(t, targetPID(t, run))
}

// TestSoakSurvivesDevRestart: stop `longhaul dev` (server and worker)
// mid-soak and start it again on the same data directory: the run
// continues and completes.
func TestSoakSurvivesDevRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~40 s)")
	}
	data := t.TempDir()
	dev, addr := startDev(t, data)
	_, port, _ := net.SplitHostPort(addr)

	r := startSoakRun(t, localScenario(t, 12), "--temporal", addr, "--data", data, "--format", "json")
	st := storeOf(t, data)
	run := onlyRun(t, st)
	waitWindow(t, st, run.ID, 3)
	dev.stop()
	dev2 := startProc(t, "dev", "--data", data, "--port", port)
	dev2.waitFor("temporal dev server at", time.Minute)

	run, ws := r.completed(t, st, run.ID)
	checkWindows(t, ws, 12)
	// A target that never stopped has no crash finding (the dev server
	// restarting is not the target crashing).
	fs, err := st.Findings(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Kind == analysis.KindCrash {
			t.Errorf("crash finding on a run whose target never stopped: %s", f.Summary)
		}
	}
	waitGone(t, targetPID(t, run))
}

// TestSoakCancel: Ctrl-C during a soak on the embedded default cancels it:
// teardown runs (the target process is gone), the status is cancelled,
// completed windows are kept, exit code 1.
func TestSoakCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak")
	}
	s := startLiveSoak(t, t.TempDir(), 30, 2)
	r, st, run, pid := s.r, s.st, s.run, s.pid
	checkLiveUI(t, r.stderr.String(), run.ID)
	r.sig <- os.Interrupt
	if code := r.wait(t); code != exitFailed {
		t.Fatalf("exit %d after Ctrl-C, want %d; stderr:\n%s", code, exitFailed, r.stderr.String())
	}
	run, _ = st.GetRun(context.Background(), run.ID)
	if run.Status != store.Cancelled {
		t.Errorf("status %s, want cancelled", run.Status)
	}
	if ws := runWindows(t, st, run.ID); len(ws) < 3 {
		t.Errorf("%d windows kept, want at least the 3 completed before Ctrl-C", len(ws))
	}
	if rep := reportLine(t, r.stdout.String()); rep.Status != store.Cancelled {
		t.Errorf("report status %s, want cancelled", rep.Status)
	}
	waitGone(t, pid)
}

// TestSoakTargetDies: the target process dies mid-soak; its windows record
// the errors, the run ends failed with the reason, teardown still runs.
func TestSoakTargetDies(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak")
	}
	data := t.TempDir()
	s := startLiveSoak(t, data, 30, 2)
	r, st, run, pid := s.r, s.st, s.run, s.pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != exitFailed {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailed, r.stderr.String())
	}
	run, _ = st.GetRun(context.Background(), run.ID)
	if run.Status != store.Failed || !strings.Contains(run.Reason, "target stopped answering") {
		t.Errorf("status %s (%s), want failed because the target stopped answering", run.Status, run.Reason)
	}
	ws, _ := st.Windows(context.Background(), run.ID, store.AllWindows)
	var errs int64
	for _, w := range ws {
		errs += w.Errors.Total()
	}
	if errs == 0 {
		t.Errorf("no window recorded errors after the target died (%d windows)", len(ws))
	}
	if len(ws) >= 30 {
		t.Errorf("%d windows: the run went on after the target died", len(ws))
	}
	// The crash is a finding: when, how (signal 9), what it printed last.
	// The window it was noticed in holds the event; connects refused after
	// it are not throughput.
	var crashed *window.Window
	for i := range ws {
		if len(ws[i].Events) > 0 {
			crashed = &ws[i]
		}
	}
	if crashed == nil || crashed.Events[0].Kind != window.EventTargetExit || crashed.Events[0].Signal != 9 {
		t.Errorf("no window holds the target's exit by signal 9: %+v", crashed)
	} else {
		for _, w := range ws {
			if w.Index > crashed.Index && (w.RPS > 0 || w.ConnectFailures == 0) {
				t.Errorf("window %d after the crash: rps %.1f, %d connect failures; want 0 and > 0", w.Index, w.RPS, w.ConnectFailures)
			}
		}
	}
	fs, err := st.Findings(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var crash *analysis.Finding
	for i := range fs {
		if fs[i].Kind == analysis.KindCrash {
			crash = &fs[i]
		}
	}
	if crash == nil {
		t.Fatalf("no crash finding; findings: %+v", fs)
	}
	if crash.Severity != analysis.Critical || !strings.Contains(crash.Summary, "(signal 9: killed)") || crash.Evidence.Notes["requests_served"] <= 0 {
		t.Errorf("crash finding %s %q (notes %v), want critical, signal 9, requests served", crash.Severity, crash.Summary, crash.Evidence.Notes)
	}
	if !slices.ContainsFunc(crash.Evidence.Output, func(l string) bool { return strings.Contains(l, "listening") }) {
		t.Errorf("crash finding's output %q lacks the target's start-up line", crash.Evidence.Output)
	}
	// The terminal says it in one readable line, no raw log records.
	stderr := r.stderr.String()
	if want := fmt.Sprintf("the target process %d exited (signal 9: killed)", pid); !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, "level=WARN") || strings.Contains(stderr, "time=") {
		t.Errorf("raw log records on the terminal:\n%s", stderr)
	}
	rep := reportLine(t, r.stdout.String())
	if rep.Status != store.Failed || !strings.Contains(rep.Reason, "target stopped answering") {
		t.Errorf("report: %s (%s), want failed with the reason", rep.Status, rep.Reason)
	}
	envDir := filepath.Join(data, "provision")
	if entries, _ := os.ReadDir(envDir); len(entries) != 0 {
		t.Errorf("teardown left %d local environment(s) in %s", len(entries), envDir)
	}
	waitGone(t, pid)
}
