package analysis

import "time"

// Options tune Analyze. Start from DefaultOptions. A zero threshold means "use
// the default", so Options{Warmup: scenarioWarmup} is a complete value too.
// Every default below says why it is what it is; the accuracy tests in this
// package (synthetic runs with shared-machine noise, many seeds) hold them.
type Options struct {
	// Warmup excludes, in each incarnation, the windows that start before the
	// incarnation's first window start + Warmup (the scenario's load.warmup).
	Warmup time.Duration
	// WarmupWindows excludes at least this many windows at the start of each
	// incarnation. 0 means DefaultWarmupWindows; negative means none.
	WarmupWindows int
	// ExternalTarget: longhaul did not start the target (a scenario's
	// environment.target.url), so no probe can read its process, and its
	// database only where the scenario names it: the missing-evidence
	// note says how to get them instead of "enable the probes".
	ExternalTarget bool
	// MaxPoints bounds the length of a series given to Theil–Sen and
	// Mann–Kendall; longer series are cut into MaxPoints consecutive bins and
	// each bin replaced by its median. 0 means DefaultMaxPoints.
	MaxPoints int

	Leak            LeakOptions
	Pauses          PausesOptions
	Connections     ConnectionsOptions
	Collapse        CollapseOptions
	ErrorSurge      ErrorSurgeOptions
	ThroughputLimit ThroughputLimitOptions
	RateMissed      RateMissedOptions
}

// Defaults shared by the detectors.
const (
	// DefaultWarmupWindows: the first window of an incarnation holds VU setup
	// (sign-ups, logins) and a cold target; it is never representative.
	DefaultWarmupWindows = 1
	// DefaultMaxPoints: Theil–Sen costs O(n²); 240 points is 28,680 pairs
	// (about half a millisecond). Binning an 8-hour soak of 20 s windows (1,440)
	// into 240 medians of 6 also damps the serial correlation between
	// neighbouring windows that makes Mann–Kendall over-confident on long series.
	DefaultMaxPoints = 240
)

// LeakOptions tune the leak detector: a Mann–Kendall gate (corrected for
// serial correlation) on the post-GC heap against the requests served, a
// Theil–Sen slope, a minimum growth, and a re-test of the last part of the
// run so that a heap that grows and then levels off (caches warming) is not
// called a leak.
type LeakOptions struct {
	// MinReadings is the fewest heap readings (after warm-up) for a verdict;
	// fewer give an insufficient_data note. Default 6: with 6 readings one
	// out-of-order pair still reaches p ≈ 0.008 (exact), under Alpha.
	MinReadings int
	// ConfidentReadings is the fewest readings for a critical leak; below it a
	// leak that passes every gate is a warning. Default 12: the last half then
	// has 6 readings, enough for its own Mann–Kendall test.
	ConfidentReadings int
	// PreferForcedReadings: when at least this many readings come from forced-GC
	// checkpoints, only those are used (they are exact post-GC values; a passive
	// metric can be stale until the next GC). Below it, forced and passive
	// readings are used together: both report the live heap after a GC.
	// Default 8.
	PreferForcedReadings int
	// Alpha is the one-sided Mann–Kendall p-value a rising heap must reach.
	// Default 0.01: each run is tested for several things every night, so one
	// false alarm in a hundred clean runs per test is the most we accept, and a
	// real leak over a dozen readings reaches p < 0.0001.
	Alpha float64
	// MinGrowthBytes is the least growth (Theil–Sen slope × analysed span) that
	// counts. Default 1 MiB: smaller drifts are within what per-connection
	// buffers and pools move by and are not actionable.
	MinGrowthBytes float64
	// MinGrowthFraction is the least growth relative to the starting level
	// for a verdict. Default 0.25: in a short run a clean runtime's post-GC
	// heap moves by 10–20 % as pools, caches and JIT-compiled code settle and
	// as it wanders with the requests in flight; a leak that is retained per
	// request passes 25 % quickly (1 byte per request does it on a 56 MB heap
	// over a 14-million-request soak). A significant rise that meets the
	// other gates but not this one gets an info note.
	MinGrowthFraction float64
	// NoteGrowthFraction is the least relative growth for that info note.
	// Default 0.10.
	NoteGrowthFraction float64
	// TailFraction is the last part of the run that is tested again. Default
	// 0.5: the last half has enough readings for its own trend test.
	TailFraction float64
	// MinTailSlopeRatio: the Theil–Sen slope of the tail must be at least this
	// fraction of the whole run's. Default 0.5: a linear leak keeps its slope
	// (ratio ≈ 1); a cache that fills with time constant T/3 of a run of length
	// T has a last-half ratio of 0.37, and one that fills in the first third ≈ 0.
	MinTailSlopeRatio float64
	// TailAlpha is the one-sided Mann–Kendall p-value (Hamed–Rao) the tail
	// must reach when it has at least MinReadings readings. Default 0.01: a
	// real leak's tail of a dozen readings reaches p < 0.0001, while a heap
	// still settling slowly (JIT-compiled code, a cache nearly full) reached
	// p ≈ 0.01–0.05 on simulated runs, more so when a slow second half
	// stretches it over few requests.
	TailAlpha float64
	// MaxHeapShare: memory outside the heap (RSS, a Node.js process's
	// external memory) that passes the same gates is reported as a leak
	// outside the managed heap when the post-GC heap grew, per request, by
	// at most this share of it. Default 0.25: a heap leak grows the RSS by
	// about as much as the heap (share ≈ 1); a Buffer retained per request
	// grows the heap only by its small JavaScript object (≈ 0.1).
	MaxHeapShare float64
}

