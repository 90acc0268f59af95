package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/longhaul-dev/longhaul/internal/mysqlserver"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TargetRestarter starts the target of an existing environment again after
// it crashed (scenario target.restart): a new incarnation of the same
// environment. The database, its data and the environment's directory are
// kept; only the target is started again, with the same command, port and
// environment (local) or container configuration (docker).
type TargetRestarter interface {
	// RestartTarget stops whatever is left of env's target (a hung
	// process, a half-started earlier attempt), starts it again, waits
	// until it is healthy and returns env as it now is: Incarnation set to
	// req.Incarnation, the new process or the restarted container, the
	// TargetURL it answers at (a container's published port may change).
	// req carries the scenario's environment spec and ExtraEnv, as for
	// Provision; env.ID stays, so Teardown and Sweep find everything of
	// every incarnation. It is idempotent: a retry after a lost attempt
	// restarts the target again.
	RestartTarget(ctx context.Context, req Request, env Environment) (Environment, error)
}

var (
	_ TargetRestarter = (*Local)(nil)
	_ TargetRestarter = (*Docker)(nil)
	_ TargetRestarter = (*chooser)(nil)
)

// RestartTarget restarts env's target with the provider that made it.
func (c *chooser) RestartTarget(ctx context.Context, req Request, env Environment) (Environment, error) {
	switch env.Provider {
	case "local":
		return c.local.RestartTarget(ctx, req, env)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return env, fmt.Errorf("restart the target of %s: %w", env.ID, err)
		}
		return d.RestartTarget(ctx, dockerRequest(req), env)
	}
	return env, fmt.Errorf("%w: restart the target of %s: provider %q does not start the target; target.restart needs target.command or target.image", ErrInvalidSpec, env.ID, env.Provider)
}

// launchFile holds, in a local environment's directory, what its target was
// started with (targetLaunch), so that a restart renders the same command
// and environment. Secrets (${env:NAME}) are not in it: they are resolved
// again at the restart, as at provision.
const launchFile = "target-launch.json"

// targetLaunch is what a local target's command and environment were
// rendered from, besides the spec: the template data (port, database,
// TLS files, the provisioned incarnation) and the directory it runs in.
type targetLaunch struct {
	Data templateData `json:"data"`
	Dir  string       `json:"dir,omitempty"`
}

func writeLaunch(envDir string, l targetLaunch) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	// 0600: the private database's generated password is in it (as it is
	// in environment.json).
	if err := os.WriteFile(filepath.Join(envDir, launchFile), b, 0o600); err != nil {
		return fmt.Errorf("record the target's launch: %w", err)
	}
	return nil
}

func readLaunch(envDir string) (targetLaunch, error) {
	var l targetLaunch
	b, err := os.ReadFile(filepath.Join(envDir, launchFile))
	if err != nil {
		return l, err
	}
	return l, json.Unmarshal(b, &l)
}

// targetLogName is the file a local target's output goes to: target.log
// for the incarnation now running, target.N.log for incarnation N once a
// restart has moved it aside.
func targetLogName(envDir string, incarnation int) string {
	if incarnation > 0 {
		old := filepath.Join(envDir, "target."+strconv.Itoa(incarnation)+".log")
		if _, err := os.Stat(old); err == nil {
			return old
		}
	}
	return filepath.Join(envDir, "target.log")
}

