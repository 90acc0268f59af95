package main

import (
	"context"

	"github.com/VictoriaMetrics/metrics"
	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/soakworker"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// services are what every command that runs soaks (run, dev, worker) opens
// before it talks to Temporal: the data directory, the result store, and the
// metrics endpoint when --metrics-addr is given.
type services struct {
	dataDir string
	store   store.Store
	where   string        // the store, for messages (no password)
	metrics *metrics.Set  // nil unless --metrics-addr was given
	lg      *datadir.Logs // DATA/temporal.log and longhaul's own records
	stop    func()        // stops the metrics endpoint; nil when none
}

// openServices opens them; bad flags (a data directory, store or address that
// cannot be used) are bad input. Close releases everything.
func (a *app) openServices(ctx context.Context, sf storeFlags, metricsAddr string, verbose bool) (*services, error) {
	dataDir, err := a.dataDir(sf.data)
	if err != nil {
		return nil, badInput{err}
	}
	st, where, err := a.openStore(ctx, sf)
	if err != nil {
		return nil, err
	}
	s := &services{dataDir: dataDir, store: st, where: where}
	if s.lg, err = a.openLogs(dataDir, verbose); err != nil {
		st.Close()
		return nil, err
	}
	if metricsAddr != "" {
		s.metrics = metrics.NewSet()
		if s.stop, err = soakworker.ServeMetrics(metricsAddr, s.metrics); err != nil {
			s.Close()
			return nil, badInput{err}
		}
	}
	return s, nil
}

// startWorker starts a soak worker (package soakworker) on svc's store,
// data directory, metrics and logs, with the flags in cfg and the
// environment ($LONGHAUL_DOCKER_ROUTE, $LONGHAUL_HOST_QUEUE, ${env:NAME} of
// scenarios); the caller stops it.
func (a *app) startWorker(ctx context.Context, c client.Client, svc *services, cfg soakworker.Config) (*workflows.Worker, error) {
	cfg.Metrics = svc.metrics
	cfg.Route = a.getenv(dockerRouteEnv)
	cfg.HostQueue = a.getenv(hostQueueEnv)
	cfg.LookupEnv = a.lookupEnv
	cfg.Logger = svc.lg.Own
	w, err := soakworker.New(ctx, c, svc.store, svc.dataDir, cfg)
	if err != nil {
		return nil, err
	}
	return w, w.Start()
}

// Close stops the metrics endpoint and closes the store.
func (s *services) Close() {
	if s.stop != nil {
		s.stop()
	}
	if s.lg != nil {
		s.lg.Close()
	}
	s.store.Close()
}
