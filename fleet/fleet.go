// Package fleet reports the state of a team's worker hosts as metrics: how
// many runs and comparisons are queued, pending or running, and how many
// measurement slots each host has held. `longhaul server --push-url` pushes
// them to VictoriaMetrics, so a dashboard shows a queue building up (more
// soaks submitted than hosts can measure) before anyone waits on it.
//
// Metrics, all labelled host="…" (the pushing process's host) and pushed
// with the process's own (Go runtime, CPU, memory):
//
//	longhaul_fleet_runs{status="queued|pending|running"}          soaks in that status
//	longhaul_fleet_comparisons{status="queued|running"}           comparisons in that status
//	longhaul_fleet_slots_held{worker_host="…"}                    slots held on that worker host
package fleet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/store"
)

// Metric names (see the package doc).
const (
	MetricRuns        = "longhaul_fleet_runs"
	MetricComparisons = "longhaul_fleet_comparisons"
	MetricSlotsHeld   = "longhaul_fleet_slots_held"
)

// Store is what a fleet snapshot reads (store.Store satisfies it).
type Store interface {
	CountRuns(ctx context.Context, opts store.ListOptions) (int, error)
	CountComparisons(ctx context.Context, opts store.ListOptions) (int, error)
	HostSlots(ctx context.Context, host string) ([]store.Slot, error)
}

// State is one snapshot of the fleet.
type State struct {
	Runs        map[store.Status]int
	Comparisons map[store.Status]int
	// SlotsHeld counts held slots by worker host id.
	SlotsHeld map[string]int
}

// activeRuns and activeComparisons are the statuses counted.
var (
	activeRuns        = []store.Status{store.Queued, store.Pending, store.Running}
	activeComparisons = []store.Status{store.Queued, store.Running}
)

// Read takes a snapshot of st.
func Read(ctx context.Context, st Store) (State, error) {
	s := State{Runs: map[store.Status]int{}, Comparisons: map[store.Status]int{}, SlotsHeld: map[string]int{}}
	for _, status := range activeRuns {
		n, err := st.CountRuns(ctx, store.ListOptions{Status: status})
		if err != nil {
			return s, fmt.Errorf("count %s runs: %w", status, err)
		}
		s.Runs[status] = n
	}
	for _, status := range activeComparisons {
		n, err := st.CountComparisons(ctx, store.ListOptions{Status: status})
		if err != nil {
			return s, fmt.Errorf("count %s comparisons: %w", status, err)
		}
		s.Comparisons[status] = n
	}
	held, err := st.HostSlots(ctx, "")
	if err != nil {
		return s, fmt.Errorf("read slots: %w", err)
	}
	for _, h := range held {
		s.SlotsHeld[h.Host]++
	}
	return s, nil
}

// Set writes s into set, replacing what an earlier snapshot wrote (a worker
// host that holds no slot any more is dropped).
func (s State) Set(set *metrics.Set) {
	for _, name := range set.ListMetricNames() {
		set.UnregisterMetric(name)
	}
	for _, status := range activeRuns {
		set.GetOrCreateGauge(fmt.Sprintf(`%s{status=%q}`, MetricRuns, status), nil).Set(float64(s.Runs[status]))
	}
	for _, status := range activeComparisons {
		set.GetOrCreateGauge(fmt.Sprintf(`%s{status=%q}`, MetricComparisons, status), nil).Set(float64(s.Comparisons[status]))
	}
	hosts := make([]string, 0, len(s.SlotsHeld))
	for h := range s.SlotsHeld {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		set.GetOrCreateGauge(fmt.Sprintf(`%s{worker_host=%q}`, MetricSlotsHeld, h), nil).Set(float64(s.SlotsHeld[h]))
	}
}

// Pusher pushes snapshots of a store every Interval until its context ends.
type Pusher struct {
	Store    Store
	URL      string
	Host     string        // the host label
	Interval time.Duration // 0: 10 s
	Logger   *slog.Logger
}

// Run pushes a snapshot at once and then every Interval until ctx ends. A
// failed read or push is logged (once until one succeeds again), never
// fatal.
func (p Pusher) Run(ctx context.Context) {
	every := p.Interval
	if every <= 0 {
		every = 10 * time.Second
	}
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	set := metrics.NewSet()
	opts := &metrics.PushOptions{ExtraLabels: fmt.Sprintf(`host=%q`, p.Host)}
	failing := false
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		err := p.pushOnce(ctx, set, opts)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			failing = true
			log.Warn("push of fleet metrics failed", "url", p.URL, "err", err)
		case err == nil && failing:
			failing = false
			log.Info("push of fleet metrics works again", "url", p.URL)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p Pusher) pushOnce(ctx context.Context, set *metrics.Set, opts *metrics.PushOptions) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := Read(ctx, p.Store)
	if err != nil {
		return err
	}
	s.Set(set)
	// The process's own metrics (CPU, memory, Go runtime) go along.
	return metrics.PushMetricsExt(ctx, p.URL, func(w io.Writer) {
		set.WritePrometheus(w)
		metrics.WriteProcessMetrics(w)
	}, opts)
}