// ConnectionsOptions tune the unclosed-connections detector: the target's
// CLOSE_WAIT connections growing over the run.
type ConnectionsOptions struct {
	// MinWindows is the fewest windows with connection readings. Default 8.
	MinWindows int
	// Alpha is the one-sided Mann–Kendall p-value of the rise. Default 0.01.
	Alpha float64
	// MinRise and Factor: the median of the last quarter must be at least
	// MinRise connections above the first quarter's, and Factor times it.
	// Defaults 20 and 2: a server closes what its clients closed within
	// milliseconds, so a handful in CLOSE_WAIT at a window's close is
	// timing; twenty more, and still rising, is not.
	MinRise float64
	Factor  float64
	// HighCount: a median CLOSE_WAIT count over the run at least this high
	// (and not falling) is a finding without a rise. Default 100.
	HighCount float64
}

// PausesOptions tune the pauses detector: the per-window p99 of a Node.js
// target's event-loop delay or a Go target's GC pauses rising with the run,
// or sitting high, while the latency tail follows it.
type PausesOptions struct {
	// MinWindows is the fewest windows with pause readings. Default 8.
	MinWindows int
	// Alpha is the one-sided Mann–Kendall p-value (Hamed–Rao) of a rising
	// p99. Default 0.01.
	Alpha float64
	// MinRiseMs and MinRiseFactor: a rise must add at least MinRiseMs to the
	// p99 (median of the last quarter against the first) and multiply it by
	// MinRiseFactor. Defaults 20 ms and 2: a 10 ms event-loop hiccup on a
	// busy shared machine is not a finding; a p99 going 4 → 120 ms is.
	MinRiseMs     float64
	MinRiseFactor float64
	// EventLoopHighMs and GCPauseHighMs: a median p99 over the run at least
	// this high is reported even when flat. Defaults 100 ms (an event loop
	// stalled that long delays every request behind it) and 50 ms (Go's
	// stop-the-world pauses are normally well under 1 ms).
	EventLoopHighMs float64
	GCPauseHighMs   float64
	// MinLatencyCorrelation is the Spearman correlation, over the windows,
	// between the pause p99 and the latency p99 for "the latency tail
	// followed": a warning rather than an info note. Default 0.5.
	MinLatencyCorrelation float64
}

