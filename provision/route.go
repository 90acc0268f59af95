package provision

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/longhaul-dev/longhaul/netns"
)

// Routes: how the driver and the probes on the worker's host reach a docker
// target (Environment.Route).
const (
	// RouteNetNS: inside the target container's network namespace, on its
	// own loopback (Environment.NetNS). No proxy is involved and nothing is
	// exposed; the sockets are loopback sockets of the container.
	RouteNetNS = "netns"
	// RoutePublishedPort: through the port the engine publishes on the
	// host's 127.0.0.1 (Environment.TargetURL), which docker's userland
	// proxy (docker-proxy) relays: about 125 µs of CPU per request, measured
	// in bench/docker. The fallback where RouteNetNS is not possible.
	RoutePublishedPort = "published-port"
)

// checkRoute validates Options.Route.
func checkRoute(route string) error {
	switch route {
	case "", "auto", RouteNetNS, RoutePublishedPort:
		return nil
	}
	return fmt.Errorf("%w: docker route %q: want auto, %s or %s", ErrInvalidSpec, route, RouteNetNS, RoutePublishedPort)
}

// routeProbeTimeout bounds the checks that choose the route.
const routeProbeTimeout = 5 * time.Second

// chooseRoute decides how this host reaches the started target container
// listening on port, and records it in env: RouteNetNS when this process
// can enter the container's network namespace and the target answers on
// its loopback there, else RoutePublishedPort with the reason in the log
// (once) and in env.Notes. When Options.Route demands RouteNetNS, not
// being able to use it is an error.
func (d *Docker) chooseRoute(ctx context.Context, env *Environment, port int, log *slog.Logger) error {
	if d.opts.Route == RoutePublishedPort {
		env.Route = RoutePublishedPort
		env.Notes = append(env.Notes, "route: published port "+env.TargetURL+" (the worker's options ask for it)")
		log.Info("driving the target through its published port, as the options ask", "url", env.TargetURL)
		return nil
	}
	t, err := d.netnsTarget(ctx, env.Target.ContainerID, port)
	if err != nil && d.opts.Route == RouteNetNS {
		return fmt.Errorf("route %s, which the options demand: %w", RouteNetNS, err)
	}
	if err != nil {
		note := fmt.Sprintf("route: published port %s through docker-proxy, not the container's own network namespace: %v", env.TargetURL, err)
		log.Warn(note)
		env.Route = RoutePublishedPort
		env.Notes = append(env.Notes, note)
		return nil
	}
	if strings.HasPrefix(env.TargetURL, "https:") {
		t.URL = "https:" + strings.TrimPrefix(t.URL, "http:")
	}
	env.Route = RouteNetNS
	env.NetNS = &t
	log.Info("driving the target inside its container's network namespace", "url", t.URL, "netns", t.ID)
	return nil
}

// netnsTarget finds the container's network namespace and the loopback
// address port answers on inside it. Its errors say why the route is not
// possible here.
func (d *Docker) netnsTarget(ctx context.Context, id string, port int) (netns.Target, error) {
	ctx, cancel := context.WithTimeout(ctx, routeProbeTimeout)
	defer cancel()
	r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return netns.Target{}, fmt.Errorf("inspect the target container: %w", err)
	}
	st := r.Container.State
	if st == nil || st.Pid <= 0 {
		return netns.Target{}, errors.New("the engine reports no process for the target container")
	}
	pid := st.Pid
	path := netns.ContainerPath(pid)
	n, err := netns.Open(path)
	switch {
	case errors.Is(err, netns.ErrNotPermitted):
		return netns.Target{}, fmt.Errorf("%w (entering another network namespace needs CAP_SYS_ADMIN)", err)
	case errors.Is(err, netns.ErrNotFound):
		return netns.Target{}, fmt.Errorf("%w (a worker in a container needs the host's pid namespace, pid: host)", err)
	case err != nil:
		return netns.Target{}, err
	}
	defer n.Close()
	// The pid is the engine's view; make sure it names the container's
	// process here (a worker in its own pid namespace sees other processes
	// under those numbers), after the namespace is open, so a pid reused
	// in between is caught too.
	if err := containerOwnsPID(id, pid, n.ID()); err != nil {
		return netns.Target{}, err
	}
	ap, err := n.LoopbackAddr(ctx, port)
	if err != nil {
		return netns.Target{}, fmt.Errorf("the target does not answer on its container's loopback: %w", err)
	}
	return netns.Target{Path: path, ID: n.ID(), URL: "http://" + ap.String()}, nil // chooseRoute sets the scheme
}

// procRoot is /proc; tests point it elsewhere.
var procRoot = "/proc"

// containerOwnsPID checks that process pid belongs to container id (its
// cgroup path names the container, as every cgroup driver does) and is in
// network namespace nsID.
func containerOwnsPID(id string, pid int, nsID string) error {
	p := procRoot + "/" + strconv.Itoa(pid)
	cg, err := os.ReadFile(p + "/cgroup")
	if err != nil {
		return fmt.Errorf("read the cgroup of pid %d: %w", pid, err)
	}
	if id == "" || !strings.Contains(string(cg), id) {
		return fmt.Errorf("pid %d is not the target container's process here (a worker in a container needs the host's pid namespace, pid: host)", pid)
	}
	if link, err := os.Readlink(p + "/ns/net"); err != nil || link != nsID {
		return fmt.Errorf("pid %d changed network namespace while it was opened (%s, %v)", pid, link, err)
	}
	return nil
}

// dialTarget opens (and closes) one connection to env's target the way the
// driver reaches it: inside its network namespace on RouteNetNS, else
// through TargetURL. A namespace this process cannot enter (a worker
// restarted without the permission) falls back to TargetURL; one that is no
// longer the recorded namespace means the target is gone.
func dialTarget(ctx context.Context, env Environment) error {
	if env.Route == RouteNetNS && env.NetNS != nil {
		n, err := netns.OpenTarget(*env.NetNS)
		switch {
		case err == nil:
			defer n.Close()
			return dialURLWith(ctx, env.NetNS.URL, n.DialContext)
		case errors.Is(err, netns.ErrChanged):
			return err
		}
	}
	return dialURL(ctx, env.TargetURL)
}
