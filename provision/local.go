package provision

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// Local runs targets (and private PostgreSQL clusters) as processes on this
// host. It is safe for concurrent use; its methods need nothing but the
// Environment, so another Local (another worker process) can Check or tear
// down what this one provisioned.
type Local struct {
	opts Options
	wg   sync.WaitGroup // reapers of children started by this Local
}

var (
	_ Provisioner = (*Local)(nil)
	_ Sweeper     = (*Local)(nil)
)

// NewLocal returns the local provider.
func NewLocal(opts Options) *Local {
	return &Local{opts: opts.withDefaults()}
}

// stateFile is the Environment as JSON in the environment's state directory.
const stateFile = "environment.json"

func (l *Local) stateRoot() string { return filepath.Join(l.opts.DataDir, "provision") }

// Provision builds and starts the target (and a private PostgreSQL when
// database.kind is postgres), and waits until target.health answers 2xx.
// Leftovers of an earlier attempt at the same incarnation are removed first.
// On error everything created is removed again; the partial Environment is
// returned with the error.
func (l *Local) Provision(ctx context.Context, req Request) (env Environment, err error) {
	spec := req.Spec
	t := spec.Target
	if len(t.Command) == 0 {
		return Environment{}, fmt.Errorf("%w: the local provider needs target.command (the argv of the target process)", ErrInvalidSpec)
	}
	kind := dbKind(spec.Database)
	if err := checkDatabaseKind(kind); err != nil {
		return Environment{}, err
	}
	env = Environment{
		ID:          EnvironmentID(req.RunID, req.Incarnation),
		RunID:       req.RunID,
		Incarnation: req.Incarnation,
		Provider:    "local",
		Host:        l.opts.Hostname,
		CreatedAt:   time.Now().UTC(),
	}
	log := l.opts.Logger.With("env", env.ID)
	envDir := filepath.Join(l.stateRoot(), env.ID)
	if prev, err := readState(envDir); err == nil {
		log.Info("removing leftovers of an earlier attempt")
		if err := l.Teardown(ctx, prev); err != nil {
			return env, fmt.Errorf("remove leftovers of %s: %w", env.ID, err)
		}
	}
	_ = os.RemoveAll(envDir) // a directory without state: an attempt that died early
	if err := os.MkdirAll(envDir, 0o755); err != nil {
		return env, fmt.Errorf("create state directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(envDir, dirMarkerFile), []byte(env.ID+"\n"), 0o644); err != nil {
		return env, fmt.Errorf("create state directory: %w", err)
	}
	env.Target.DataDir = envDir
	env.EnvDir = envDir
	if err := writeState(envDir, env); err != nil {
		return env, err
	}
	defer func() {
		if err != nil {
			// A fresh context: ctx may be what failed (cancelled, deadline).
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.StopGrace+30*time.Second)
			defer cancel()
			if terr := l.Teardown(tctx, env); terr != nil {
				log.Warn("cleanup after failed provision", "err", terr)
			}
		}
	}()

	data := templateData{RunID: req.RunID, Incarnation: req.Incarnation, EnvDir: envDir}
	if kind != "" {
		start := l.startPostgres
		switch {
		case scenarios.IsMySQL(kind):
			start = l.startMySQL
		case scenarios.IsMongoDB(kind):
			start = l.startMongo
		}
		db, err := start(ctx, env.ID, envDir, spec.Database, func(p Process) {
			env.Database = &DatabaseEndpoint{Kind: kind, Process: p}
			_ = writeState(envDir, env)
		})
		if err != nil {
			return env, err
		}
		env.Database = &db.endpoint
		if err := writeState(envDir, env); err != nil {
			return env, err
		}
		data.Database = &db.template
	}

	targetDir := t.Dir
	if req.Prebuilt != "" {
		if targetDir, err = usePrebuilt(req.Prebuilt, envDir, t.Dir); err != nil {
			return env, err
		}
	} else if b := t.Build; b != nil && b.Command != "" {
		dir := b.Dir
		if dir == "" {
			dir = t.Dir
		}
		if err := runBuild(ctx, b.Command, dir, envDir, markerFor(env.ID, ""), log); err != nil {
			return env, err
		}
	}

	port := t.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return env, fmt.Errorf("pick a free port: %w", err)
		}
	} else if ln, lerr := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); lerr != nil {
		// Health checks would otherwise be answered by whatever holds it.
		return env, fmt.Errorf("%w: target.port %d is already in use on 127.0.0.1: stop what holds it, or leave target.port unset to get a free one", ErrInvalidSpec, port)
	} else {
		ln.Close()
	}
	data.Port = port
	scheme := "http"
	if spec.TLS != nil {
		if data.TLS, err = makeSelfSigned(envDir, envDir); err != nil {
			return env, err
		}
		scheme = "https"
	}
	lookup := req.LookupEnv
	vars, err := renderEnv(t.Env, req.ExtraEnv, port, data, lookup)
	if err != nil {
		return env, err
	}
	argv, err := renderArgs(t.Command, data, lookup)
	if err != nil {
		return env, err
	}
	env.TargetURL = scheme + "://127.0.0.1:" + strconv.Itoa(port)
	// What a restart (target.restart) needs to start the same target again.
	if err := writeLaunch(envDir, targetLaunch{Data: data, Dir: targetDir}); err != nil {
		return env, err
	}

	logPath := filepath.Join(envDir, "target.log")
	exited, err := l.start(argv, targetDir, vars, markerFor(env.ID, ""), logPath, nil, func(pid int) {
		env.Target.PID = pid
		_ = writeState(envDir, env)
	})
	if err != nil {
		return env, fmt.Errorf("start target %q: %w", argv[0], err)
	}
	log.Info("target started", "pid", env.Target.PID, "url", env.TargetURL)

	if err := waitReady(ctx, env.TargetURL, t.Health, healthTimeout(t.HealthTimeout.D()), exited); err != nil {
		return env, fmt.Errorf("target %s: %w", env.TargetURL, errWithTail(err, "its log", lastLines(logPath, 20)))
	}
	log.Info("target ready", "url", env.TargetURL)
	return env, writeState(envDir, env)
}