// RestartTarget starts a local environment's target again: the same argv,
// directory, port and environment (rendered again from the spec and the
// launch recorded at provision), its marker unchanged, in a new process
// group. The output of the incarnation that crashed is moved aside to
// target.N.log (Logs reads it for incarnation N), so target.log and its
// exit status are the new incarnation's.
func (l *Local) RestartTarget(ctx context.Context, req Request, env Environment) (Environment, error) {
	envDir, state, err := l.stateToRestart(env, "target")
	if err != nil {
		return env, err
	}
	launch, err := readLaunch(envDir)
	if err != nil {
		return env, fmt.Errorf("restart the target of %s: it was provisioned without a record of its launch (%v); restarts need environments provisioned by this version", env.ID, err)
	}
	log := l.opts.Logger.With("env", env.ID, "incarnation", req.Incarnation)
	marker := markerFor(state.ID, "")
	if err := stopProcesses(ctx, state.Target.PID, marker, syscall.SIGTERM, l.opts.StopGrace); err != nil {
		return env, fmt.Errorf("restart the target of %s: stop what is left of it: %w", env.ID, err)
	}
	logPath := filepath.Join(envDir, "target.log")
	if state.Incarnation < req.Incarnation {
		// The first attempt of this restart: keep the crashed incarnation's
		// output apart. (A retry finds the state moved on and starts over
		// on target.log.)
		old := filepath.Join(envDir, "target."+strconv.Itoa(state.Incarnation)+".log")
		if err := os.Rename(logPath, old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return env, fmt.Errorf("restart the target of %s: keep its output: %w", env.ID, err)
		}
		state.Incarnation = req.Incarnation
	}
	_ = os.Remove(exitFile(logPath)) // the crashed process's: not the new one's
	state.Target.PID = 0
	if err := writeState(envDir, state); err != nil {
		return env, err
	}

	t := req.Spec.Target
	vars, err := renderEnv(t.Env, req.ExtraEnv, launch.Data.Port, launch.Data, req.LookupEnv)
	if err != nil {
		return env, err
	}
	argv, err := renderArgs(t.Command, launch.Data, req.LookupEnv)
	if err != nil {
		return env, err
	}
	if len(argv) == 0 {
		return env, fmt.Errorf("%w: the local provider needs target.command (the argv of the target process)", ErrInvalidSpec)
	}
	exited, err := l.start(argv, launch.Dir, vars, marker, logPath, nil, func(pid int) {
		state.Target.PID = pid
		_ = writeState(envDir, state)
	})
	if err != nil {
		return env, fmt.Errorf("restart target %q: %w", argv[0], err)
	}
	log.Info("target restarted", "pid", state.Target.PID, "url", state.TargetURL)
	if err := waitReady(ctx, state.TargetURL, t.Health, healthTimeout(t.HealthTimeout.D()), exited); err != nil {
		return state, fmt.Errorf("restarted target %s: %w", state.TargetURL, errWithTail(err, "its log", lastLines(logPath, 20)))
	}
	return state, writeState(envDir, state)
}

// stateToRestart returns a local environment's directory and its state on
// disk, for a restart of its target or database (what). The state on disk
// is the full description: the env in hand may have lost its database
// password on the way through the workflow.
func (l *Local) stateToRestart(env Environment, what string) (string, Environment, error) {
	if err := l.sameHost(env); err != nil {
		return "", env, fmt.Errorf("restart the %s of %s: %w", what, env.ID, err)
	}
	envDir := env.EnvDir
	if envDir == "" {
		envDir = env.Target.DataDir
	}
	state, err := readState(envDir)
	if err != nil {
		return envDir, env, fmt.Errorf("%w: restart the %s of %s: its state is gone (%v)", ErrGone, what, env.ID, err)
	}
	return envDir, state, nil
}

// healthTimeout is target.health_timeout, DefaultHealthTimeout when unset.
func healthTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultHealthTimeout
	}
	return d
}

// RestartTarget restarts a docker environment's target container (docker
// restart: the same container, image, configuration, network and volume)
// and waits until it is healthy. Its ports are published on 127.0.0.1 again,
// at ports the engine picks anew, so TargetURL, Ports and the route are
// read again. Target.StartedAt marks the restart: the new incarnation's
// log starts there.
func (d *Docker) RestartTarget(ctx context.Context, req Request, env Environment) (Environment, error) {
	id := env.Target.ContainerID
	if id == "" {
		return env, fmt.Errorf("%w: restart the target of %s: no container recorded", ErrGone, env.ID)
	}
	log := d.opts.Logger.With("env", env.ID, "incarnation", req.Incarnation)
	t := req.Spec.Target
	port := t.Port
	if port == 0 {
		port = DefaultContainerPort
	}
	grace := max(int(d.opts.StopGrace.Seconds()), 1)
	started := time.Now().UTC()
	if _, err := d.cli.ContainerRestart(ctx, id, client.ContainerRestartOptions{Timeout: &grace}); err != nil {
		return env, fmt.Errorf("restart the target container %s of %s: %w", shortID(id), env.ID, err)
	}
	env.Incarnation = req.Incarnation
	env.Target.StartedAt = started
	r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return env, fmt.Errorf("restart the target container %s: inspect: %w", shortID(id), err)
	}
	var ports network.PortMap
	if ns := r.Container.NetworkSettings; ns != nil {
		ports = ns.Ports
	}
	hostPort := func(p int) (int, error) {
		for _, b := range ports[network.MustParsePort(strconv.Itoa(p)+"/tcp")] {
			if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
				return n, nil
			}
		}
		return 0, fmt.Errorf("restart the target container %s: port %d/tcp is not published after the restart", shortID(id), p)
	}
	hp, err := hostPort(port)
	if err != nil {
		return env, err
	}
	scheme, _, _ := strings.Cut(env.TargetURL, "://")
	env.TargetURL = scheme + "://127.0.0.1:" + strconv.Itoa(hp)
	for cp := range env.Ports {
		if env.Ports[cp], err = hostPort(cp); err != nil {
			return env, err
		}
	}
	if err := waitReady(ctx, env.TargetURL, t.Health, healthTimeout(t.HealthTimeout.D()), nil); err != nil {
		return env, fmt.Errorf("restarted target %s: %w", env.TargetURL, errWithTail(err, "the container's log", containerTail(ctx, d.cli, id)))
	}
	env.Route, env.NetNS = "", nil
	if err := d.chooseRoute(ctx, &env, port, log); err != nil {
		return env, err
	}
	log.Info("target restarted", "url", env.TargetURL, "container", shortID(id))
	return env, nil
}

