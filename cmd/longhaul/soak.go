package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/devserver"
)

// dockerRouteEnv chooses how a worker reaches docker targets
// (provision.Options.Route): unset or "auto" for inside the container's
// network namespace where possible, "published-port" for docker's published
// port (the route before issue 9; bench/docker compares the two), "netns"
// to fail where the namespace route is impossible.
const dockerRouteEnv = "LONGHAUL_DOCKER_ROUTE"

// hostQueueEnv, when set, is the whole name of the worker's host queue
// (soakworker.Config.HostQueue), overriding --host-id's.
const hostQueueEnv = "LONGHAUL_HOST_QUEUE"

// logger is the commands' slog logger: warnings and errors on stderr.
func (a *app) logger() *slog.Logger {
	level := slog.LevelWarn
	if a.getenv("LONGHAUL_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// startDevServer starts the embedded Temporal server on DATA/temporal.
func (a *app) startDevServer(ctx context.Context, dataDir string, port int, log *slog.Logger) (*devserver.Server, error) {
	s, err := devserver.Start(ctx, devserver.Options{
		DataDir: filepath.Join(dataDir, datadir.TemporalDir), Port: port, Logger: log,
	})
	if err != nil {
		return nil, badInput{err}
	}
	return s, nil
}

// dialTemporal connects to a Temporal frontend; an unreachable one is bad
// input (the address is the user's).
func (a *app) dialTemporal(ctx context.Context, hostPort, namespace string, log *slog.Logger) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort: hostPort, Namespace: namespace, Logger: sdklog.NewStructuredLogger(log),
	})
	if err != nil {
		return nil, badInputf("cannot reach Temporal at %s (namespace %s): %v", hostPort, namespace, err)
	}
	return c, nil
}

// discard is a logger that drops everything.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
