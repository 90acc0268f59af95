package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// End-to-end tests of issue 4 through the command: scenarios/demo.yaml
// soaked in containers and as local processes, the provider choice, the
// Ryuk policy under kill -9 of the worker, sweeping abandoned runs, and the
// one-line reasons of provisioning errors. Each soak is a few 1 s windows.

// demoFile is scenarios/demo.yaml, relative to this package.
const demoFile = "../../scenarios/demo.yaml"

// demoImages are the images demo.yaml runs on the docker provider here:
// scripts/offline-images.sh builds both.
var demoImages = []string{"longhaul/demo-target:latest", "longhaul/postgres:15-offline"}

// hideDockerEnv makes a longhaul process started by the tests hide the
// Docker socket from itself (see init): "no engine answers", cheaply.
const hideDockerEnv = "LONGHAUL_TEST_HIDE_DOCKER"

// dockerSockets are the sockets testcontainers falls back to whatever
// DOCKER_HOST says.
var dockerSockets = []string{"/var/run/docker.sock", "/run/docker.sock"}

func init() {
	// In a process started with a private mount namespace (startNoDocker),
	// cover the Docker sockets with /dev/null before anything looks for an
	// engine. If that fails, exit 3 rather than run with the real engine.
	if os.Getenv(hideDockerEnv) != "1" {
		return
	}
	for _, s := range dockerSockets {
		if _, err := os.Stat(s); err != nil {
			continue
		}
		if err := syscall.Mount("/dev/null", s, "", syscall.MS_BIND, ""); err != nil {
			fmt.Fprintf(os.Stderr, "hide %s: %v\n", s, err)
			os.Exit(3)
		}
	}
}

// requireDocker skips the test unless a Docker engine answers the docker
// CLI and the demo images are present.
func requireDocker(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI")
	}
	for _, img := range demoImages {
		if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", img).CombinedOutput(); err != nil {
			t.Skipf("image %s absent or no engine (run scripts/offline-images.sh): %s", img, strings.TrimSpace(string(out)))
		}
	}
}

// docker runs the docker CLI and returns its trimmed output.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// labelled lists the containers, networks and volumes labelled with runID.
func labelled(t *testing.T, runID string) []string {
	t.Helper()
	f := "label=dev.longhaul.run=" + runID
	var left []string
	for _, args := range [][]string{
		{"ps", "-a", "--format", "container {{.ID}} {{.Names}}", "--filter", f},
		{"network", "ls", "--format", "network {{.Name}}", "--filter", f},
		{"volume", "ls", "--format", "volume {{.Name}}", "--filter", f},
	} {
		if out := docker(t, args...); out != "" {
			left = append(left, strings.Split(out, "\n")...)
		}
	}
	return left
}

// checkNoLabelled fails if anything labelled with runID is left, after a
// short grace for removals in flight.
func checkNoLabelled(t *testing.T, runID string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if left = labelled(t, runID); len(left) == 0 {
			return
		}
	}
	t.Errorf("left behind by run %s: %q", runID, left)
}

