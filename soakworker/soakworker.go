// Package soakworker wires longhaul's real activities — the provisioner, the
// load driver, the probes, the analysis and the store — into a Temporal
// worker that polls the general queue and this host's queue.
//
// Recipe:
//
//  1. Connect a client.Client (the embedded server of `longhaul dev` or a
//     cluster) and open the store every worker of that cluster shares.
//  2. New(ctx, c, st, dataDir, Config{HostID: "h1", Slots: 2, Logger: log}):
//     it first sweeps the leftovers of runs that are over (SweepAtStart),
//     then returns the worker, not yet started.
//  3. Start it; Stop it on shutdown. Its runs resume on the next worker of
//     the same host queue.
//
// Liveness is the sweep's rule for which runs still own their environments;
// `longhaul sweep` uses it on its own.
//
// This package imports the Temporal SDK and package provision (and so
// testcontainers), never the Temporal server: a worker links no server.
package soakworker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// Config is what a worker needs beyond its client, store and data
// directory. The zero value is a worker on the default host queue with one
// measurement slot, no metrics and no logs.
type Config struct {
	// Metrics receives the worker's and its runs' metrics; nil: none.
	Metrics *metrics.Set
	// PushURL is where drives push live metrics after every window, unless
	// a run names its own; "": nowhere.
	PushURL string
	// HostID is this host's id: the host queue is
	// activities.HostQueueName(HostID) and runs record it as their host.
	// "": the hostname.
	HostID string
	// Slots is how many soaks this host drives at once; 0 means 1.
	Slots int
	// Route chooses how docker targets are reached (provision.Options.Route):
	// "" or "auto", "netns", "published-port".
	Route string
	// HostQueue, when set, is the whole host queue name, overriding HostID's.
	HostQueue string
	// LookupEnv resolves a scenario's ${env:NAME}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger receives the worker's logs; nil drops them.
	Logger *slog.Logger
}

// New sweeps the leftovers of runs that are over (SweepAtStart; failures
// are logged, never returned) and returns a worker, not yet started, that
// runs the real activities on the general queue and the host queue
// (Config.HostQueue, else HostID's, else the hostname's). Its only error is
// a provisioner that cannot be made (a bad Route).
func New(ctx context.Context, c client.Client, st store.Store, dataDir string, cfg Config) (*workflows.Worker, error) {
	log := cfg.Logger
	if log == nil {
		log = discard
	}
	prov, err := provision.New("", provision.Options{DataDir: dataDir, Logger: log, Route: cfg.Route, Hostname: cfg.HostID})
	if err != nil {
		return nil, fmt.Errorf("provisioner: %w", err)
	}
	if sw, ok := prov.(provision.Sweeper); ok {
		SweepAtStart(ctx, sw, Liveness{Store: st, Client: c, Log: log})
	}
	acts := &activities.Activities{
		Store:         st,
		Provisioner:   provisionAdapter{prov},
		Driver:        activities.LoadDriver{Metrics: cfg.Metrics, LookupEnv: cfg.LookupEnv},
		Recorder:      activities.LoadDriver{LookupEnv: cfg.LookupEnv},
		Builder:       refBuilder{provision.Options{DataDir: dataDir, Logger: log}},
		Probes:        activities.ServerProbes(log),
		Analyzer:      activities.Findings,
		Refs:          gitRefs{},
		Firings:       schedule.New(c),
		Metrics:       cfg.Metrics,
		PushURL:       cfg.PushURL,
		Slots:         cfg.Slots,
		Logger:        log,
		HostTaskQueue: hostQueue(cfg),
		CheckTimeout:  CheckTimeout,
	}
	// WorkerStopTimeout: a stopping worker (SIGTERM) gives its drives this
	// long to close the window in progress and hand over (activities.Drive).
	return workflows.NewWorker(c, acts, worker.Options{WorkerStopTimeout: 30 * time.Second}), nil
}

// hostQueue is the host task queue cfg names; "" leaves the choice (the
// hostname's queue) to workflows.NewWorker.
func hostQueue(cfg Config) string {
	switch {
	case cfg.HostQueue != "":
		return cfg.HostQueue
	case cfg.HostID != "":
		return activities.HostQueueName(cfg.HostID)
	}
	return ""
}

// CheckTimeout bounds the environment check after each window on a
// worker (activities.DefaultCheckTimeout is 2 s). The docker engine under
// heavy load (load average 46 on two cores, the dbrestart fault row) did
// not answer a check's inspects within 2 s, so that check recorded
// nothing: not the database restart it would have found. A check runs in
// the drive's sink, beside the load, not in its way: a slow one delays the
// window's commit, and the windows after it wait in order, so 5 s still
// fits the default 10 s window and loses nothing with shorter ones.
const CheckTimeout = 5 * time.Second

// discard is a logger that drops everything.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))
