package probes

import (
	"math"

	"github.com/longhaul-dev/longhaul/window"
)

// The cumulative Go runtime counters the heap metric's scrape reads from the
// same page, as both prometheus/client_golang (its default Go collector) and
// VictoriaMetrics/metrics (WriteProcessMetrics) expose them:
//
//   - AllocBytesMetric, bytes allocated on the heap since the process
//     started (runtime.MemStats.TotalAlloc): both libraries.
//   - GCCyclesMetric, the count of the GC pause summary, which is the number
//     of completed GC cycles (MemStats.NumGC): both libraries. A page
//     without it (a client_golang registry with only the runtime/metrics
//     collector) may have GCCyclesFallbackMetric, the same count from
//     runtime/metrics /gc/cycles/total:gc-cycles.
//   - GCForcedMetric, the cycles forced by runtime.GC (MemStats.NumForcedGC):
//     VictoriaMetrics/metrics only. When the page has it, forced cycles are
//     left out of the GC count, so the GC hook's and heap profiles' own
//     collections do not read as GC pressure from the load; with
//     client_golang they count (one per checkpoint or profile).
//   - GCCPUMetric, the runtime's estimate of the CPU time its GC spent
//     (runtime/metrics /cpu/classes/gc/total:cpu-seconds):
//     VictoriaMetrics/metrics only; client_golang's default collector has no
//     such series, and then the GC's CPU stays unmeasured rather than being
//     guessed (from pause times, say, which miss the concurrent mark). The
//     runtime says this estimate is an overestimate not directly comparable
//     with the CPU time the kernel accounts (a stop-the-world phase counts
//     every P as busy), so the window's GC CPU share is an upper bound.
//
// The bytes allocated include the metrics page's own rendering (once per
// window, some tens of KB) and the GC hook's answer: spread over a window's
// requests that is a small constant, the same for the two builds of a
// comparison.
const (
	AllocBytesMetric       = "go_memstats_alloc_bytes_total"
	GCCyclesMetric         = "go_gc_duration_seconds_count"
	GCCyclesFallbackMetric = "go_gc_cycles_total_gc_cycles_total"
	GCForcedMetric         = "go_gc_forced_count"
	GCCPUMetric            = "go_gc_cpu_seconds_total"
)

// GoCounters is one reading of a Go program's cumulative runtime counters
// from its metrics page; each Has* says whether the page had the series.
type GoCounters struct {
	AllocBytes    float64
	GCCycles      float64 // completed cycles, less the forced ones when the page counts them
	GCCPUSeconds  float64
	HasAllocBytes bool
	HasGCCycles   bool
	HasGCCPU      bool
	// HasForced records whether GCCycles had the forced cycles taken out,
	// so two readings that differ in it (a changed page) are not subtracted.
	HasForced bool
}

// ParseGoCounters reads the Go runtime counters (AllocBytesMetric and the
// others above) from a Prometheus text exposition. A series missing,
// malformed or not a finite non-negative number leaves its Has* false.
func ParseGoCounters(body []byte) GoCounters {
	var c GoCounters
	get := func(name string) (float64, bool) {
		v, _, err := ParseMetric(body, name)
		if err != nil || v < 0 {
			return 0, false
		}
		return v, true
	}
	c.AllocBytes, c.HasAllocBytes = get(AllocBytesMetric)
	c.GCCycles, c.HasGCCycles = get(GCCyclesMetric)
	if !c.HasGCCycles {
		c.GCCycles, c.HasGCCycles = get(GCCyclesFallbackMetric)
	}
	if forced, ok := get(GCForcedMetric); ok && c.HasGCCycles && forced <= c.GCCycles {
		c.GCCycles -= forced
		c.HasForced = true
	}
	c.GCCPUSeconds, c.HasGCCPU = get(GCCPUMetric)
	return c
}

// Any reports whether the page had any of the counters.
func (c GoCounters) Any() bool { return c.HasAllocBytes || c.HasGCCycles || c.HasGCCPU }

// GoCountersDelta sets p's allocation and GC fields (AllocBytes,
// AllocBytesPerRequest, GCCycles, GCPer1kRequests, GCCPUSeconds) from two
// consecutive readings of the same page over a window with requests
// requests. A counter present in both readings gives its delta; the
// per-request figures need requests > 0. When any counter went down the
// target restarted between the readings (a new process counts from zero)
// and nothing is set: the delta would mix two processes. It reports
// whether the readings were usable. GCCPUShare is left to the caller, who
// knows the window's process CPU.
func GoCountersDelta(p *window.Probes, prev, cur GoCounters, requests int64) bool {
	both := func(a, b bool) bool { return a && b }
	if (both(prev.HasAllocBytes, cur.HasAllocBytes) && cur.AllocBytes < prev.AllocBytes) ||
		(both(prev.HasGCCycles, cur.HasGCCycles) && cur.GCCycles < prev.GCCycles) ||
		(both(prev.HasGCCPU, cur.HasGCCPU) && cur.GCCPUSeconds < prev.GCCPUSeconds) {
		return false
	}
	if prev.HasAllocBytes && cur.HasAllocBytes {
		d := int64(math.Round(cur.AllocBytes - prev.AllocBytes))
		p.AllocBytes = &d
		if requests > 0 {
			v := float64(d) / float64(requests)
			p.AllocBytesPerRequest = &v
		}
	}
	if prev.HasGCCycles && cur.HasGCCycles && prev.HasForced == cur.HasForced {
		d := int64(math.Round(cur.GCCycles - prev.GCCycles))
		p.GCCycles = &d
		if requests > 0 {
			v := float64(d) * 1000 / float64(requests)
			p.GCPer1kRequests = &v
		}
	}
	if prev.HasGCCPU && cur.HasGCCPU {
		d := cur.GCCPUSeconds - prev.GCCPUSeconds
		p.GCCPUSeconds = &d
	}
	return true
}

// GCCPUShare sets p.GCCPUShare, the GC's share of the window's process
// CPU time, when both were measured and the process used any CPU.
func GCCPUShare(p *window.Probes) {
	if p.GCCPUSeconds == nil || p.CPUSeconds == nil || *p.CPUSeconds <= 0 {
		return
	}
	v := *p.GCCPUSeconds / *p.CPUSeconds
	p.GCCPUShare = &v
}