// CollapseOptions tune the collapse detector: throughput falling (or latency
// rising) over steady-load windows, attributed to the table whose rows read per
// request grow with its row count.
type CollapseOptions struct {
	// MinWindows is the fewest steady-load windows for a verdict. Default 8:
	// two per quarter, the least for comparing the first and last quarter.
	MinWindows int
	// Alpha is the one-sided Mann–Kendall p-value of the throughput (or
	// latency) trend. Default 0.01, as for leaks.
	Alpha float64
	// MinAttributedDrop is the least fall of the median throughput from the
	// first to the last quarter, as a fraction, when a table's rows read per
	// request grew with its size (the mechanism is then established). Default
	// 0.20: window-to-window jitter of ±10–30 % on a shared 2-core machine
	// moves quarter medians by about 10 %, and clean runs have no such table,
	// so this adds no false alarms while catching a collapse whose steep start
	// fell partly in the first quarter.
	MinAttributedDrop float64
	// MinAttributedRise is the same for the median p50 latency. Default 0.25.
	MinAttributedRise float64
	// MinThroughputDrop is the least fall worth a finding when no table
	// explains it. Default 0.30.
	MinThroughputDrop float64
	// MinLatencyRise is the same for p50 latency. Default 0.50 (1.5×):
	// latency is noisier than throughput under an open-model load.
	MinLatencyRise float64
	// MinUnexplainedDrop is the least fall that is a warning when nothing
	// explains it and a probe that could have is missing (smaller ones are
	// info notes). Default 0.60 (2.5×): other tenants of a shared 2-core
	// machine can take almost half of it for minutes, and with drift and
	// jitter on top the quarter medians then differ by up to 2×.
	MinUnexplainedDrop float64
	// MinUnexplainedRise is the same for p50 latency. Default 1.5 (2.5×).
	MinUnexplainedRise float64
	// MinLatentReadIncrease: a table whose rows read per request grew with its
	// size is a warning even when throughput has not (yet) fallen measurably —
	// a noisy neighbour can hide the fall in a short run — once the growth
	// reaches this many rows per request. Default 500: a seq scan reads a row
	// in roughly 0.05–0.1 µs, so that is tens of µs more work per request, and
	// it keeps growing with the table. Smaller growth gets an info note.
	MinLatentReadIncrease float64
	// SteadyTolerance: only windows whose load level (ramp target, else VUs) is
	// within this fraction of the median level are used, so a ramp is not read
	// as a collapse. Default 0.10.
	SteadyTolerance float64
	// MinRowGrowth is the least growth of a table's row count, as a fraction,
	// for it to be blamed. Default 0.10.
	MinRowGrowth float64
	// MinReadElasticity is the least elasticity of a table's rows read per
	// request to its row count (Theil–Sen slope of log reads against log
	// rows) for it to be blamed. An unindexed query reads rows in proportion
	// to the table (≈ 1), an indexed one a fixed number (≈ 0). Default 0.5.
	// Unlike a growth factor it does not depend on how much of the table's
	// growth the analysed windows cover (a 30 s warm-up leaves a 90 s run's
	// table only doubling).
	MinReadElasticity float64
	// MinReadIncrease is the least absolute growth of rows read per request
	// (first to last quarter). Default 20: fewer rows per request cost
	// microseconds and explain nothing (an indexed list with LIMIT 20 reaches
	// its 20 rows as the table fills at the start of a run).
	MinReadIncrease float64
	// ReadTrendAlpha is the one-sided Mann–Kendall p-value that a table's
	// rows read per request, ordered by its row count, must reach to be
	// blamed. Default 0.05: it is one of three gates (with MinReadElasticity
	// and MinReadIncrease, which an indexed table does not come near), and
	// the pg_stat flush moves up to a third of a window's reads into the next
	// one, so a short run's trend is noisy.
	ReadTrendAlpha float64
	// MinCPURise: without a table to blame, a rise of the target's CPU per
	// request by at least this fraction says the target itself slowed (warning);
	// otherwise the fall is put down to interference (info). Default 0.5:
	// contention from other processes moves CPU per request by 10–20 % through
	// cache effects, not by half.
	MinCPURise float64

	// MinOpRequests is the fewest requests an op needs in a window for its
	// p50 there to count in the per-op trends. Default 10.
	MinOpRequests int
	// MinOpRise: an op grew with the run when its p50 relative to the other
	// ops' (OpTrend.Lead: a machine slowing every op alike, such as a noisy
	// neighbour, cancels out) rose from the first to the last quarter by at
	// least this fraction with a rising Mann–Kendall trend (p ≤ Alpha), and
	// its own p50 rose by FlatOpRise. Default 0.5 (1.5×).
	MinOpRise float64
	// FlatOpRise: an op whose p50 moved by less than this fraction stayed
	// flat. Default 0.25.
	FlatOpRise float64
	// MinOpElasticity: without rows-read statistics (a SQLite target), a
	// table is blamed for an op that grew when the op's p50, relative to the
	// other ops' as for MinOpRise, rose with the table's rows: the
	// elasticity (Theil–Sen slope of log relative p50 against log rows) must
	// be at least this. A query that scans the table
	// has an elasticity near 1 once the scan dominates; one served by an
	// index stays near 0. Default 0.3, since the op's fixed costs damp it
	// while the table is small.
	MinOpElasticity float64
	// MinTableRowIncrease is the least number of rows a table must gain to
	// be blamed without rows-read statistics. Default 1,000.
	MinTableRowIncrease float64
	// MaxCommonSlowdown: a window in which the other ops' p50s (each scaled
	// by its own median, as for OpTrend.Lead; their median in the window) are
	// at this many times their usual level or more (the lower quartile over
	// the windows: stalls can take half of them) is left out of an op's
	// trend, unless fewer than MinWindows would be left. There the
	// machine, not the op, sets every latency: a driver and target starved
	// of CPU add tens to hundreds of milliseconds to every request alike,
	// which squeezes the op's p50 relative to the others' towards 1 and
	// hides its own slowdown. Default 3: a shared machine's window-to-window
	// jitter moves the common level by ±10–50 %.
	MaxCommonSlowdown float64
}

