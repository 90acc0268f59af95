package main

import (
	"context"

	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/store"
)

// services are what every command that runs soaks (run, dev, worker) opens
// before it talks to Temporal: the data directory, the result store, and the
// metrics endpoint when --metrics-addr is given.
type services struct {
	dataDir string
	store   store.Store
	where   string       // the store, for messages (no password)
	metrics *metrics.Set // nil unless --metrics-addr was given
	stop    func()       // stops the metrics endpoint; nil when none
}

// openServices opens them; bad flags (a data directory, store or address that
// cannot be used) are bad input. Close releases everything.
func (a *app) openServices(ctx context.Context, sf storeFlags, metricsAddr string) (*services, error) {
	dataDir, err := a.dataDir(sf.data)
	if err != nil {
		return nil, badInput{err}
	}
	st, where, err := a.openStore(ctx, sf)
	if err != nil {
		return nil, err
	}
	s := &services{dataDir: dataDir, store: st, where: where}
	if metricsAddr != "" {
		s.metrics = metrics.NewSet()
		if s.stop, err = serveMetrics(metricsAddr, s.metrics); err != nil {
			st.Close()
			return nil, badInput{err}
		}
	}
	return s, nil
}

// Close stops the metrics endpoint and closes the store.
func (s *services) Close() {
	if s.stop != nil {
		s.stop()
	}
	s.store.Close()
}