// containerRunning reports whether the container exists and runs.
func containerRunning(t *testing.T, id string) bool {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", "{{.State.Running}}", id).CombinedOutput()
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// recordedEnv is what the tests read of a run's recorded environment.
type recordedEnv struct {
	Provider string `json:"provider"`
	Image    string `json:"image"`
	Target   struct {
		PID         int    `json:"pid"`
		ContainerID string `json:"container_id"`
		DataDir     string `json:"data_dir"`
	} `json:"target"`
	Database *struct {
		URL       string `json:"url"`
		TargetURL string `json:"target_url"`
		Image     string `json:"image"`
		Process   struct {
			PID         int    `json:"pid"`
			ContainerID string `json:"container_id"`
			DataDir     string `json:"data_dir"`
		} `json:"process"`
	} `json:"database"`
	Notes []string `json:"notes"`
}

func envOf(t *testing.T, run store.Run) recordedEnv {
	t.Helper()
	var e recordedEnv
	if err := json.Unmarshal(run.Environment, &e); err != nil {
		t.Fatalf("run %s: environment %s: %v", run.ID, run.Environment, err)
	}
	if e.Database == nil {
		t.Fatalf("run %s: no database in its environment %s", run.ID, run.Environment)
	}
	return e
}

// demoRun is one finished `longhaul run` of the demo scenario.
type demoRun struct {
	data   string // the data directory
	code   int
	stderr string
	report follow.ReportObject
	run    store.Run
	ws     []window.Window
}

// runDemo runs the demo scenario in-process on the embedded default, with a
// fresh data directory, 1 s windows, for windows seconds, and reads back
// what it stored.
func runDemo(t *testing.T, windows int, args ...string) demoRun {
	t.Helper()
	data := t.TempDir()
	args = append([]string{demoFile, "--data", data, "--window", "1s", "--duration", strconv.Itoa(windows) + "s"}, args...)
	code, rep, stderr := runReport(t, args...)
	d := demoRun{data: data, code: code, stderr: stderr, report: rep}
	st := storeOf(t, data)
	d.run = onlyRun(t, st)
	var err error
	if d.ws, err = st.Windows(context.Background(), d.run.ID, store.AllWindows); err != nil {
		t.Fatal(err)
	}
	return d
}

// checkCompleted fails unless the demo run completed with every window
// driven (none lost), each with requests and no errors.
func (d demoRun) checkCompleted(t *testing.T, windows int) {
	t.Helper()
	if d.code != exitOK || d.run.Status != store.Completed {
		t.Fatalf("exit %d, status %s (%s), want 0, completed; stderr:\n%s", d.code, d.run.Status, d.run.Reason, d.stderr)
	}
	if gaps := checkWindows(t, d.ws, windows); gaps != 0 || d.report.Windows != windows {
		t.Errorf("%d gaps, report line counts %d windows; want none, %d", gaps, d.report.Windows, windows)
	}
	for _, w := range d.ws {
		if w.Gap {
			continue
		}
		if w.Requests == 0 || w.Errors.Total() != 0 {
			t.Errorf("window %d: %d requests, %d errors (%+v); want requests and no errors", w.Index, w.Requests, w.Errors.Total(), w.Errors)
		}
	}
}

// TestDemoSoakDocker: the demo target and PostgreSQL in containers. The run
// completes, its windows have requests and no errors, the record names the
// environment (without the database password), `longhaul report` shows it,
// and nothing labelled with the run is left. The load went inside the
// target container's network namespace: docker-proxy stayed idle
// (route_e2e_test.go).
func TestDemoSoakDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak in containers")
	}
	requireDocker(t)
	mark := strconv.FormatInt(time.Now().UnixNano(), 36)
	proxy := watchProxy(t, mark)
	d := runDemo(t, 8, "--provider", "docker", "--target-env", "LONGHAUL_TEST_MARK="+mark)
	pid, ticks := proxy.finish()
	d.checkCompleted(t, 8)
	checkProxyQuiet(t, d.run, pid, ticks)
	e := envOf(t, d.run)
	if e.Provider != "docker" || e.Image != "longhaul/demo-target:latest" || e.Target.ContainerID == "" || e.Database.Process.ContainerID == "" {
		t.Errorf("recorded environment %s: want docker, the demo image and both container ids", d.run.Environment)
	}
	if strings.Contains(e.Database.URL, ":longhaul@") || !strings.HasPrefix(e.Database.URL, "postgres://longhaul@127.0.0.1:") {
		t.Errorf("recorded database DSN %q: want a loopback DSN without its password", e.Database.URL)
	}
	if d.run.TargetURL == "" || d.run.Incarnations != 1 {
		t.Errorf("run: target %q, incarnations %d; want the target URL and 1", d.run.TargetURL, d.run.Incarnations)
	}
	checkNoLabelled(t, d.run.ID)

	code, out, errOut := runCommand(t, "report", d.run.ID, "--data", d.data)
	if code != exitOK {
		t.Fatalf("longhaul report: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"environment: docker on ", "image longhaul/demo-target:latest", "database: postgres postgres://longhaul@127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("longhaul report lacks %q:\n%s", want, out)
		}
	}

	// The containers' output was kept with the run before they went.
	for _, tt := range []struct{ flag, want string }{{"", `"msg":"listening"`}, {"--database", "database system is ready to accept connections"}} {
		args := []string{"logs", d.run.ID, "--data", d.data}
		if tt.flag != "" {
			args = append(args, tt.flag)
		}
		if code, out, errOut := runCommand(t, args...); code != exitOK || !strings.Contains(out, tt.want) {
			t.Errorf("longhaul %s: exit %d, stderr %q; want %q in:\n%s", strings.Join(args, " "), code, errOut, tt.want, out)
		}
	}
}

