package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
)

// End-to-end tests of issue 9 part 1: kill -9 of the worker while it
// provisions or tears down. Provision and Teardown heartbeat, so the lost
// attempt is noticed within the heartbeat timeout (shortened here, through
// provisionHeartbeatEnv, to keep each case short), and the retry on the next
// worker removes what the dead attempt left before it starts again.

// provisionHeartbeatEnv sets workflows.ProvisionHeartbeatTimeout in a
// longhaul process started by the tests (see TestMain).
const provisionHeartbeatEnv = "LONGHAUL_TEST_PROVISION_HEARTBEAT"

// killStage is one moment of a run at which the worker is killed.
type killStage struct {
	name string
	// build: the kill comes during the target's build; teardown: while the
	// environment is torn down, after the last window. (They shape the local
	// scenario.)
	build, teardown bool
	// reached returns once the worker w is at the stage.
	reached func(t *testing.T, w *proc, runID string)
}

// printed is a stage reached when the worker logs line.
func printed(line string) func(t *testing.T, w *proc, runID string) {
	return func(t *testing.T, w *proc, _ string) { w.waitFor(line, 2*time.Minute) }
}

// killWorkerAt runs scenario on a worker of the dev server at addr, kills the
// worker with SIGKILL at the stage, starts another on the same host queue and
// data directory, and returns the finished run. The run must complete on its
// first incarnation (the retry replaced the lost attempt, not the
// environment).
func killWorkerAt(t *testing.T, addr, scenario string, s killStage) (store.Run, string) {
	t.Helper()
	data := t.TempDir()
	o := procOptions{env: []string{"LONGHAUL_DEBUG=1", provisionHeartbeatEnv + "=5s", "LONGHAUL_HOST_QUEUE=longhaul-host-kill-" + filepath.Base(data)}}
	start := func() *proc {
		w := startProcWith(t, o, "worker", "--temporal", addr, "--data", data)
		w.waitFor("worker on", time.Minute)
		return w
	}
	w1 := start()
	r := startSoakRun(t, scenario, "--temporal", addr, "--data", data, "--format", "json")
	st := storeOf(t, data)
	run := onlyRun(t, st)
	s.reached(t, w1, run.ID)
	killed := time.Now()
	w1.kill9()
	w2 := start()
	if code := r.wait(t); code != exitOK {
		t.Fatalf("longhaul run exit %d, want 0; stderr:\n%s\nworker after the kill:\n%s", code, r.stderr.String(), w2.out.String())
	}
	t.Logf("run ended %.1f s after the kill", time.Since(killed).Seconds())
	run, err := st.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.Completed || run.Incarnations != 1 {
		t.Errorf("status %s (%s), %d incarnations; want completed on the first", run.Status, run.Reason, run.Incarnations)
	}
	ws := runWindows(t, st, run.ID)
	checkWindows(t, ws, 3)
	if !strings.Contains(w2.out.String(), "an earlier attempt was lost") {
		t.Errorf("the new worker did not say it retried a lost attempt:\n%s", w2.out.String())
	}
	w2.stop()
	return run, data
}

// TestWorkerKillWhileProvisioningLocal: kill -9 of the worker during the
// target's build, right after the private PostgreSQL is up, during the
// health wait, and during teardown (local provider). Each run completes,
// and afterwards no process, state directory or PostgreSQL directory of it
// is left.
func TestWorkerKillWhileProvisioningLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soaks with kill -9")
	}
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil {
		t.Skip("no PostgreSQL server binaries under /usr/lib/postgresql")
	}
	_, addr := startDev(t, t.TempDir(), "--worker=false")
	// The build sleeps, the target answers its health check only after 2 s.
	// In the build case the first attempt's build would sleep for 2
	// minutes: only the retry's cleanup stops it in time. In the teardown
	// case the target ignores SIGTERM (a shell that outlives it), so
	// teardown waits out its grace before SIGKILL.
	scenario := func(s killStage) string {
		build := "sleep 2"
		if s.build {
			build = fmt.Sprintf("if [ -e %[1]s ]; then sleep 1; else touch %[1]s; sleep 120; fi", filepath.Join(t.TempDir(), "first-build"))
		}
		cmd := fmt.Sprintf("sleep 2; exec %s", soakTarget(t))
		if s.teardown {
			cmd = fmt.Sprintf("trap '' TERM; %s; sleep 60", soakTarget(t))
		}
		return writeScenario(t, fmt.Sprintf(`name: kill-local
load: {vus: 2, duration: 3s, window: 1s, timeout: 2s}
environment:
  provider: local
  target:
    build: {command: %q}
    command: ["sh", "-c", %q]
    health: /health
    health_timeout: 30s
  database: {kind: postgres}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`, build, cmd))
	}
	for _, s := range []killStage{
		{name: "during the target build", build: true, reached: printed("building target")},
		{name: "after the database is up", reached: printed("postgres ready")},
		{name: "during the health wait", reached: printed("target started")},
		{name: "during teardown", teardown: true, reached: printed("tearing down")},
	} {
		t.Run(s.name, func(t *testing.T) {
			run, data := killWorkerAt(t, addr, scenario(s), s)
			checkNoLocalLeftovers(t, data, run.ID)
		})
	}
}

