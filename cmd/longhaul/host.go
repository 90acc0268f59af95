package main

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/soakworker"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// openHost opens what every command that runs soaks (run, dev, worker)
// holds before it talks to Temporal (soakworker.Host).
func (a *app) openHost(ctx context.Context, sf storeFlags, metricsAddr string, verbose bool) (*soakworker.Host, error) {
	return soakworker.OpenHost(ctx, soakworker.HostOptions{
		Data: sf.data, Store: sf.store, Getenv: a.getenv, MetricsAddr: metricsAddr, Terminal: a.stderr, Verbose: verbose,
	})
}

// startWorker starts a soak worker on h with the flags in cfg and the
// environment ($LONGHAUL_DOCKER_ROUTE, $LONGHAUL_HOST_QUEUE, ${env:NAME} of
// scenarios); the caller stops it.
func (a *app) startWorker(ctx context.Context, c client.Client, h *soakworker.Host, cfg soakworker.Config) (*workflows.Worker, error) {
	cfg.Route, cfg.HostQueue, cfg.LookupEnv = a.getenv(dockerRouteEnv), a.getenv(hostQueueEnv), a.lookupEnv
	return h.StartWorker(ctx, c, cfg)
}

// dataDir resolves the data directory (package datadir).
func (a *app) dataDir(dir string) (string, error) { return datadir.Resolve(dir, a.getenv) }

// openStore opens the store that f names: --store, $LONGHAUL_STORE or
// DATA/longhaul.db (creating a SQLite file and its directory if needed).
// A store that cannot be opened is the user's to fix: bad input.
func (a *app) openStore(ctx context.Context, f storeFlags) (store.Store, string, error) {
	dsn, err := datadir.StoreDSN(f.store, f.data, a.getenv)
	if err != nil {
		return nil, "", badInput{err}
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, "", badInput{err}
	}
	return st, datadir.DisplayDSN(dsn), nil
}

// withStore runs do on the store f names (openStore) and closes it.
func (a *app) withStore(ctx context.Context, f storeFlags, do func(st store.Store, where string) error) error {
	st, where, err := a.openStore(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	return do(st, where)
}