// ErrorSurgeOptions tune the error-surge detector. Requests in flight when the
// run stopped (class "interrupted") are never counted as errors.
type ErrorSurgeOptions struct {
	// MinWindows is the fewest windows for a verdict. Default 8.
	MinWindows int
	// Alpha is the one-sided Mann–Kendall p-value (per-window error rate) for a
	// critical surge; a surge that does not reach it is a warning. Default 0.01.
	Alpha float64
	// Factor: the last-quarter error rate must be at least Factor × the
	// first-quarter rate. Default 5.
	Factor float64
	// MinRise: ... and at least the first-quarter rate + MinRise (a fraction:
	// 0.01 is one percentage point). Default 0.01, so a run that starts at
	// 0.001 % errors does not "surge" to 0.005 %.
	MinRise float64
	// MinErrors is the fewest errors in the windows that surged. Default 20:
	// fewer are too few to call a rate (Poisson noise of ±22 % at 20).
	MinErrors int64
	// BurstMinRise is MinRise for a burst that recovered before the end
	// (reported as a warning). Default 0.05: a transient needs to be bigger
	// than a sustained rise to matter.
	BurstMinRise float64
}

// ThroughputLimitOptions tune the throughput-limit detector, which reads a
// ramp: as concurrency (VUs, or the arrival-rate target) rises, completions
// stop rising at a knee.
type ThroughputLimitOptions struct {
	// MinWindows is the fewest windows. Default 8.
	MinWindows int
	// MinLevelRatio: the load level must vary at least this much (max/min)
	// across the windows to count as a ramp. Default 2.
	MinLevelRatio float64
	// MinLevels is the fewest distinct load levels. Default 4: a knee needs
	// points on both sides of it.
	MinLevels int
	// MinOverKnee: the ramp must go at least this factor beyond the knee.
	// Default 2.5: linear scaling would then add 150 %, which ±30 % jitter
	// and a drifting neighbour cannot hide or fake (at 2×, one clean ramp in a
	// thousand looked flat).
	MinOverKnee float64
	// MaxElasticity: beyond the knee, the elasticity of throughput to
	// concurrency (d ln throughput / d ln level, by Theil–Sen) must be at most
	// this for "flat". Linear scaling is 1, a saturated resource 0. Default
	// 0.35 (e.g. at most +38 % from 16 to 40 VUs, where linear scaling gives
	// +150 %): on simulated ramps with ±30 % jitter and a drifting neighbour
	// the estimate spreads by about ±0.15, so 0.35 kept every unsaturated
	// ramp quiet while 0.25 missed 1 % of saturated ones whose soft knee was
	// placed early.
	MaxElasticity float64
	// MinPointsBeyondKnee is the fewest windows at or beyond the knee.
	// Default 3.
	MinPointsBeyondKnee int
	// Severity of a throughput_limit finding. Default Info: a ramp is run to
	// find its limit, so reaching one is a result, not a fault — and on a
	// shared machine a neighbour that takes capacity mid-ramp makes the
	// measured throughput level off too. Set Warning to alert on it.
	Severity Severity
}