// TestDemoSoakLocal: the same soak with the local provider (go build into
// the environment's directory, a private PostgreSQL cluster). It completes,
// and afterwards the recorded processes are gone and so are the data
// directories (the build output with them).
func TestDemoSoakLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak of local processes")
	}
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil {
		t.Skip("no PostgreSQL server binaries under /usr/lib/postgresql")
	}
	d := runDemo(t, 8, "--provider", "local")
	d.checkCompleted(t, 8)
	e := envOf(t, d.run)
	if e.Provider != "local" || e.Target.PID == 0 || e.Database.Process.PID == 0 {
		t.Fatalf("recorded environment %s: want local with the target's and the database's pids", d.run.Environment)
	}
	if strings.Contains(e.Database.URL, ":longhaul@") {
		t.Errorf("recorded database DSN %q holds the password", e.Database.URL)
	}
	for _, pid := range []int{e.Target.PID, e.Database.Process.PID} {
		waitGone(t, pid)
	}
	for _, dir := range []string{e.Target.DataDir, e.Database.Process.DataDir} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("directory %s left behind (stat: %v)", dir, err)
		}
	}
}

// exitCode waits for the process to end and returns its exit code.
func (p *proc) exitCode(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("process did not end within %s:\n%s", timeout, p.out.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// noDocker starts longhaul ARGS in a private mount namespace where the
// Docker sockets are covered (see init), or skips the test when this host
// cannot do that (no CAP_SYS_ADMIN).
func noDocker(t *testing.T, args ...string) *proc {
	t.Helper()
	o := procOptions{
		env:  []string{hideDockerEnv + "=1", "DOCKER_HOST=unix:///nonexistent/docker.sock"},
		attr: &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS},
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	probe := exec.Command(exe, "scenario", "validate", demoFile)
	probe.Env = append(append(os.Environ(), o.env...), "LONGHAUL_TEST_MAIN=1")
	probe.SysProcAttr = o.attr
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot hide the Docker engine from a process here: %v: %s", err, out)
	}
	return startProcWith(t, o, args...)
}

// TestDemoAutoProvider: provider auto (demo.yaml's own) picks docker where
// an engine answers and the images are present, and the local provider
// when no engine answers; the record says which and why.
func TestDemoAutoProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soaks")
	}
	t.Run("docker when an engine answers", func(t *testing.T) {
		requireDocker(t)
		d := runDemo(t, 3)
		d.checkCompleted(t, 3)
		e := envOf(t, d.run)
		if e.Provider != "docker" || len(e.Notes) == 0 || e.Notes[0] != "provider auto chose docker" {
			t.Errorf("provider %q, notes %q; want docker, chosen by auto", e.Provider, e.Notes)
		}
		checkNoLabelled(t, d.run.ID)
	})
	t.Run("local when no engine answers", func(t *testing.T) {
		data := t.TempDir()
		p := noDocker(t, "run", demoFile, "--data", data, "--duration", "3s", "--window", "1s")
		if code := p.exitCode(3 * time.Minute); code != exitOK {
			t.Fatalf("exit %d, want 0:\n%s", code, p.out.String())
		}
		run := onlyRun(t, storeOf(t, data))
		e := envOf(t, run)
		if e.Provider != "local" || len(e.Notes) == 0 || !strings.HasPrefix(e.Notes[0], "provider auto chose local: no Docker engine answers") {
			t.Errorf("provider %q, notes %q; want local, chosen by auto for want of an engine", e.Provider, e.Notes)
		}
		waitGone(t, e.Target.PID)
		waitGone(t, e.Database.Process.PID)
	})
}

