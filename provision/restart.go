package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
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
	if err := l.sameHost(env); err != nil {
		return env, fmt.Errorf("restart the target of %s: %w", env.ID, err)
	}
	envDir := env.EnvDir
	if envDir == "" {
		envDir = env.Target.DataDir
	}
	// The state on disk is the full description (the env in hand may have
	// lost its database password on the way through the workflow).
	state, err := readState(envDir)
	if err != nil {
		return env, fmt.Errorf("%w: restart the target of %s: its state is gone (%v)", ErrGone, env.ID, err)
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