// DefaultOptions returns the defaults documented on each field.
func DefaultOptions() Options {
	return Options{
		WarmupWindows: DefaultWarmupWindows,
		MaxPoints:     DefaultMaxPoints,
		Leak: LeakOptions{
			MinReadings:          6,
			ConfidentReadings:    12,
			PreferForcedReadings: 8,
			Alpha:                0.01,
			MinGrowthBytes:       1 << 20,
			MinGrowthFraction:    0.25,
			NoteGrowthFraction:   0.10,
			TailFraction:         0.5,
			MinTailSlopeRatio:    0.5,
			TailAlpha:            0.01,
			MaxHeapShare:         0.25,
		},
		Pauses: PausesOptions{
			MinWindows:            8,
			Alpha:                 0.01,
			MinRiseMs:             20,
			MinRiseFactor:         2,
			EventLoopHighMs:       100,
			GCPauseHighMs:         50,
			MinLatencyCorrelation: 0.5,
		},
		Connections: ConnectionsOptions{MinWindows: 8, Alpha: 0.01, MinRise: 20, Factor: 2, HighCount: 100},
		Collapse: CollapseOptions{
			MinWindows:            8,
			Alpha:                 0.01,
			MinAttributedDrop:     0.20,
			MinAttributedRise:     0.25,
			MinThroughputDrop:     0.30,
			MinLatencyRise:        0.50,
			MinUnexplainedDrop:    0.60,
			MinUnexplainedRise:    1.5,
			MinLatentReadIncrease: 500,
			SteadyTolerance:       0.10,
			MinRowGrowth:          0.10,
			MinReadElasticity:     0.5,
			ReadTrendAlpha:        0.05,
			MinReadIncrease:       20,
			MinCPURise:            0.5,
			MinOpRequests:         10,
			MinOpRise:             0.5,
			FlatOpRise:            0.25,
			MinOpElasticity:       0.3,
			MinTableRowIncrease:   1000,
			MaxCommonSlowdown:     3,
		},
		ErrorSurge: ErrorSurgeOptions{
			MinWindows:   8,
			Alpha:        0.01,
			Factor:       5,
			MinRise:      0.01,
			MinErrors:    20,
			BurstMinRise: 0.05,
		},
		ThroughputLimit: ThroughputLimitOptions{
			MinWindows:          8,
			MinLevelRatio:       2,
			MinLevels:           4,
			MinOverKnee:         2.5,
			MaxElasticity:       0.35,
			MinPointsBeyondKnee: 3,
			Severity:            Info,
		},
		RateMissed: RateMissedOptions{
			Warning:     0.01,
			Critical:    0.10,
			MinIntended: 100,
		},
	}
}

