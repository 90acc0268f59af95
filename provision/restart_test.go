package provision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// TestLocalRestartTarget: a local target killed with SIGKILL is started
// again as incarnation 2 of the same environment: a new process (its own
// group, the same marker) on the same port with the same rendered
// environment, secrets resolved again; the environment's directory and
// what the target wrote there are kept; the crashed incarnation's output is
// kept apart as target.1.log. A retried restart starts it once more and
// does not clobber that output. Teardown removes everything.
func TestLocalRestartTarget(t *testing.T) {
	l, _ := newTestLocal(t)
	ctx := testContext(t, time.Minute)
	spec := localSpec(t, map[string]string{"LISTEN": ":{{.Port}}", "GREETING": "${env:LH_GREETING}", "INC": "{{.Incarnation}}"})
	greeting := "hi"
	req := Request{RunID: "restart-1", Incarnation: 1, Spec: spec,
		ExtraEnv:  map[string]string{"EXTRA": "yes"},
		LookupEnv: func(n string) (string, bool) { return greeting, n == "LH_GREETING" }}
	env, err := l.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })
	kept := filepath.Join(env.EnvDir, "data.db")
	if err := os.WriteFile(kept, []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := env.Target.PID
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var exit *ExitError
	if err := waitCheck(ctx, l, env); !errors.As(err, &exit) || exit.Event.Signal != int(syscall.SIGKILL) {
		t.Fatalf("Check after kill -9 = %v, want the exit by signal 9", err)
	}

	greeting = "hello again" // resolved anew at the restart, never stored
	req.Incarnation = 2
	env2, err := l.RestartTarget(ctx, req, env)
	if err != nil {
		t.Fatalf("RestartTarget: %v", err)
	}
	env = env2
	if env2.ID != "restart-1-1" || env2.Incarnation != 2 || env2.Target.PID == 0 || env2.Target.PID == first {
		t.Errorf("restarted env: id %s incarnation %d pid %d (was %d); want the same id, incarnation 2, a new pid", env2.ID, env2.Incarnation, env2.Target.PID, first)
	}
	port := strings.TrimPrefix(env2.TargetURL, "http://127.0.0.1:")
	for name, want := range map[string]string{"PORT": port, "LISTEN": ":" + port, "GREETING": "hello again", "EXTRA": "yes", "INC": "1", markerEnv: env2.ID} {
		if got := get(t, env2.TargetURL+"/env/"+name); got != want {
			t.Errorf("restarted target env %s = %q, want %q", name, got, want)
		}
	}
	if _, pg, _ := procStat(env2.Target.PID); pg != env2.Target.PID {
		t.Errorf("restarted target's process group = %d, want its own (%d)", pg, env2.Target.PID)
	}
	if err := l.Check(ctx, env2); err != nil {
		t.Errorf("Check after the restart: %v", err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "rows" {
		t.Errorf("the environment's data after the restart: %q, %v; want it kept", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.EnvDir, launchFile)); strings.Contains(string(b), "hello again") || strings.Contains(string(b), `"hi"`) {
		t.Errorf("the launch record holds a resolved secret: %s", b)
	}
	logsOf := func(inc int) string {
		e := env2
		e.Incarnation = inc
		outs, err := l.Logs(ctx, e, 1<<20)
		if err != nil || len(outs) != 1 {
			t.Fatalf("Logs of incarnation %d: %v, %v", inc, outs, err)
		}
		return string(outs[0].Text)
	}
	if got := logsOf(1); strings.Count(got, "target: listening") != 1 {
		t.Errorf("incarnation 1's output = %q, want its one start", got)
	}

	// A retry of the same restart (its first attempt lost with its worker).
	env3, err := l.RestartTarget(ctx, req, env2)
	if err != nil {
		t.Fatalf("retried RestartTarget: %v", err)
	}
	env = env3
	if env3.Incarnation != 2 || env3.Target.PID == env2.Target.PID || alive(env2.Target.PID) {
		t.Errorf("retried restart: incarnation %d pid %d (attempt before: %d, alive %v)", env3.Incarnation, env3.Target.PID, env2.Target.PID, alive(env2.Target.PID))
	}
	if pids := markedPIDs(markerFor(env3.ID, "")); len(pids) != 1 || pids[0] != env3.Target.PID {
		t.Errorf("processes with the target's marker: %v, want only %d", pids, env3.Target.PID)
	}
	if got := logsOf(1); strings.Count(got, "target: listening") != 1 {
		t.Errorf("incarnation 1's output after a retried restart = %q, want it untouched", got)
	}

	if err := l.Teardown(ctx, env3); err != nil {
		t.Fatal(err)
	}
	assertGone(t, env3)
	if alive(first) || alive(env2.Target.PID) {
		t.Errorf("an earlier incarnation's process is alive after teardown")
	}
}

// TestRestartTargetURLProvider: a target longhaul did not start cannot be
// restarted; the error says so.
func TestRestartTargetURLProvider(t *testing.T) {
	p, err := New("local", Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.(TargetRestarter).RestartTarget(context.Background(), Request{}, Environment{ID: "u-1", Provider: "url"})
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "target.restart needs target.command or target.image") {
		t.Errorf("RestartTarget of a url target = %v", err)
	}
}

// waitCheck polls Check until it fails (the reaper may lag the kill).
func waitCheck(ctx context.Context, p interface {
	Check(context.Context, Environment) error
}, env Environment) error {
	for {
		err := p.Check(ctx, env)
		if err != nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDockerRestartTarget: a target container killed with SIGKILL is
// restarted as incarnation 2 of the same environment: the same container,
// published on 127.0.0.1 again, healthy; the environment volume keeps what
// the target wrote; its log for incarnation 2 starts at the restart.
// Teardown removes everything labelled with the environment.
func TestDockerRestartTarget(t *testing.T) {
	d := dockerForTest(t)
	img := testTag("restart")
	buildTestImage(t, d, img)
	ctx := testContext(t, 2*time.Minute)
	req := Request{RunID: "docker-restart", Incarnation: 1,
		Spec: scenarios.Environment{Target: scenarios.Target{Image: img, Health: "/health", Port: 8080, Env: map[string]string{"GREETING": "{{.Incarnation}}"}}}}
	env, err := d.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Teardown(context.Background(), env) })
	if env.EnvDir != "" {
		_ = os.WriteFile(filepath.Join(env.EnvDir, "data.db"), []byte("rows"), 0o644)
	}
	exit := killTargetContainer(ctx, t, d, env)
	if exit == nil || exit.Event.ExitCode == nil || *exit.Event.ExitCode != 137 {
		t.Fatalf("Check after kill = %+v, want exit code 137", exit)
	}

	req.Incarnation = 2
	env2, err := d.RestartTarget(ctx, req, env)
	if err != nil {
		t.Fatalf("RestartTarget: %v", err)
	}
	env = env2
	if env2.ID != "docker-restart-1" || env2.Incarnation != 2 || env2.Target.ContainerID == "" || env2.Target.StartedAt.IsZero() || !strings.HasPrefix(env2.TargetURL, "http://127.0.0.1:") {
		t.Errorf("restarted env = %+v", env2)
	}
	if err := d.Check(ctx, env2); err != nil {
		t.Errorf("Check after the restart: %v", err)
	}
	if got := get(t, env2.TargetURL+"/env/GREETING"); got != "1" {
		t.Errorf("restarted container's env GREETING = %q, want the provisioned %q", got, "1")
	}
	if env2.EnvDir != "" {
		if b, err := os.ReadFile(filepath.Join(env2.EnvDir, "data.db")); err != nil || string(b) != "rows" {
			t.Errorf("the environment volume after the restart: %q, %v; want it kept", b, err)
		}
	}
	outs, err := d.Logs(ctx, env2, 1<<20)
	if err != nil || len(outs) != 1 || strings.Count(string(outs[0].Text), "target: listening") != 1 {
		t.Errorf("incarnation 2's log = %+v, %v; want its own start only", outs, err)
	}
	if err := d.Teardown(ctx, env2); err != nil {
		t.Fatal(err)
	}
	assertNoLabelled(t, d, LabelEnv, env2.ID)
}
