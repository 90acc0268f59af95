package provision

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// localSpec is a local environment running the test target.
func localSpec(t *testing.T, env map[string]string) scenarios.Environment {
	return scenarios.Environment{
		Provider: "local",
		Target: scenarios.Target{
			Command:       []string{targetBinary(t)},
			Env:           env,
			Health:        "/health",
			HealthTimeout: scenarios.Duration(10 * time.Second),
		},
	}
}

func newTestLocal(t *testing.T) (*Local, string) {
	data := t.TempDir()
	l := NewLocal(Options{DataDir: data, StopGrace: 2 * time.Second, Logger: testLogger(t)})
	t.Cleanup(l.Wait)
	return l, data
}

// assertConnectsAsApp connects to the PostgreSQL URL (what fails is said as
// doing) and asserts that it is database shop as user app.
func assertConnectsAsApp(t *testing.T, ctx context.Context, url, doing string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("%s: %v", doing, err)
	}
	var name, usr string
	err = conn.QueryRow(ctx, "SELECT current_database(), current_user").Scan(&name, &usr)
	conn.Close(ctx)
	if err != nil || name != "shop" || usr != "app" {
		t.Errorf("connected to %q as %q (%v), want shop as app", name, usr, err)
	}
}

// assertProvisionError fails unless err is a wantErr whose text contains
// every one of wantMsg, and logs the text (what the user reads).
func assertProvisionError(t *testing.T, err, wantErr error, wantMsg []string) {
	t.Helper()
	if !errors.Is(err, wantErr) {
		t.Fatalf("Provision error = %v, want %v", err, wantErr)
	}
	t.Logf("the error reads:\n%v", err)
	for _, m := range wantMsg {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not contain %q", err, m)
		}
	}
}

// tearDownGone tears env down with p and asserts that nothing of it is left
// (assertGone).
func tearDownGone(t *testing.T, ctx context.Context, p Provisioner, env Environment) {
	t.Helper()
	if err := p.Teardown(ctx, env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	assertGone(t, env)
}

// assertGone fails unless no process carries env's markers and its
// directories are gone.
func assertGone(t *testing.T, env Environment) {
	t.Helper()
	if pids := markedPIDs(markerFor(env.ID, "")); len(pids) > 0 {
		t.Errorf("target processes still running: %v", pids)
	}
	role := "postgres"
	if env.Database != nil {
		role = dbRole(env.Database.Kind)
	}
	if pids := markedPIDs(markerFor(env.ID, role)); len(pids) > 0 {
		t.Errorf("%s processes still running: %v", role, pids)
	}
	if env.Target.PID > 0 && alive(env.Target.PID) {
		t.Errorf("target pid %d still alive", env.Target.PID)
	}
	dirs := []string{env.Target.DataDir}
	if env.Database != nil {
		dirs = append(dirs, env.Database.Process.DataDir)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("directory %s still exists (stat: %v)", d, err)
		}
	}
}