// start runs argv in its own process group with stdout and stderr appended
// to logPath, and returns a channel closed when it exits; its exit status
// is then in exitFile(logPath). onStart receives
// the PID before start returns, so state is written before any wait.
func (l *Local) start(argv []string, dir string, vars []string, marker, logPath string, cred *syscall.Credential, onStart func(pid int)) (<-chan struct{}, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), vars...), markerEnv+"="+marker)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a terminal's Ctrl-C and the worker's death do
	// not reach it, and teardown can signal it with its children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	onStart(cmd.Process.Pid)
	exited := make(chan struct{})
	l.wg.Add(1)
	go func() { // reap it, whenever it ends, and say how for Check
		defer l.wg.Done()
		_ = cmd.Wait()
		writeExit(exitFile(logPath), cmd)
		close(exited)
	}()
	return exited, nil
}

// Teardown stops the target's process group and every process carrying the
// environment's marker (SIGTERM, then SIGKILL after StopGrace), stops the
// private PostgreSQL (fast shutdown), and removes their directories. It is
// idempotent and works from the Environment alone.
func (l *Local) Teardown(ctx context.Context, env Environment) error {
	if env.ID == "" {
		return nil
	}
	if err := l.sameHost(env); err != nil {
		return fmt.Errorf("tear down %s: %w", env.ID, err)
	}
	var errs []error
	if err := stopProcesses(ctx, env.Target.PID, markerFor(env.ID, ""), syscall.SIGTERM, l.opts.StopGrace); err != nil {
		errs = append(errs, fmt.Errorf("stop target: %w", err))
	}
	if db := env.Database; db != nil {
		role := dbRole(db.Kind)
		// PostgreSQL's fast shutdown is SIGINT; MySQL, MariaDB and MongoDB
		// shut down cleanly on SIGTERM.
		sig := syscall.SIGTERM
		if role == "postgres" {
			sig = syscall.SIGINT
		}
		if err := stopProcesses(ctx, db.Process.PID, markerFor(env.ID, role), sig, l.opts.StopGrace); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", role, err))
		} else if err := removeOwnedDir(db.Process.DataDir, env.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove %s data: %w", role, err))
		}
	}
	if len(errs) == 0 {
		if err := removeOwnedDir(env.Target.DataDir, env.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove state directory: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tear down %s: %w", env.ID, err)
	}
	l.opts.Logger.Info("environment removed", "env", env.ID)
	return nil
}

// Check reports whether the target process is alive and accepts connections,
// and the database process is alive.
func (l *Local) Check(ctx context.Context, env Environment) error {
	if err := l.sameHost(env); err != nil {
		return fmt.Errorf("check %s: %w", env.ID, err)
	}
	if !alive(env.Target.PID) || !hasMarker(env.Target.PID, markerFor(env.ID, "")) {
		return &ExitError{processExit(window.EventTargetExit, "target", env.Target.PID, filepath.Join(env.EnvDir, "target.log"))}
	}
	if db := env.Database; db != nil && db.Process.PID > 0 {
		role := dbRole(db.Kind)
		if !alive(db.Process.PID) || !hasMarker(db.Process.PID, markerFor(env.ID, role)) {
			return &ExitError{processExit(window.EventDatabaseExit, "database ("+role+")", db.Process.PID, filepath.Join(env.EnvDir, role+".log"))}
		}
	}
	if err := dialURL(ctx, env.TargetURL); err != nil {
		return fmt.Errorf("%w: target %s: %v", ErrGone, env.TargetURL, err)
	}
	return nil
}

// sameHost refuses an environment made on another host: its processes and
// directories are not here, and "nothing found" must not pass for "removed".
func (l *Local) sameHost(env Environment) error {
	if env.Host != "" && l.opts.Hostname != "" && env.Host != l.opts.Hostname {
		return fmt.Errorf("the environment lives on host %s, not %s: run this on that host's worker", env.Host, l.opts.Hostname)
	}
	return nil
}

