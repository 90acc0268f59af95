// Package analysis reads a run's windows and says what it found, with evidence
// a person can act on: a memory leak, a throughput collapse caused by data
// growth (and which table), an error surge, a throughput limit on a ramp. When
// the data is too thin, or a probe was off, it says that instead of guessing.
//
// Recipe:
//
//  1. Load the run's windows (store.Store.Windows, every incarnation).
//  2. res := analysis.Analyze(windows, analysis.Options{Warmup: scenario.Load.Warmup.D()})
//     (or start from DefaultOptions and change a threshold).
//  3. Store res.Findings with the run and print them; alert on
//     res.Worst().Rank() >= analysis.Warning.Rank().
//
// Each Finding has a kind, a severity, a one-line summary and Evidence: the
// window range, the slope with its unit, the p-value, the table, before/after
// figures. Severity is critical for a clear leak, collapse or surge, warning
// for weaker or thinner evidence, info for results and notes: the throughput
// limit a ramp found (ThroughputLimitOptions.Severity makes it a warning),
// too little data (KindInsufficientData), missing probe data
// (KindMissingEvidence: Evidence.Missing names it, and the summary names the
// probe that failed when the windows recorded one in ProbeFailures), or why
// something that looked like a problem is not one (a heap that levelled off,
// a slowdown the target's own CPU and database figures do not explain).
//
// Evidence.Notes carries the other figures, by key: for a leak "readings",
// "forced_gc_readings", "requests", "growth_bytes", "tail_growth_bytes",
// "tail_slope_ratio", "tail_p_value"; for a collapse "rps_before"/"rps_after",
// "p50_ms_before"/"p50_ms_after", "rows_before"/"rows_after",
// "rows_read_per_request_before"/"_after", "read_rows_elasticity",
// "read_rows_correlation", "seq_share", "cpu_us_per_request_before"/"_after";
// for an error surge "errors", "errors_<class>" (the dominant one),
// "dominant_class_share"; for a throughput limit "knee", "knee_fit",
// "level_min", "level_max", "elasticity_beyond_knee", "gain_beyond_knee",
// "p50_ms_at_knee", "p50_ms_at_max", "dropped_beyond_knee"; for a missed
// open-model rate (KindRateMissed, with Evidence.Cause) "dropped",
// "intended", "dropped_share", "peak_in_flight", "max_vus",
// "intended_rate", "p50_ms", "host_foreign_cpu".
//
// Across runs, FindChangePoints (or a ChangePointSeries that grows one run
// at a time) finds where a per-run metric — one value per nightly soak —
// changed level: E-divisive means with a Student's t-test between the
// segments, as Apache Otava does (defaults p < 0.001, a 5 % minimum change,
// at least 4 runs on each side; see ChangePointOptions).
//
// How each detector decides is documented on its tunables in LeakOptions,
// CollapseOptions, ErrorSurgeOptions, ThroughputLimitOptions and
// RateMissedOptions; the
// statistics (TheilSen, MannKendall, MannKendallHamedRao, Spearman, Median,
// Quantile) are exported for other analyses. The package is pure: no I/O, no clock, no globals beyond
// a lazily built table of exact Mann–Kendall probabilities.
package analysis