func TestLocalTargetUpAndDown(t *testing.T) {
	l, data := newTestLocal(t)
	ctx := testContext(t, time.Minute)
	buildDir := t.TempDir()
	spec := localSpec(t, map[string]string{"LISTEN": ":{{.Port}}", "GREETING": "${env:LH_GREETING}"})
	spec.Target.Build = &scenarios.Build{Command: "echo built > out.txt", Dir: buildDir}
	req := Request{RunID: "local-1", Incarnation: 2, Spec: spec,
		ExtraEnv:  map[string]string{"EXTRA": "yes"},
		LookupEnv: func(n string) (string, bool) { return "hi", n == "LH_GREETING" }}

	env, err := l.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })

	if got, want := env.ID, "local-1-2"; got != want {
		t.Errorf("env.ID = %q, want %q", got, want)
	}
	if !strings.HasPrefix(env.TargetURL, "http://127.0.0.1:") || env.Provider != "local" || env.Target.PID == 0 {
		t.Errorf("env = %+v, want a local target on 127.0.0.1 with a PID", env)
	}
	port := strings.TrimPrefix(env.TargetURL, "http://127.0.0.1:")
	for name, want := range map[string]string{"PORT": port, "LISTEN": ":" + port, "GREETING": "hi", "EXTRA": "yes", markerEnv: env.ID} {
		if got := get(t, env.TargetURL+"/env/"+name); got != want {
			t.Errorf("target env %s = %q, want %q", name, got, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(buildDir, "out.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("build output = %q, %v; want the build command to have run in build.dir", b, err)
	}
	if _, pg, _ := procStat(env.Target.PID); pg != env.Target.PID {
		t.Errorf("target process group = %d, want its own (%d)", pg, env.Target.PID)
	}
	saved, err := readState(filepath.Join(data, "provision", env.ID))
	if err != nil || saved.Target.PID != env.Target.PID || saved.TargetURL != env.TargetURL {
		t.Errorf("state file = %+v, %v; want the environment", saved, err)
	}
	if err := l.Check(ctx, env); err != nil {
		t.Errorf("Check: %v", err)
	}

	tearDownGone(t, ctx, l, env)
	if err := l.Check(ctx, env); !errors.Is(err, ErrGone) {
		t.Errorf("Check after teardown = %v, want ErrGone", err)
	}
	if err := l.Teardown(ctx, env); err != nil {
		t.Errorf("second Teardown: %v, want nil (idempotent)", err)
	}
	elsewhere := env
	elsewhere.Host = "some-other-host"
	if err := l.Teardown(ctx, elsewhere); err == nil || !strings.Contains(err.Error(), "lives on host some-other-host") {
		t.Errorf("Teardown of another host's environment = %v, want a refusal naming the host", err)
	}
}

// TestLocalBuildIntoEnvDir: the build writes its output into the
// environment's directory ($LONGHAUL_ENV_DIR), target.command finds it there
// ({{.EnvDir}}), and teardown removes it with the directory.
func TestLocalBuildIntoEnvDir(t *testing.T) {
	l, data := newTestLocal(t)
	ctx := testContext(t, time.Minute)
	spec := localSpec(t, map[string]string{"BUILT_IN": "{{.EnvDir}}"})
	spec.Target.Build = &scenarios.Build{Command: fmt.Sprintf(`cp %q "$%s/api"`, targetBinary(t), EnvDirVar), Dir: t.TempDir()}
	spec.Target.Command = []string{"{{.EnvDir}}/api"}
	env, err := l.Provision(ctx, Request{RunID: "local-envdir", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })

	envDir := filepath.Join(data, "provision", env.ID)
	if got := get(t, env.TargetURL+"/env/BUILT_IN"); got != envDir {
		t.Errorf("{{.EnvDir}} = %q, want %q", got, envDir)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", env.Target.PID)); err != nil || exe != filepath.Join(envDir, "api") {
		t.Errorf("target runs %q (%v), want the build output %s", exe, err, filepath.Join(envDir, "api"))
	}
	tearDownGone(t, ctx, l, env)
}

func TestLocalWithPostgres(t *testing.T) {
	if _, err := PostgresBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	l, _ := newTestLocal(t)
	ctx := testContext(t, 2*time.Minute)
	spec := localSpec(t, map[string]string{"DATABASE_URL": "{{.Database.URL}}"})
	spec.Database = scenarios.Database{Kind: "postgres", Name: "shop", User: "app", Password: "p'w"}
	env, err := l.Provision(ctx, Request{RunID: "local-pg", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })

	db := env.Database
	if db == nil || db.Kind != "postgres" || db.Process.PID == 0 || db.Process.DataDir == "" || db.URL != db.TargetURL {
		t.Fatalf("env.Database = %+v, want a local postgres with PID, data dir and one DSN", db)
	}
	if got := get(t, env.TargetURL+"/env/DATABASE_URL"); got != db.URL {
		t.Errorf("target DATABASE_URL = %q, want %q", got, db.URL)
	}
	assertConnectsAsApp(t, ctx, db.URL, "connect as the app user")
	if err := l.Check(ctx, env); err != nil {
		t.Errorf("Check: %v", err)
	}
	tearDownGone(t, ctx, l, env)
}

func TestLocalFailuresLeaveNothing(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*scenarios.Environment)
		wantErr error
		wantMsg []string
	}{
		{
			name:    "process exits before ready",
			mutate:  func(s *scenarios.Environment) { s.Target.Env = map[string]string{"EXIT_AT_START": "3"} },
			wantErr: ErrNotReady,
			wantMsg: []string{"exited before it was ready", "fatal: configured to fail at start"},
		},
		{
			name: "health never 2xx",
			mutate: func(s *scenarios.Environment) {
				s.Target.Env = map[string]string{"FAIL_HEALTH": "1"}
				s.Target.HealthTimeout = scenarios.Duration(time.Second)
			},
			wantErr: ErrNotReady,
			wantMsg: []string{"answering 2xx on /health", "500 Internal Server Error", "target: listening"},
		},
		{
			name: "build fails",
			mutate: func(s *scenarios.Environment) {
				s.Target.Build = &scenarios.Build{Command: "echo compiling; echo 'main.go:3: syntax error' >&2; exit 2"}
			},
			wantErr: ErrBuild,
			wantMsg: []string{"compiling", "main.go:3: syntax error", "exit status 2"},
		},
		{
			name: "fixed port taken",
			mutate: func(s *scenarios.Environment) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					panic(err)
				}
				s.Target.Port = ln.Addr().(*net.TCPAddr).Port
				go func() { time.Sleep(5 * time.Second); ln.Close() }()
			},
			wantErr: ErrInvalidSpec,
			wantMsg: []string{"is already in use on 127.0.0.1"},
		},
		{
			name:    "no command",
			mutate:  func(s *scenarios.Environment) { s.Target.Command = nil },
			wantErr: ErrInvalidSpec,
			wantMsg: []string{"target.command"},
		},
		{
			name:    "unset secret",
			mutate:  func(s *scenarios.Environment) { s.Target.Env = map[string]string{"T": "${env:LH_UNSET_FOR_TEST}"} },
			wantErr: ErrInvalidSpec,
			wantMsg: []string{"${env:LH_UNSET_FOR_TEST} is not set"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, data := newTestLocal(t)
			ctx := testContext(t, time.Minute)
			spec := localSpec(t, nil)
			tt.mutate(&spec)
			env, err := l.Provision(ctx, Request{RunID: "fail", Spec: spec})
			assertProvisionError(t, err, tt.wantErr, tt.wantMsg)
			assertGone(t, env)
			if entries, _ := os.ReadDir(filepath.Join(data, "provision")); len(entries) > 0 {
				t.Errorf("state entries left: %v", entries)
			}
		})
	}
}

