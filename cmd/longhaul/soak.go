package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/schedule"
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

// newSoakWorker wires the real activities (provisioner, driver, probes,
// analysis, store) into a worker on the general and this host's queues.
// First it sweeps the leftovers of runs that are over (sweepAtStart).
// soakWorkerConfig is what the commands that run a worker pass to it.
type soakWorkerConfig struct {
	metrics *metrics.Set // worker and run metrics (nil: none)
	pushURL string       // --push-url: where drives push live metrics
	hostID  string       // --host-id: this host's id (default the hostname)
	slots   int          // --slots: soaks driven at once on this host (0: 1)
}

func (a *app) newSoakWorker(ctx context.Context, c client.Client, st store.Store, dataDir string, wc soakWorkerConfig, log *slog.Logger) (*workflows.Worker, error) {
	set := wc.metrics
	prov, err := provision.New("", provision.Options{DataDir: dataDir, Logger: log, Route: a.getenv(dockerRouteEnv), Hostname: wc.hostID})
	if err != nil {
		return nil, fmt.Errorf("provisioner: %w", err)
	}
	if sw, ok := prov.(provision.Sweeper); ok {
		sweepAtStart(ctx, sw, liveness{st: st, c: c, log: log}, log)
	}
	acts := &activities.Activities{
		Store:       st,
		Provisioner: provisionAdapter{prov},
		Driver:      activities.LoadDriver{Metrics: set, LookupEnv: a.lookupEnv},
		Recorder:    activities.LoadDriver{LookupEnv: a.lookupEnv},
		Builder:     refBuilder{provision.Options{DataDir: dataDir, Logger: log}},
		Probes:      activities.ServerProbes(log),
		Analyzer:    activities.Findings,
		Refs:        gitRefs{},
		Firings:     schedule.New(c),
		Metrics:     set,
		PushURL:     wc.pushURL,
		Slots:       wc.slots,
		Logger:      log,
	}
	if wc.hostID != "" {
		acts.HostTaskQueue = activities.HostQueueName(wc.hostID)
	}
	if q := a.getenv("LONGHAUL_HOST_QUEUE"); q != "" {
		acts.HostTaskQueue = q
	}
	return workflows.NewWorker(c, acts, worker.Options{}), nil
}

// refBuilder builds a comparison side's git ref once: for the local
// provider with provision.BuildLocalRef (cached by commit under the data
// directory); for the docker provider Provision builds the Dockerfile at
// the ref itself, once per commit (its image tag cache), so the side is
// left as it is.
type refBuilder struct{ opts provision.Options }

func (b refBuilder) Build(ctx context.Context, req activities.BuildRequest) (store.Build, error) {
	out := req.Build
	kind := req.Provider
	if kind == "" {
		kind = req.Spec.Provider
	}
	if kind != "local" {
		return out, nil
	}
	commit, dir, err := provision.BuildLocalRef(ctx, b.opts, req.Spec, out.Ref)
	if err != nil {
		return out, err
	}
	out.Commit, out.Artifact = commit, dir
	return out, nil
}

// gitRefs resolves a scheduled run's git ref with package provision.
type gitRefs struct{}

func (gitRefs) ResolveRef(ctx context.Context, repo, ref string) (string, error) {
	return provision.ResolveRef(ctx, repo, ref)
}

func (gitRefs) HeadCommit(ctx context.Context, dir string) string {
	return provision.HeadCommit(ctx, dir)
}

// provisionAdapter presents a provision.Provisioner as the activities'
// Provisioner. (The activities cannot import package provision: it links
// testcontainers, which the workflow side must not.)
type provisionAdapter struct{ p provision.Provisioner }

func (pa provisionAdapter) Provision(ctx context.Context, req activities.ProvisionRequest) (activities.Environment, error) {
	env, err := pa.p.Provision(ctx, provision.Request{
		RunID: req.RunID, Incarnation: req.Incarnation, Spec: req.Spec,
		Provider: req.Provider, ExtraEnv: req.ExtraEnv, Publish: req.Publish, Prebuilt: req.Prebuilt,
	})
	out, cerr := toActivityEnv(env)
	if err != nil {
		return out, err
	}
	return out, cerr
}

func (pa provisionAdapter) Teardown(ctx context.Context, env activities.Environment) error {
	e, err := fromActivityEnv(env)
	if err != nil {
		return err
	}
	return pa.p.Teardown(ctx, e)
}

func (pa provisionAdapter) Check(ctx context.Context, env activities.Environment) error {
	e, err := fromActivityEnv(env)
	if err != nil {
		return err
	}
	return pa.p.Check(ctx, e)
}

func toActivityEnv(e provision.Environment) (activities.Environment, error) {
	raw, err := json.Marshal(withoutPasswords(e))
	if err != nil {
		return activities.Environment{}, fmt.Errorf("encode environment %s: %w", e.ID, err)
	}
	out := activities.Environment{
		ID: e.ID, RunID: e.RunID, Incarnation: e.Incarnation, Provider: e.Provider, Host: e.Host,
		TargetURL: e.TargetURL, Route: e.Route, NetNS: e.NetNS,
		PID: e.Target.PID, ContainerID: e.Target.ContainerID, Ports: e.Ports, Raw: raw,
	}
	if e.Database != nil {
		out.DatabaseURL = e.Database.URL
		out.DatabasePID, out.DatabaseContainerID = e.Database.Process.PID, e.Database.Process.ContainerID
	}
	out.EnvDir = e.EnvDir
	return out, nil
}

// withoutPasswords is e with the database DSNs' passwords removed. Raw goes
// into the run record, which `longhaul report` prints; teardown and checks
// need no password, and the probes get the full DSN in DatabaseURL.
func withoutPasswords(e provision.Environment) provision.Environment {
	if e.Database == nil {
		return e
	}
	db := *e.Database
	db.URL, db.TargetURL = dsnWithoutPassword(db.URL), dsnWithoutPassword(db.TargetURL)
	e.Database = &db
	return e
}

// dsnWithoutPassword drops the password of a URL-form DSN; anything else
// becomes "" rather than risk keeping a secret.
func dsnWithoutPassword(dsn string) string {
	if dsn == "" {
		return ""
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return ""
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	return u.String()
}

func fromActivityEnv(e activities.Environment) (provision.Environment, error) {
	var out provision.Environment
	if len(e.Raw) == 0 {
		return out, errors.New("environment " + e.ID + " has no provisioner description")
	}
	if err := json.Unmarshal(e.Raw, &out); err != nil {
		return out, fmt.Errorf("decode environment %s: %w", e.ID, err)
	}
	return out, nil
}

// pushURLFlag registers --push-url.
func pushURLFlag(fs *pflag.FlagSet, p *string, what string) {
	fs.StringVar(p, "push-url", "", what+" (VictoriaMetrics: http://HOST:8428/api/v1/import/prometheus)")
}

// checkPushURL validates --push-url: empty, or an http(s) URL.
func checkPushURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return badInputf("--push-url %q: want http://HOST:PORT/api/v1/import/prometheus", s)
	}
	return nil
}

// discard is a logger that drops everything.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