// checkNoLocalLeftovers fails if a process, state directory or PostgreSQL
// directory of the run's first environment is left (after a short grace).
func checkNoLocalLeftovers(t *testing.T, data, runID string) {
	t.Helper()
	envID := provision.EnvironmentID(runID, 1)
	var left []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		left = localLeftovers(data, envID)
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("left behind by environment %s: %q", envID, left)
}

func localLeftovers(data, envID string) []string {
	var left []string
	// A process of the environment carries its marker or, a build, the
	// environment's directory.
	mine := map[string]bool{
		"LONGHAUL_ENV_ID=" + envID: true, "LONGHAUL_ENV_ID=" + envID + "/postgres": true,
		provision.EnvDirVar + "=" + filepath.Join(data, "provision", envID): true,
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if mine[kv] {
				pid := filepath.Base(filepath.Dir(p))
				if stat, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
					left = append(left, "process "+pid)
				}
				break
			}
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "provision")); len(entries) > 0 {
		for _, e := range entries {
			left = append(left, "state directory "+e.Name())
		}
	}
	pgDirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "longhaul-pg-*"))
	for _, d := range pgDirs {
		if b, err := os.ReadFile(filepath.Join(d, ".longhaul-env")); err == nil && strings.TrimSpace(string(b)) == envID {
			left = append(left, "postgres directory "+d)
		}
	}
	return left
}

// TestWorkerKillWhileProvisioningDocker: the same four kills on the docker
// provider, with a target built from a git repository (a build that takes a
// few seconds, then a target that answers its health check only after 3 s
// and, for the teardown case, ignores SIGTERM). Each run completes; nothing
// labelled with it is left.
func TestWorkerKillWhileProvisioningDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soaks in containers with kill -9")
	}
	requireDocker(t)
	repo := killRepo(t)
	_, addr := startDev(t, t.TempDir(), "--worker=false")
	scenario := func(s killStage) string {
		env := ""
		if s.teardown {
			env = "\n      IGNORE_TERM: \"1\""
		}
		return writeScenario(t, fmt.Sprintf(`name: kill-docker
load: {vus: 2, duration: 3s, window: 1s, timeout: 2s}
environment:
  provider: docker
  target:
    build: {repo: %q}
    env:
      DATABASE_URL: "{{.Database.URL}}"%s
    health: /health
    health_timeout: 30s
  database: {kind: postgres, image: "longhaul/postgres:15-offline"}
ops:
  - name: health
    weight: 1
    request: {method: GET, path: /health}
`, repo, env))
	}
	for _, s := range []killStage{
		// First: later cases reuse the image built from the same commit.
		{name: "during the target build", reached: printed("building target image")},
		{name: "after the database is up", reached: printed("starting target")},
		{name: "during the health wait", reached: func(t *testing.T, w *proc, runID string) {
			w.waitFor("starting target", 2*time.Minute)
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if strings.Contains(docker(t, "ps", "--filter", "label=dev.longhaul.run="+runID, "--format", "{{.Image}}"), provision.TargetImageRepo+"/") {
					return
				}
			}
			t.Fatal("the target container never ran")
		}},
		{name: "during teardown", teardown: true, reached: printed("tearing down")},
	} {
		t.Run(s.name, func(t *testing.T) {
			run, _ := killWorkerAt(t, addr, scenario(s), s)
			checkNoLabelled(t, run.ID)
		})
	}
}

// killRepo makes a git repository whose Dockerfile builds the demo target
// into an image with a shell: a build step that sleeps (a fresh nonce, so no
// cache skips it), and an entrypoint that starts the target after 3 s and,
// with IGNORE_TERM set, ignores SIGTERM, so `docker stop` waits its grace.
// The image is removed when the test ends.
func killRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "kill-fixture")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	dockerfile := `FROM longhaul/postgres:15-offline AS slow
COPY nonce /nonce
RUN sleep 4
FROM longhaul/postgres:15-offline
COPY --from=slow /nonce /nonce
COPY --from=longhaul/demo-target:latest /demo-target /demo-target
ENV PORT=8080 TMPDIR=/tmp
ENTRYPOINT ["sh", "-c", "sleep 3; if [ -n \"$IGNORE_TERM\" ]; then trap '' TERM; /demo-target; sleep 60; else exec /demo-target; fi"]
`
	files := map[string]string{"Dockerfile": dockerfile, "nonce": fmt.Sprintf("%d\n", time.Now().UnixNano())}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "kill fixture"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		out, _ := exec.Command("docker", "images", "--filter", "label=dev.longhaul.repo="+repo, "--format", "{{.ID}}").Output()
		for _, id := range strings.Fields(string(out)) {
			_ = exec.Command("docker", "rmi", "-f", id).Run()
		}
	})
	return repo
}
