package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/soakworker"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// temporalDir is the embedded server's directory under the data directory.
const temporalDir = "temporal"

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
		DataDir: filepath.Join(dataDir, temporalDir), Port: port, Logger: log,
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

// soakWorkerConfig is what the commands that run a worker pass to it.
type soakWorkerConfig struct {
	metrics *metrics.Set // worker and run metrics (nil: none)
	pushURL string       // --push-url: where drives push live metrics
	hostID  string       // --host-id: this host's id (default the hostname)
	slots   int          // --slots: soaks driven at once on this host (0: 1)
}

// newSoakWorker is soakworker.New with the flags of wc and the environment
// ($LONGHAUL_DOCKER_ROUTE, $LONGHAUL_HOST_QUEUE, ${env:NAME} of scenarios).
func (a *app) newSoakWorker(ctx context.Context, c client.Client, st store.Store, dataDir string, wc soakWorkerConfig, log *slog.Logger) (*workflows.Worker, error) {
	return soakworker.New(ctx, c, st, dataDir, soakworker.Config{
		Metrics:   wc.metrics,
		PushURL:   wc.pushURL,
		HostID:    wc.hostID,
		Slots:     wc.slots,
		Route:     a.getenv(dockerRouteEnv),
		HostQueue: a.getenv(hostQueueEnv),
		LookupEnv: a.lookupEnv,
		Logger:    log,
	})
}

// pushURLFlag registers --push-url.
func pushURLFlag(fs *pflag.FlagSet, p *string, what string) {
	fs.StringVar(p, "push-url", "", what+" (VictoriaMetrics: http://HOST:8428/api/v1/import/prometheus)")
}

// discard is a logger that drops everything.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