// DatabaseRestarter starts an environment's private database again, in
// place, after it stopped (killed -9, crashed): what a service manager does
// for a database it runs. The data directory (local) or container and volume
// (docker) are the same, so the server's crash recovery keeps the data; the
// target is not touched, and finds its database at the address it was given
// (local: the same port; docker: the same network alias), as after any
// database restart. A database that is running is left as it is.
type DatabaseRestarter interface {
	// RestartDatabase starts env's database, waits until it takes
	// connections and returns env as it now is (the database's new process;
	// a container's URL at the port it is published on now). env.Database.URL
	// must carry the password for a docker database (the adapter's DSN):
	// readiness is a connection as the probes make it.
	RestartDatabase(ctx context.Context, env Environment) (Environment, error)
}

var (
	_ DatabaseRestarter = (*Local)(nil)
	_ DatabaseRestarter = (*Docker)(nil)
	_ DatabaseRestarter = (*chooser)(nil)
)

// RestartDatabase restarts env's database with the provider that made it.
func (c *chooser) RestartDatabase(ctx context.Context, env Environment) (Environment, error) {
	switch env.Provider {
	case "local":
		return c.local.RestartDatabase(ctx, env)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return env, fmt.Errorf("restart the database of %s: %w", env.ID, err)
		}
		return d.RestartDatabase(ctx, env)
	}
	return env, fmt.Errorf("%w: restart the database of %s: provider %q does not run its database", ErrInvalidSpec, env.ID, env.Provider)
}