// withDefaults replaces every zero field of o by its default.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.WarmupWindows == 0 {
		o.WarmupWindows = d.WarmupWindows
	}
	def(&o.MaxPoints, d.MaxPoints)

	l, dl := &o.Leak, d.Leak
	def(&l.MinReadings, dl.MinReadings)
	def(&l.ConfidentReadings, dl.ConfidentReadings)
	def(&l.PreferForcedReadings, dl.PreferForcedReadings)
	def(&l.Alpha, dl.Alpha)
	def(&l.MinGrowthBytes, dl.MinGrowthBytes)
	def(&l.MinGrowthFraction, dl.MinGrowthFraction)
	def(&l.NoteGrowthFraction, dl.NoteGrowthFraction)
	def(&l.TailFraction, dl.TailFraction)
	def(&l.MinTailSlopeRatio, dl.MinTailSlopeRatio)
	def(&l.TailAlpha, dl.TailAlpha)
	def(&l.MaxHeapShare, dl.MaxHeapShare)

	pa, dp := &o.Pauses, d.Pauses
	def(&pa.MinWindows, dp.MinWindows)
	def(&pa.Alpha, dp.Alpha)
	def(&pa.MinRiseMs, dp.MinRiseMs)
	def(&pa.MinRiseFactor, dp.MinRiseFactor)
	def(&pa.EventLoopHighMs, dp.EventLoopHighMs)
	def(&pa.GCPauseHighMs, dp.GCPauseHighMs)
	def(&pa.MinLatencyCorrelation, dp.MinLatencyCorrelation)

	cn, dcn := &o.Connections, d.Connections
	def(&cn.MinWindows, dcn.MinWindows)
	def(&cn.Alpha, dcn.Alpha)
	def(&cn.MinRise, dcn.MinRise)
	def(&cn.Factor, dcn.Factor)
	def(&cn.HighCount, dcn.HighCount)

	c, dc := &o.Collapse, d.Collapse
	def(&c.MinWindows, dc.MinWindows)
	def(&c.Alpha, dc.Alpha)
	def(&c.MinAttributedDrop, dc.MinAttributedDrop)
	def(&c.MinAttributedRise, dc.MinAttributedRise)
	def(&c.MinThroughputDrop, dc.MinThroughputDrop)
	def(&c.MinLatencyRise, dc.MinLatencyRise)
	def(&c.MinUnexplainedDrop, dc.MinUnexplainedDrop)
	def(&c.MinUnexplainedRise, dc.MinUnexplainedRise)
	def(&c.MinLatentReadIncrease, dc.MinLatentReadIncrease)
	def(&c.SteadyTolerance, dc.SteadyTolerance)
	def(&c.MinRowGrowth, dc.MinRowGrowth)
	def(&c.MinReadElasticity, dc.MinReadElasticity)
	def(&c.ReadTrendAlpha, dc.ReadTrendAlpha)
	def(&c.MinReadIncrease, dc.MinReadIncrease)
	def(&c.MinCPURise, dc.MinCPURise)
	def(&c.MinOpRequests, dc.MinOpRequests)
	def(&c.MinOpRise, dc.MinOpRise)
	def(&c.FlatOpRise, dc.FlatOpRise)
	def(&c.MinOpElasticity, dc.MinOpElasticity)
	def(&c.MinTableRowIncrease, dc.MinTableRowIncrease)
	def(&c.MaxCommonSlowdown, dc.MaxCommonSlowdown)

	e, de := &o.ErrorSurge, d.ErrorSurge
	def(&e.MinWindows, de.MinWindows)
	def(&e.Alpha, de.Alpha)
	def(&e.Factor, de.Factor)
	def(&e.MinRise, de.MinRise)
	def(&e.MinErrors, de.MinErrors)
	def(&e.BurstMinRise, de.BurstMinRise)

	t, dt := &o.ThroughputLimit, d.ThroughputLimit
	def(&t.MinWindows, dt.MinWindows)
	def(&t.MinLevelRatio, dt.MinLevelRatio)
	def(&t.MinLevels, dt.MinLevels)
	def(&t.MinOverKnee, dt.MinOverKnee)
	def(&t.MaxElasticity, dt.MaxElasticity)
	def(&t.MinPointsBeyondKnee, dt.MinPointsBeyondKnee)
	if t.Severity == "" {
		t.Severity = dt.Severity
	}

	rm, drm := &o.RateMissed, d.RateMissed
	def(&rm.Warning, drm.Warning)
	def(&rm.Critical, drm.Critical)
	def(&rm.MinIntended, drm.MinIntended)
	return o
}

func def[T int | int64 | float64](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}
