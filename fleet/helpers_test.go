package fleet_test

import (
	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/fleet"
)

func metricsSet(s fleet.State) *metrics.Set {
	set := metrics.NewSet()
	s.Set(set)
	return set
}