// TestProvisionErrorsAreOneLine: a provisioning error that is the user's to
// fix ends the run failed, with one clear line as its reason that `longhaul
// run` prints, and leaves nothing behind. A --provider the scenario cannot
// serve is refused before anything starts (exit 2).
func TestProvisionErrorsAreOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end runs")
	}
	local := func(build, env string) string {
		return writeScenario(t, fmt.Sprintf(`name: broken
environment:
  provider: local
  target:
    build: {command: %q}
    command: [%q]
    env: {%s}
    health: /health
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`, build, soakTarget(t), env))
	}
	demo, err := os.ReadFile(demoFile)
	if err != nil {
		t.Fatal(err)
	}
	noImage := writeScenario(t, strings.Replace(string(demo), "image: longhaul/demo-target:latest", "image: longhaul-test/no-such-image:1", 1))
	tests := []struct {
		name     string
		docker   bool
		args     []string
		wantCode int
		want     []string // in the printed "run ID failed: ..." line, or on stderr for exit 2
		wantTail string   // in the log lines printed under it
	}{
		// Refused before anything starts, as scenario validate refuses it.
		{"missing image", true, []string{noImage, "--provider", "docker"}, exitBadInput,
			[]string{"image not available: target.image longhaul-test/no-such-image:1 is not present and cannot be pulled", "scripts/offline-images.sh"}, ""},
		{"invalid environment", false, []string{local("true", `X: "{{.Database.URL}}"`), "--provider", "local"}, exitFailed,
			[]string{"invalid environment: target.env.X uses {{.Database...}} but database.kind is none"}, ""},
		{"failed build", false, []string{local("echo compiling the target; exit 3", ""), "--provider", "local"}, exitFailed,
			[]string{`build failed: target.build.command "echo compiling the target; exit 3"`, "last lines of its output:"}, "  compiling the target"},
		// --target-env reaches the target and overrides the scenario's env.
		{"target exits at start", false, []string{demoFile, "--provider", "local", "--target-env", "DATABASE_URL=bogus-dsn"}, exitFailed,
			[]string{"not ready: the process exited before it was ready; last lines of its log:"}, "demo-target: parse DATABASE_URL: cannot parse `bogus-dsn`"},
		{"provider the scenario cannot serve", false, []string{local("true", ""), "--provider", "docker"}, exitBadInput,
			[]string{"--provider docker:", "has no target.image or target.build.repo for the docker provider"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.docker {
				requireDocker(t)
			}
			data := t.TempDir()
			r := startSoakRun(t, append(tt.args, "--data", data, "--duration", "2s", "--window", "1s")...)
			code := r.wait(t)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.wantCode, r.stdout.String(), r.stderr.String())
			}
			out := r.stderr.String()
			if code != exitBadInput {
				run := onlyRun(t, storeOf(t, data))
				if run.Status != store.Failed {
					t.Errorf("status %s, want failed", run.Status)
				}
				var tail string
				out, tail = failedReason(t, r.stdout.String(), run.ID)
				if !strings.Contains(tail, tt.wantTail) {
					t.Errorf("the log lines under the reason lack %q:\n%s", tt.wantTail, tail)
				}
				// The terminal is for people: no summary table of no
				// windows, no Temporal log lines, the reason once and
				// where Temporal's own lines went.
				if strings.Contains(r.stdout.String(), "summary:") {
					t.Errorf("a run without windows printed a summary table:\n%s", r.stdout.String())
				}
				if e := r.stderr.String(); strings.Contains(e, "Activity error") || strings.Contains(e, "level=ERROR") ||
					!strings.Contains(e, filepath.Join(data, datadir.TemporalLogFile)) {
					t.Errorf("stderr has Temporal's lines or lacks the log's path:\n%s", e)
				}
				if tt.docker {
					checkNoLabelled(t, run.ID)
				}
				if entries, _ := os.ReadDir(filepath.Join(data, "provision")); len(entries) != 0 {
					t.Errorf("%d local environment(s) left in %s", len(entries), filepath.Join(data, "provision"))
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// Refused before anything starts (provision.Preflight), with the fix.
	t.Run("docker asked for, no engine", func(t *testing.T) {
		data := t.TempDir()
		p := noDocker(t, "run", demoFile, "--data", data, "--provider", "docker", "--duration", "2s", "--window", "1s")
		if code := p.exitCode(2 * time.Minute); code != exitBadInput {
			t.Fatalf("exit %d, want %d:\n%s", code, exitBadInput, p.out.String())
		}
		out := strings.TrimSpace(p.out.String())
		for _, w := range []string{"no Docker engine answers", "use `provider: local` in the scenario (or --provider local)"} {
			if !strings.Contains(out, w) || strings.Contains(out, "\n") {
				t.Errorf("want one line with %q: %s", w, out)
			}
		}
		if rs, err := storeOf(t, data).ListRuns(context.Background(), store.ListOptions{}); err != nil || len(rs) != 0 {
			t.Errorf("%d runs recorded (%v), want none", len(rs), err)
		}
	})
}

// failedReason returns the line `longhaul run` printed for the failed run
// ("run ID failed: REASON") and the indented log lines under it, failing
// the test when there is no such line.
func failedReason(t *testing.T, out, runID string) (line, tail string) {
	t.Helper()
	prefix := "run " + runID + " failed: "
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		var rest []string
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "  ") {
				break
			}
			rest = append(rest, r)
		}
		return l, strings.Join(rest, "\n")
	}
	t.Fatalf("no %q line in the output:\n%s", prefix, out)
	return "", ""
}