// Sweep tears down every environment in the state directory whose run is not
// running, and returns their ids.
func (l *Local) Sweep(ctx context.Context, isRunning func(runID string) bool) ([]string, error) {
	entries, err := os.ReadDir(l.stateRoot())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep local environments: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(l.stateRoot(), e.Name())
		env, err := readState(dir)
		if err != nil {
			l.opts.Logger.Warn("sweep: unreadable state; left alone", "dir", dir, "err", err)
			continue
		}
		if isRunning(env.RunID) || l.sameHost(env) != nil {
			continue
		}
		if err := l.Teardown(ctx, env); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "local environment "+env.ID+" (run "+env.RunID+")")
	}
	return removed, errors.Join(errs...)
}

// Wait waits until every process started by this Local has exited and been
// reaped. Tests use it; a worker does not need to.
func (l *Local) Wait() { l.wg.Wait() }

func readState(dir string) (Environment, error) {
	var env Environment
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return env, err
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return env, fmt.Errorf("read %s: %w", filepath.Join(dir, stateFile), err)
	}
	return env, nil
}

// writeState replaces the state file atomically.
func writeState(dir string, env Environment) error {
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write environment state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("write environment state: %w", err)
	}
	return nil
}

// EnvDirVar names, in the environment of target.build.command, the
// environment's own directory (local provider): build output written there,
// e.g. `go build -o "$LONGHAUL_ENV_DIR/api"`, is removed at teardown and
// found by target.command as {{.EnvDir}}/api.
const EnvDirVar = "LONGHAUL_ENV_DIR"

// runBuild runs command with sh -c in dir, with EnvDirVar set to envDir and
// its output in envDir/build.log; on failure the error carries the last 20
// lines. A build for an environment carries its target's marker (marker;
// "" for a build of no environment): a build orphaned by a worker killed
// meanwhile is stopped by the retry's (or the sweeper's) teardown.
func runBuild(ctx context.Context, command, dir, envDir, marker string, log interface{ Info(string, ...any) }) error {
	logPath := filepath.Join(envDir, "build.log")
	out, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("build target: %w", err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), EnvDirVar+"="+envDir)
	if marker != "" {
		cmd.Env = append(cmd.Env, markerEnv+"="+marker)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	log.Info("building target", "command", command, "dir", dir)
	if err := cmd.Run(); err != nil {
		where := ""
		if dir != "" {
			where = " in " + dir
		}
		return fmt.Errorf("%w: target.build.command %q%s: %s", ErrBuild, command, where,
			withTail(oneLine(err), "its output", lastLines(logPath, 20)))
	}
	log.Info("target built", "seconds", time.Since(start).Seconds())
	return nil
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls baseURL+health until it answers 2xx (or, without a health
// path, until the port accepts connections), the timeout passes, ctx ends, or
// exited closes.
func waitReady(ctx context.Context, baseURL, health string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := 20 * time.Millisecond
	var last error
	for {
		err := probeOnce(ctx, baseURL, health)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil { // not the deadline's own error
			last = err
		}
		select {
		case <-exited:
			return fmt.Errorf("%w: the process exited before it was ready", ErrNotReady)
		case <-ctx.Done():
			what := "accepting connections"
			if health != "" {
				what = "answering 2xx on " + health
			}
			return fmt.Errorf("%w: not %s after %s (last: %v)", ErrNotReady, what, timeout, oneLine(last))
		case <-time.After(interval):
		}
		if interval < 500*time.Millisecond {
			interval = interval * 3 / 2
		}
	}
}

var probeClient = &http.Client{
	Timeout: 5 * time.Second,
	// Readiness only: the target is a process just started on loopback,
	// with the certificate made for it; the driver verifies it.
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	// Readiness must not follow a redirect to somewhere that is not the target.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// probeOnce GETs baseURL+health and wants 2xx; without health it connects.
func probeOnce(ctx context.Context, baseURL, health string) error {
	if health == "" {
		return dialURL(ctx, baseURL)
	}
	if !strings.HasPrefix(health, "/") {
		health = "/" + health
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+health, nil)
	if err != nil {
		return err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: %s", health, resp.Status)
	}
	return nil
}

// checkDatabaseKind refuses a database.kind no provider can run.
func checkDatabaseKind(kind string) error {
	if kind == "" || slices.Contains(scenarios.DatabaseKinds, kind) {
		return nil
	}
	return fmt.Errorf("%w: database.kind %q: want none, %s", ErrInvalidSpec, kind, strings.Join(scenarios.DatabaseKinds, ", "))
}

// dbRole is the marker role of an environment's database process: its
// kind, with "postgres" for environments recorded before kinds were stored.
func dbRole(kind string) string {
	if kind == "" {
		return "postgres"
	}
	return kind
}

func dbKind(db scenarios.Database) string {
	k := strings.ToLower(strings.TrimSpace(db.Kind))
	if k == "none" {
		return ""
	}
	return k
}
