package main

import (
	"context"
	"errors"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/soakworker"
	"github.com/longhaul-dev/longhaul/workflows"
)

// openHost opens what every command that runs soaks (run, dev, worker)
// holds before it talks to Temporal (soakworker.Host); a data directory,
// store or metrics address that cannot be used is bad input.
func (a *app) openHost(ctx context.Context, sf storeFlags, metricsAddr string, verbose bool) (*soakworker.Host, error) {
	h, err := soakworker.OpenHost(ctx, soakworker.HostOptions{
		Data: sf.data, Store: sf.store, Getenv: a.getenv, MetricsAddr: metricsAddr, Terminal: a.stderr, Verbose: verbose,
	})
	if errors.Is(err, soakworker.ErrUnusable) {
		return nil, badInput{err}
	}
	return h, err
}

// startWorker starts a soak worker on h with the flags in cfg and the
// environment ($LONGHAUL_DOCKER_ROUTE, $LONGHAUL_HOST_QUEUE, ${env:NAME} of
// scenarios); the caller stops it.
func (a *app) startWorker(ctx context.Context, c client.Client, h *soakworker.Host, cfg soakworker.Config) (*workflows.Worker, error) {
	cfg.Route, cfg.HostQueue, cfg.LookupEnv = a.getenv(dockerRouteEnv), a.getenv(hostQueueEnv), a.lookupEnv
	return h.StartWorker(ctx, c, cfg)
}