// RestartDatabase starts a local environment's private PostgreSQL or
// MariaDB/MySQL server again on its data directory and port. What is left
// of the server that stopped (PostgreSQL's backends outlive a postmaster
// killed -9 for a moment, and hold its shared memory, which a new
// postmaster refuses to share) is killed first: it was not shut down
// cleanly anyway, and crash recovery follows. The server's output goes on
// in the same log, after the crash.
func (l *Local) RestartDatabase(ctx context.Context, env Environment) (Environment, error) {
	envDir, state, err := l.stateToRestart(env, "database")
	if err != nil {
		return env, err
	}
	db := state.Database
	if db == nil || db.Process.DataDir == "" {
		return env, fmt.Errorf("%w: restart the database of %s: it has no private database", ErrInvalidSpec, env.ID)
	}
	u, err := url.Parse(db.URL)
	if err != nil {
		return env, fmt.Errorf("restart the database of %s: its URL: %w", env.ID, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return env, fmt.Errorf("restart the database of %s: no port in its URL", env.ID)
	}
	role, dir := dbRole(db.Kind), db.Process.DataDir
	data := filepath.Join(dir, "data")
	var argv []string
	var cred *syscall.Credential
	var ready func(exited <-chan struct{}) error
	var pidFile string // where the server writes its pid
	switch {
	case role == "postgres":
		pidFile = filepath.Join(data, "postmaster.pid")
		bin := l.opts.PostgresBinDir
		if bin == "" {
			if bin, err = PostgresBinDir(); err != nil {
				return env, err
			}
		}
		if cred, err = serverCredential("postgres", "PostgreSQL"); err != nil {
			return env, err
		}
		argv = postgresArgs(bin, data, port, hasStatStatements(bin))
		ready = func(exited <-chan struct{}) error { return waitPostgres(ctx, port, DefaultHealthTimeout, exited) }
	case scenarios.IsMySQL(db.Kind):
		srv, err := mysqlserver.Find()
		if err != nil {
			return env, fmt.Errorf("restart the database of %s: %w", env.ID, err)
		}
		if cred, err = serverCredential("mysql", "MySQL/MariaDB"); err != nil {
			return env, err
		}
		argv = srv.Args(dir, data, port)
		pidFile = filepath.Join(dir, "mysqld.pid")
		ready = func(exited <-chan struct{}) error {
			return waitMySQL(ctx, mysqlserver.SocketDSN(mysqlserver.Socket(dir)), role, DefaultHealthTimeout, exited)
		}
	default:
		return env, fmt.Errorf("%w: restart the database of %s: the local provider does not restart a %s server", ErrInvalidSpec, env.ID, db.Kind)
	}
	marker := markerFor(state.ID, role)
	if err := stopProcesses(ctx, db.Process.PID, marker, syscall.SIGKILL, l.opts.StopGrace); err != nil {
		return env, fmt.Errorf("restart the database of %s: stop what is left of it: %w", env.ID, err)
	}
	logPath := filepath.Join(envDir, role+".log")
	started := time.Now()
	for attempt := 1; ; attempt++ {
		// A server someone else started on the data directory (an
		// operator's pg_ctl restart) is stopped, fast, and started again
		// as longhaul's own: the checks and teardown find it by its marker.
		if err := stopForeignServer(ctx, pidFile, marker, l.opts.StopGrace); err != nil {
			return env, fmt.Errorf("restart %s of %s: %w", role, env.ID, err)
		}
		_ = os.Remove(exitFile(logPath)) // the stopped server's: not the new one's
		exited, err := l.start(argv, dir, []string{"LC_ALL=C"}, marker, logPath, cred, func(pid int) {
			db.Process.PID = pid
			_ = writeState(envDir, state)
		})
		if err != nil {
			return env, fmt.Errorf("restart %s of %s: %w", role, env.ID, err)
		}
		err = ready(exited)
		if err == nil {
			break
		}
		// One that exited at once may have lost the data directory's lock
		// to a server started meanwhile by someone else: stop that one and
		// try again.
		select {
		case <-exited:
			if attempt < 3 {
				continue
			}
		default:
		}
		return state, fmt.Errorf("restart %s of %s: %w", role, env.ID, errWithTail(err, "its log", lastLines(logPath, 20)))
	}
	l.opts.Logger.Info("database restarted", "env", env.ID, "pid", db.Process.PID, "port", port, "seconds", time.Since(started).Seconds())
	return state, writeState(envDir, state)
}

// stopForeignServer stops the server whose pid pidFile names when it runs
// without marker (it was not started by longhaul): SIGINT (PostgreSQL's
// fast shutdown; MariaDB and MySQL take it as a shutdown too), then
// SIGKILL after grace.
func stopForeignServer(ctx context.Context, pidFile, marker string, grace time.Duration) error {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 || !alive(pid) || hasMarker(pid, marker) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGINT)
	deadline := time.Now().Add(max(grace, time.Second))
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop the server %d running on its data directory: %w", pid, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// RestartDatabase starts a docker environment's database container again
// (docker start: the same container, volume and network alias) unless the
// engine is already restarting it (or someone restarted it: a
// RestartedError), and waits until it takes connections at its 127.0.0.1
// port, which the engine may have picked anew. The container's start is
// recorded (Process.StartedAt) for the checks after.
func (d *Docker) RestartDatabase(ctx context.Context, env Environment) (Environment, error) {
	id := dbContainer(env)
	if id == "" {
		return env, fmt.Errorf("%w: restart the database of %s: no container recorded", ErrGone, env.ID)
	}
	db := *env.Database
	kind := dbRole(db.Kind)
	// A server longhaul knows how to wait for (a connection as the probes
	// make it); another (MongoDB) is only followed to its new port when
	// someone else restarted it, never started by longhaul.
	waits := kind == "postgres" || scenarios.IsMySQL(kind)
	inner, err := url.Parse(db.TargetURL)
	if err != nil || inner.Port() == "" {
		return env, fmt.Errorf("restart the database of %s: no port in its target URL", env.ID)
	}
	started := time.Now()
	r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return env, fmt.Errorf("restart the database container %s of %s: inspect: %w", shortID(id), env.ID, err)
	}
	if st := r.Container.State; st == nil || !(st.Running || st.Restarting) {
		if !waits {
			return env, fmt.Errorf("%w: restart the database of %s: longhaul does not restart a %s container", ErrInvalidSpec, env.ID, kind)
		}
		if _, err := d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			return env, fmt.Errorf("restart the database container %s of %s: %w", shortID(id), env.ID, err)
		}
	}
	hostPort, startedAt, err := d.publishedPort(ctx, id, inner.Port(), DefaultHealthTimeout)
	if err != nil {
		return env, fmt.Errorf("restart the database container %s of %s: %w", shortID(id), env.ID, err)
	}
	u, err := url.Parse(db.URL)
	if err != nil {
		return env, fmt.Errorf("restart the database of %s: its URL: %w", env.ID, err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort))
	db.URL = u.String()
	// The start the next checks compare with: a later one is a restart
	// someone else made (RestartedError).
	db.Process.StartedAt = startedAt
	env.Database = &db
	if !waits {
		d.opts.Logger.Info("database restarted by someone else, followed", "env", env.ID, "container", shortID(id), "port", hostPort)
		return env, nil
	}
	if err := waitDatabaseURL(ctx, kind, u, DefaultHealthTimeout); err != nil {
		return env, fmt.Errorf("restart the database container %s of %s: %w", shortID(id), env.ID, errWithTail(err, "the container's log", containerTail(ctx, d.cli, id)))
	}
	d.opts.Logger.Info("database restarted", "env", env.ID, "container", shortID(id), "port", hostPort, "seconds", time.Since(started).Seconds())
	return env, nil
}

