// Package probes takes longhaul's server-side readings, once per window: the
// target's CPU time (→ CPU µs per request) and RSS, its live heap after GC,
// and PostgreSQL's table statistics (→ rows read per request, per table).
//
// Recipe:
//
//  1. New(Config{Spec: scenario.Probes, TargetURL: env.TargetURL, PID:
//     env.Target.PID, ContainerID: env.Target.ContainerID, DatabaseURL:
//     env.Database.URL, Window: scenario.Load.Window.D()}) checks the
//     configuration (a bad metric name or port is an ErrBadConfig error) and
//     contacts nothing.
//  2. Start(ctx) when load starts: it takes the baselines the first window's
//     deltas are counted from and reports unreachable probes (Problems).
//  3. Sample(ctx, &w) each time the driver closes a window, before the
//     window is stored: it fills w.Probes. Then Close.
//
// Sources, each optional:
//
//   - process: a local target's /proc process tree (ProcessTree: the process,
//     its descendants and its process group; reaped children through
//     cutime/cstime), or a container's cgroup through the Docker API
//     (ContainerStats: a kept-open stats stream, since every stats call waits
//     for the engine's one-second tick).
//   - heap: a Prometheus gauge scraped from the target (MetricScraper,
//     default go_gc_heap_live_bytes at /metrics); a forced-GC hook every N
//     windows (GCHookClient, default POST /debug/gc every 5 windows); a
//     Node.js inspector (InspectorClient: HeapProfiler.collectGarbage then
//     Runtime.getHeapUsage). A forced-GC reading, when a window has one,
//     wins over the passive metric and sets HeapForcedGC. The metric's page
//     of a Go target also gives, per window, its GC pauses and the deltas of
//     its cumulative runtime counters (GoCounters: bytes allocated, GC
//     cycles, GC CPU → per request); a Node.js target has no cumulative
//     allocation counter in its inspector, so it has none of those.
//   - database: pg_stat_user_tables, pg_stat_database and, where it is
//     loaded, pg_stat_statements (PGStatsReader,
//     DatabaseDelta).
//
// Beside the Sampler, two readers of the whole host's /proc take one reading
// per window: HostLoad (the share of the machine's CPU that went to foreign
// work) and ThreadCPU (where the CPU went thread by thread: the target's
// busiest thread and its share of a core, the target's cores against those
// it may use, its database's processes, longhaul's own; each as CPU got and
// as busy time — running or waiting for a CPU — from schedstat). The caller
// (activities.ServerProbes) fills the window with them; ThreadReading.Fill
// sets the window fields.
//
// Failure policy: a probe that fails leaves its window fields nil (never
// zero), is logged once (then at most one reminder per ReminderInterval) and
// listed by Problems; the soak goes on. A Sample takes at most
// min(1 s, window/4): probes run concurrently, each under that deadline.
//
// Measured (BenchmarkSample, 2 loaded cores): a Sample with the process tree
// takes ~3.5 ms (a scan of /proc), plus the heap metric and a GC hook ~3 ms,
// plus the database ~10 ms, plus a Node.js inspector's forced GC ~70 ms.
package probes