func TestLocalTeardownKillsEscapedChildren(t *testing.T) {
	l, _ := newTestLocal(t)
	ctx := testContext(t, time.Minute)
	env, err := l.Provision(ctx, Request{RunID: "children", Spec: localSpec(t, map[string]string{"SPAWN_CHILD": "1"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })
	child, _ := strconv.Atoi(get(t, env.TargetURL+"/child"))
	if _, pg, _ := procStat(child); child == 0 || pg == env.Target.PID {
		t.Fatalf("child %d in group %d: want a child that left the target's group %d", child, pg, env.Target.PID)
	}
	if err := l.Teardown(ctx, env); err != nil {
		t.Fatal(err)
	}
	// The child was reparented; give init a moment to reap it.
	if !waitUntil(ctx, 2*time.Second, func() bool { return !alive(child) }) {
		t.Errorf("child %d outside the process group survived teardown", child)
	}
	assertGone(t, env)
}

// TestLocalSurvivesOwnerDeath: the worker that provisioned a target dies
// (kill -9); the target keeps running (own process group), and another
// Local, knowing only the Environment, checks it and tears it down.
func TestLocalSurvivesOwnerDeath(t *testing.T) {
	data := t.TempDir()
	env := provisionInHelper(t, "local", data, Request{RunID: "orphan", Spec: localSpec(t, nil)})
	l := NewLocal(Options{DataDir: data, StopGrace: 2 * time.Second, Logger: testLogger(t)})
	t.Cleanup(func() { l.Teardown(context.Background(), env) })
	ctx := testContext(t, time.Minute)
	if err := l.Check(ctx, env); err != nil {
		t.Fatalf("Check after the owner died: %v, want the target still up", err)
	}
	if got := get(t, env.TargetURL+"/health"); got != "ok\n" {
		t.Errorf("health = %q", got)
	}
	tearDownGone(t, ctx, l, env)
}

// provisionInHelper provisions req in a child process (the "worker"), reads
// the Environment it prints, and kills it with SIGKILL.
func provisionInHelper(t *testing.T, provider, data string, r Request) Environment {
	t.Helper()
	return provisionInHelperVia(t, nil, provider, data, r)
}

// provisionInHelperVia is provisionInHelper with the helper started by the
// command prefix (such as setpriv dropping a capability).
func provisionInHelperVia(t *testing.T, prefix []string, provider, data string, r Request) Environment {
	t.Helper()
	req, _ := json.Marshal(r)
	argv := append(append([]string(nil), prefix...), os.Args[0], "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=provision", "LONGHAUL_TEST_DATA="+data, "LONGHAUL_TEST_PROVIDER="+provider)
	cmd.Stdin = strings.NewReader(string(req))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read helper output: %v", err)
	}
	var env Environment
	if err := json.Unmarshal([]byte(line), &env); err != nil {
		t.Fatalf("helper: %s", line)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	return env
}

func TestLocalSweep(t *testing.T) {
	l, data := newTestLocal(t)
	ctx := testContext(t, time.Minute)
	keep, err := l.Provision(ctx, Request{RunID: "still-running", Spec: localSpec(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), keep) })
	over, err := l.Provision(ctx, Request{RunID: "finished", Spec: localSpec(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), over) })

	// A different Local on the same data dir: what a restarted worker or
	// `longhaul sweep` sees.
	sweeper := NewLocal(Options{DataDir: data, StopGrace: 2 * time.Second})
	removed, err := sweeper.Sweep(ctx, func(run string) bool { return run == "still-running" })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(removed, ";"), "local environment finished-0 (run finished)"; got != want {
		t.Errorf("removed = %q, want %q", got, want)
	}
	assertGone(t, over)
	if err := l.Check(ctx, keep); err != nil {
		t.Errorf("the running run's environment: %v", err)
	}
	removed, err = sweeper.Sweep(ctx, func(string) bool { return false })
	if err != nil || len(removed) != 1 {
		t.Errorf("sweep --all removed %v (%v), want the other environment", removed, err)
	}
	assertGone(t, keep)
}

func TestLocalProvisionReplacesEarlierAttempt(t *testing.T) {
	l, _ := newTestLocal(t)
	ctx := testContext(t, time.Minute)
	req := Request{RunID: "retry", Spec: localSpec(t, nil)}
	first, err := l.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), first) })
	second, err := l.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), second) })
	if alive(first.Target.PID) {
		t.Errorf("the first attempt's target %d is still running", first.Target.PID)
	}
	if err := l.Check(ctx, second); err != nil {
		t.Errorf("second attempt: %v", err)
	}
}