// publishedPort waits until container id runs and port/tcp is published on
// the host, and returns the host port and when the container was started
// (its state's StartedAt; zero if the engine did not say).
func (d *Docker) publishedPort(ctx context.Context, id, port string, timeout time.Duration) (int, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := network.MustParsePort(port + "/tcp")
	for {
		r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err == nil && r.Container.State != nil && r.Container.State.Running && r.Container.NetworkSettings != nil {
			for _, b := range r.Container.NetworkSettings.Ports[p] {
				if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
					started, _ := engineTime(r.Container.State.StartedAt)
					return n, started, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return 0, time.Time{}, fmt.Errorf("%w: port %s/tcp not published after %s", ErrNotReady, port, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitDatabaseURL waits until the database at u (a postgres:// or
// mysql:// / mariadb:// URL with its password) takes a connection.
func waitDatabaseURL(ctx context.Context, kind string, u *url.URL, timeout time.Duration) error {
	if kind == "postgres" {
		q := u.Query()
		q.Set("connect_timeout", "2")
		c := *u
		c.RawQuery = q.Encode()
		return waitPostgresAt(ctx, c.String(), timeout, nil)
	}
	return waitMySQL(ctx, mysqlDriverDSN(u), kind, timeout, nil)
}

// mysqlDriverDSN is the Go driver's DSN of a mysql:// or mariadb:// URL.
func mysqlDriverDSN(u *url.URL) string {
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	return mysqlserver.DriverDSN(u.User.Username(), pw, u.Hostname(), port, strings.TrimPrefix(u.Path, "/"))
}

// RestartedError is Check's error when the environment's database
// container runs but was started again since the environment recorded its
// start: someone else restarted it (docker restart, fast enough that no
// check saw it stopped). The environment is whole, but the database's
// published port changed: RestartDatabase finds it and records the new
// start, and the drive records the event (Kind database_exit, not
// Restarted: longhaul did not restart it) with the window.
type RestartedError struct {
	Event window.Event
}

func (e *RestartedError) Error() string { return e.Event.Detail }

// FaultEvent returns the event (see ExitError.FaultEvent).
func (e *RestartedError) FaultEvent() window.Event { return e.Event }

// RestartedElsewhere says that the database was restarted by someone other
// than longhaul and runs: it is to be followed, not started.
func (e *RestartedError) RestartedElsewhere() bool { return true }

// databaseRestarted returns a RestartedError when the database container c
// of env was started since the start env recorded: when it stopped
// (FinishedAt) and how long it was down, as far as the engine says. It
// returns nil when env recorded no start (an environment provisioned
// before this was recorded) or the engine gives none.
func databaseRestarted(env Environment, c container.InspectResponse) *RestartedError {
	if env.Database == nil || env.Database.Process.StartedAt.IsZero() || c.State == nil {
		return nil
	}
	started, ok := engineTime(c.State.StartedAt)
	if !ok || started.Equal(env.Database.Process.StartedAt) {
		return nil
	}
	id := shortID(env.Database.Process.ContainerID)
	ev := window.Event{Kind: window.EventDatabaseExit, Container: id, RestartedElsewhere: true}
	down := "how long it was down is not known"
	if stopped, ok := engineTime(c.State.FinishedAt); ok && stopped.After(env.Database.Process.StartedAt) && !stopped.After(started) {
		ev.At = stopped
		down = fmt.Sprintf("down for %.1f s", started.Sub(stopped).Seconds())
	}
	ev.Detail = fmt.Sprintf("the database container %s was restarted, not by longhaul (%s; started again at %s)", id, down, started.Format("15:04:05.000"))
	return &RestartedError{ev}
}
