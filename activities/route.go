package activities

import (
	"context"
	"log/slog"
	"net"

	"github.com/longhaul-dev/longhaul/netns"
	"github.com/longhaul-dev/longhaul/probes"
)

// targetRoute is this worker's way to an environment's target, opened: the
// base URL to use and, on the netns route, the dialer that opens
// connections inside the target container's network namespace.
type targetRoute struct {
	URL  string
	Dial func(ctx context.Context, network, address string) (net.Conn, error) // nil: a plain dial
	ns   *netns.Namespace
}

// openRoute opens env's route for user ("driver", "probes"): inside the
// target's network namespace when env.NetNS is set and this worker can
// enter it (the one the provider recorded), else TargetURL, saying why in
// one log line.
func openRoute(env Environment, log *slog.Logger, user string) targetRoute {
	if env.NetNS == nil {
		return targetRoute{URL: env.TargetURL}
	}
	n, err := netns.OpenTarget(*env.NetNS)
	if err != nil {
		log.Warn("cannot enter the target's network namespace; using its published port", "for", user, "url", env.TargetURL, "err", err)
		return targetRoute{URL: env.TargetURL}
	}
	return targetRoute{URL: env.NetNS.URL, Dial: n.DialContext, ns: n}
}

// tcpTables reads the socket tables of the network namespace the target
// listens in: the container's, on the netns route; a local process's own
// (pid); nil when neither is known (a container reached through its
// published port: the host's table holds docker-proxy's connections, not
// the target's).
func (r targetRoute) tcpTables(pid int) func() ([][]byte, error) {
	switch {
	case r.ns != nil:
		return r.ns.TCPTables
	case pid > 0:
		return probes.ProcTCPTables(pid)
	}
	return nil
}

// inNamespace reports whether connections go inside the target's namespace.
func (r targetRoute) inNamespace() bool { return r.ns != nil }

// Close releases the namespace; connections opened in it stay open.
func (r targetRoute) Close() {
	if r.ns != nil {
		_ = r.ns.Close()
	}
}