// TestDemoWorkerKillDocker: kill -9 of the worker mid-soak on the docker
// provider. The documented policy holds: no Ryuk, so the containers outlive
// their worker; the worker restarted on the host resumes on the same
// environment, or provisions a new incarnation when it is gone; nothing is
// left once the run ends. A run abandoned (its workflow terminated while no
// worker ran) is swept by `longhaul sweep --temporal`.
func TestDemoWorkerKillDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soaks in containers with kill -9")
	}
	requireDocker(t)
	data := t.TempDir()
	_, addr := startDev(t, data, "--worker=false")
	tc, err := client.Dial(client.Options{HostPort: addr, Namespace: "default", Logger: sdklog.NewStructuredLogger(discard)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()

	// startSoak starts a worker and an 8-window docker soak with a data
	// directory (and store) of their own, and returns once window 2 is
	// committed.
	type soak struct {
		data   string
		st     store.Store
		worker *proc
		run    *soakRun
		rec    store.Run
	}
	startSoak := func(t *testing.T) soak {
		s := soak{data: t.TempDir()}
		s.worker = startWorker(t, addr, s.data)
		s.run = startSoakRun(t, demoFile, "--temporal", addr, "--data", s.data,
			"--provider", "docker", "--duration", "8s", "--window", "1s", "--format", "json")
		s.st = storeOf(t, s.data)
		s.rec = onlyRun(t, s.st)
		waitWindow(t, s.st, s.rec.ID, 2)
		s.rec = waitEnvironment(t, s.st, s.rec.ID)
		return s
	}
	finish := func(t *testing.T, s soak, wantCode int) store.Run {
		if code := s.run.wait(t); code != wantCode {
			t.Fatalf("longhaul run exit %d, want %d; stderr:\n%s", code, wantCode, s.run.stderr.String())
		}
		r, err := s.st.GetRun(context.Background(), s.rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("resumes on the same environment", func(t *testing.T) {
		s := startSoak(t)
		before := envOf(t, s.rec)
		s.worker.kill9()
		// Ryuk would remove the containers about 10 s after their creator died.
		time.Sleep(11 * time.Second)
		for _, id := range []string{before.Target.ContainerID, before.Database.Process.ContainerID} {
			if !containerRunning(t, id) {
				t.Fatalf("container %s did not outlive its worker by 11 s", id)
			}
		}
		w2 := startWorker(t, addr, s.data)
		run := finish(t, s, exitOK)
		after := envOf(t, run)
		if run.Status != store.Completed || run.Incarnations != 1 || after.Target.ContainerID != before.Target.ContainerID {
			t.Errorf("status %s (%s), incarnations %d, target %s; want completed on the same environment (1, %s)",
				run.Status, run.Reason, run.Incarnations, after.Target.ContainerID, before.Target.ContainerID)
		}
		ws, err := s.st.Windows(context.Background(), run.ID, store.AllWindows)
		if err != nil {
			t.Fatal(err)
		}
		if gaps := checkWindows(t, ws, 8); gaps < 1 {
			t.Errorf("no gap for the window in progress at the kill")
		}
		checkNoLabelled(t, run.ID)
		w2.stop()
	})

	t.Run("provisions a new incarnation when the environment is gone", func(t *testing.T) {
		s := startSoak(t)
		before := envOf(t, s.rec)
		s.worker.kill9()
		docker(t, "rm", "-f", before.Target.ContainerID)
		w2 := startWorker(t, addr, s.data)
		run := finish(t, s, exitOK)
		after := envOf(t, run)
		if run.Status != store.Completed || run.Incarnations != 2 || after.Target.ContainerID == before.Target.ContainerID {
			t.Errorf("status %s (%s), incarnations %d; want completed on a second incarnation", run.Status, run.Reason, run.Incarnations)
		}
		checkNoLabelled(t, run.ID)
		w2.stop()
	})

	t.Run("an abandoned run is swept", func(t *testing.T) {
		s := startSoak(t)
		s.worker.kill9()
		if err := tc.TerminateWorkflow(context.Background(), s.rec.WorkflowID, "", "abandoned by the test"); err != nil {
			t.Fatal(err)
		}
		sweep := []string{"sweep", "--data", s.data, "--run", s.rec.ID}
		// The store still says running: asked alone, it keeps the environment.
		if code, out, errOut := runCommand(t, sweep...); code != exitOK || !strings.Contains(out, "0 removed") {
			t.Fatalf("sweep without --temporal: exit %d:\n%s%s", code, out, errOut)
		}
		if len(labelled(t, s.rec.ID)) == 0 {
			t.Fatal("the environment was removed although the store says the run is running")
		}
		// Temporal says the workflow is over: the run is abandoned.
		code, out, errOut := runCommand(t, append(sweep, "--temporal", addr)...)
		if code != exitOK || !strings.Contains(out, "removed container") {
			t.Fatalf("sweep --temporal: exit %d:\n%s%s", code, out, errOut)
		}
		checkNoLabelled(t, s.rec.ID)
		run := finish(t, s, exitFailed)
		if run.Status != store.Failed || !strings.Contains(run.Reason, "abandoned") {
			t.Errorf("status %s (%s), want failed as abandoned", run.Status, run.Reason)
		}
	})
}

// TestWorkerStartSweeps: a worker's start (here the in-process worker of
// `longhaul run`) removes the environments of runs its store knows to be
// over, and keeps those of running runs and of runs it does not know (they
// may belong to another store on this host).
func TestWorkerStartSweeps(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run")
	}
	ctx := context.Background()
	data := t.TempDir()
	st := storeOf(t, data)
	for id, s := range map[string]store.Status{"r-done": store.Completed, "r-live": store.Running} {
		if err := st.PutRun(ctx, store.Run{ID: id, Name: id, Kind: "soak", Status: s}); err != nil {
			t.Fatal(err)
		}
	}
	l := provision.NewLocal(provision.Options{DataDir: data, StopGrace: time.Second, Logger: discard})
	spec := scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{soakTarget(t)}, Health: "/health"}}
	envs := map[string]provision.Environment{}
	for _, id := range []string{"r-done", "r-live", "r-unknown"} {
		env, err := l.Provision(ctx, provision.Request{RunID: id, Incarnation: 1, Spec: spec})
		t.Cleanup(func() { _ = l.Teardown(context.Background(), env) })
		if err != nil {
			t.Fatal(err)
		}
		envs[id] = env
	}

	code, _, stderr := runReport(t, localScenario(t, 2), "--data", data)
	if code != exitOK {
		t.Fatalf("longhaul run: exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "removed a leftover of a run that is over") || !strings.Contains(stderr, "run r-done") {
		t.Errorf("the worker did not log what it swept:\n%s", stderr)
	}
	waitGone(t, envs["r-done"].Target.PID)
	for _, id := range []string{"r-live", "r-unknown"} {
		if err := l.Check(ctx, envs[id]); err != nil {
			t.Errorf("environment of %s after the worker's sweep: %v, want it kept", id, err)
		}
	}
}
