package activities

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/window"
)

// Live metrics of a run pushed to VictoriaMetrics, besides the driver's own
// (driver.MetricRequests and the rest), all labelled with the run, the
// scenario and the host:
//
//	longhaul_windows_total                         windows committed by this drive
//	longhaul_window_requests_per_second            of the last window
//	longhaul_window_latency_seconds{quantile=…}    p50, p90, p99, p99.9 of the last window
//	longhaul_target_cpu_micros_per_request         probe readings of the last window,
//	longhaul_target_rss_bytes                      absent while a probe has no reading
//	longhaul_target_heap_bytes
//	longhaul_target_alloc_bytes_per_request        a Go target's runtime counters
//	longhaul_target_gc_per_1k_requests
//	longhaul_target_gc_cpu_share
//	longhaul_database_xact_per_request             PostgreSQL
const (
	MetricPushWindows   = "longhaul_windows_total"
	MetricPushRPS       = "longhaul_window_requests_per_second"
	MetricPushLatency   = "longhaul_window_latency_seconds"
	MetricPushCPU       = "longhaul_target_cpu_micros_per_request"
	MetricPushRSS       = "longhaul_target_rss_bytes"
	MetricPushHeapBytes = "longhaul_target_heap_bytes"
	MetricPushAlloc     = "longhaul_target_alloc_bytes_per_request"
	MetricPushGCRate    = "longhaul_target_gc_per_1k_requests"
	MetricPushGCShare   = "longhaul_target_gc_cpu_share"
	MetricPushXact      = "longhaul_database_xact_per_request"
)

// PushTimeout bounds one push, so a slow VictoriaMetrics never holds up the
// next window.
const PushTimeout = 5 * time.Second

// livePush is one drive's metrics and their pushes: the driver records into
// Metrics(), and after each committed window (Window) the window's figures
// are set and the whole set is pushed with the run's labels. A failed push is
// logged (once until one succeeds again) and never fails the drive: the
// windows in the store are the measurement of record.
type livePush struct {
	set     *metrics.Set
	url     string
	labels  string
	log     *slog.Logger
	windows *metrics.Counter

	mu      sync.Mutex
	failing bool
}

// newLivePush returns nil when url is empty.
func newLivePush(url, runID, scenario, host string, log *slog.Logger) *livePush {
	if url == "" {
		return nil
	}
	p := &livePush{
		set: metrics.NewSet(), url: url, log: log,
		labels: `run="` + escapeLabel(runID) + `",scenario="` + escapeLabel(scenario) + `",host="` + escapeLabel(host) + `"`,
	}
	p.windows = p.set.NewCounter(MetricPushWindows)
	return p
}

// Metrics is the set the driver records into (nil for a nil p: no push).
func (p *livePush) Metrics() *metrics.Set {
	if p == nil {
		return nil
	}
	return p.set
}

// latencyQuantiles are the window percentiles pushed, by quantile label.
var latencyQuantiles = []struct {
	q   string
	get func(window.Latency) float64
}{
	{"0.5", func(l window.Latency) float64 { return l.P50 }},
	{"0.9", func(l window.Latency) float64 { return l.P90 }},
	{"0.99", func(l window.Latency) float64 { return l.P99 }},
	{"0.999", func(l window.Latency) float64 { return l.P999 }},
}

// Window records w as the last window and pushes everything.
func (p *livePush) Window(ctx context.Context, w window.Window) {
	p.windows.Inc()
	if w.Gap {
		p.Push(ctx)
		return
	}
	p.set.GetOrCreateGauge(MetricPushRPS, nil).Set(w.RPS)
	for _, q := range latencyQuantiles {
		p.set.GetOrCreateGauge(MetricPushLatency+`{quantile="`+q.q+`"}`, nil).Set(q.get(w.LatencyMs) / 1000)
	}
	// A probe reading is pushed only while the probe has one: the gauge is
	// removed when a window has none, rather than reporting a stale value.
	setReading(p.set, MetricPushCPU, w.Probes.CPUMicrosPerRequest)
	setReading(p.set, MetricPushRSS, int64Reading(w.Probes.RSSBytes))
	setReading(p.set, MetricPushHeapBytes, int64Reading(w.Probes.HeapBytes))
	setReading(p.set, MetricPushAlloc, w.Probes.AllocBytesPerRequest)
	setReading(p.set, MetricPushGCRate, w.Probes.GCPer1kRequests)
	setReading(p.set, MetricPushGCShare, w.Probes.GCCPUShare)
	var xact *float64
	if d := w.Probes.Database; d != nil {
		xact = d.XactPerRequest
	}
	setReading(p.set, MetricPushXact, xact)
	p.Push(ctx)
}

// Push pushes the set now, within PushTimeout, even when ctx is cancelled
// (the last window of a cancelled drive is pushed too).
func (p *livePush) Push(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PushTimeout)
	defer cancel()
	err := p.set.PushMetrics(ctx, p.url, &metrics.PushOptions{ExtraLabels: p.labels})
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil && !p.failing:
		p.failing = true
		p.log.Warn("push of live metrics failed; the windows are stored as usual", "url", p.url, "err", err)
	case err == nil && p.failing:
		p.failing = false
		p.log.Info("push of live metrics works again", "url", p.url)
	}
}

func int64Reading(v *int64) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

// setReading sets the gauge name to *v, or removes it when v is nil.
func setReading(set *metrics.Set, name string, v *float64) {
	if v == nil {
		set.UnregisterMetric(name)
		return
	}
	set.GetOrCreateGauge(name, nil).Set(*v)
}

// escapeLabel escapes a Prometheus label value.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
