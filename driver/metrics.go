package driver

import (
	"strings"

	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/window"
)

// Live metric names, registered on Options.Metrics (get-or-create, so
// several runs in one process add up):
//
//	longhaul_requests_total{op="...",class="..."}     counter, one per op and class
//	longhaul_request_duration_seconds{op="..."}       histogram of recorded latencies
//	longhaul_skipped_total{op="..."}                  picks skipped on an empty pool
//	longhaul_in_flight                                gauge, requests in flight now
//	longhaul_dropped_total                            open-model starts dropped
//	longhaul_connect_failures_total                   requests that found no connection
//
// They are for watching a run live; the windows (HDR histograms) remain the
// measurement of record.
const (
	MetricRequests = "longhaul_requests_total"
	MetricDuration = "longhaul_request_duration_seconds"
	MetricSkipped  = "longhaul_skipped_total"
	MetricInFlight = "longhaul_in_flight"
	MetricDropped  = "longhaul_dropped_total"
	// MetricConnectFailures counts requests that could not open their
	// connection (also in MetricRequests under their class).
	MetricConnectFailures = "longhaul_connect_failures_total"
)

// liveMetrics holds every metric pre-resolved, so the hot path does no
// lookups: a counter increment and a histogram update per request.
type liveMetrics struct {
	requests [][window.NumClasses]*metrics.Counter // by slot, class
	latency  []*metrics.Histogram                  // by slot
	skipped  []*metrics.Counter                    // by slot
	inFlight *metrics.Gauge
	dropped  *metrics.Counter

	connectFailures *metrics.Counter
}

func newLiveMetrics(set *metrics.Set, names []string) *liveMetrics {
	m := &liveMetrics{
		requests: make([][window.NumClasses]*metrics.Counter, len(names)),
		latency:  make([]*metrics.Histogram, len(names)),
		skipped:  make([]*metrics.Counter, len(names)),
		inFlight: set.GetOrCreateGauge(MetricInFlight, nil),
		dropped:  set.GetOrCreateCounter(MetricDropped),

		connectFailures: set.GetOrCreateCounter(MetricConnectFailures),
	}
	for slot, name := range names {
		op := `op="` + escapeLabel(name) + `"`
		for c := window.Class(0); c < window.NumClasses; c++ {
			m.requests[slot][c] = set.GetOrCreateCounter(MetricRequests + "{" + op + `,class="` + c.String() + `"}`)
		}
		m.latency[slot] = set.GetOrCreateHistogram(MetricDuration + "{" + op + "}")
		m.skipped[slot] = set.GetOrCreateCounter(MetricSkipped + "{" + op + "}")
	}
	return m
}

// escapeLabel escapes a Prometheus label value.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
