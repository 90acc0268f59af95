package analysis

// Outcome is a paired comparison's answer for one metric: is build B better
// or worse than build A, by more than the effect-size floor, with 95 %
// confidence — or is there no difference, or can the pairs not tell?
type Outcome string

// Outcomes of a metric in a paired comparison.
const (
	Better       Outcome = "better"
	Worse        Outcome = "worse"
	NoDifference Outcome = "no_difference"
	// Inconclusive comes with Verdict.Reason: too few pairs, the interval
	// spans the floor, the pairs disagree, or disturbed rounds.
	Inconclusive Outcome = "inconclusive"
)

// Metric names of a comparison, one value per round (warm-up excluded).
const (
	MetricP50Ms              = "p50_ms"
	MetricP95Ms              = "p95_ms"
	MetricP99Ms              = "p99_ms"
	MetricRPS                = "rps"
	MetricCPUMicrosPerReq    = "cpu_us_per_request"
	MetricHeapBytes          = "heap_bytes"
	MetricRSSBytes           = "rss_bytes"
	MetricRowsReadPerRequest = "rows_read_per_request"
	// MetricAllocBytesPerReq and MetricGCPer1kRequests are a Go target's
	// bytes allocated per request and GC cycles per 1,000 requests, from
	// the runtime counters on its metrics page (probes.GoCounters). A
	// Node.js target has no cumulative allocation counter, so neither.
	MetricAllocBytesPerReq = "alloc_bytes_per_request"
	MetricGCPer1kRequests  = "gc_per_1k_requests"
)

// Methods a Verdict names.
const (
	// MethodTLogRatio: the 95 % interval of the mean log-ratio, Student's t
	// with n−1 degrees of freedom; the sign count is reported beside it.
	MethodTLogRatio = "t-log-ratio"
	// MethodTLogRatioWilcoxon: as MethodTLogRatio, and from 6 pairs the
	// Wilcoxon signed-rank test must agree.
	MethodTLogRatioWilcoxon = "t-log-ratio+wilcoxon"
	// MethodTLogRatioPooled: as MethodTLogRatio, with the standard
	// deviation of the log-ratios pooled with that of earlier comparisons
	// of the same scenario on the same host (PairedOptions.Prior), and t at
	// the pooled degrees of freedom.
	MethodTLogRatioPooled = "t-log-ratio-pooled"
	// MethodTLogRatioPooledWilcoxon: pooled, and from 6 pairs Wilcoxon too.
	MethodTLogRatioPooledWilcoxon = "t-log-ratio-pooled+wilcoxon"
)

// Verdict is the answer for one metric of a paired comparison. Ratios are
// B/A (B's round value over A's, per pair); CI is the 95 % interval of their
// geometric mean. For latency, CPU, allocations, GC cycles, heap, RSS and
// rows read a ratio below 1 is better; for throughput (rps) above 1 is.
type Verdict struct {
	Metric  string  `json:"metric"`
	Outcome Outcome `json:"outcome"`
	// Ratio is the geometric mean of the pairs' B/A ratios.
	Ratio float64    `json:"ratio"`
	CI    [2]float64 `json:"ci"`
	// Pairs is how many pairs had the metric on both sides; PairsBBetter
	// how many of them B won.
	Pairs        int    `json:"pairs"`
	PairsBBetter int    `json:"pairs_b_better"`
	Method       string `json:"method"`
	// Reason says why the outcome is inconclusive (or why a significant
	// change is no_difference); empty otherwise.
	Reason string `json:"reason"`
	// MinRatio, MaxRatio and MedianRatio describe the pairs' ratios.
	MinRatio    float64 `json:"min_ratio,omitempty"`
	MaxRatio    float64 `json:"max_ratio,omitempty"`
	MedianRatio float64 `json:"median_ratio,omitempty"`
	// SignP is the two-sided sign-test p-value of the pairs' directions;
	// WilcoxonP the two-sided Wilcoxon signed-rank p-value (from 6 pairs,
	// else 0 and omitted).
	SignP     float64 `json:"sign_p,omitempty"`
	WilcoxonP float64 `json:"wilcoxon_p,omitempty"`
	// Floor is the effect-size floor applied (0.03 is 3 %).
	Floor float64 `json:"floor"`
	// HigherIsBetter is set for throughput.
	HigherIsBetter bool `json:"higher_is_better,omitempty"`
	// SD is the sample standard deviation of this comparison's own pair
	// log-ratios (from 2 pairs): what later comparisons pool as the
	// scenario's noise on this host.
	SD float64 `json:"sd,omitempty"`
	// DF is the degrees of freedom of the interval's t: pairs − 1, or the
	// pooled degrees of freedom when PooledFrom > 0.
	DF int `json:"df,omitempty"`
	// PooledFrom is how many earlier comparisons' noise was pooled with
	// this one's (0: its own pairs only).
	PooledFrom int `json:"pooled_from,omitempty"`
	// Family is the number of metrics the 95 % holds jointly over
	// (Bonferroni): the chance that any of them is wrongly called better
	// or worse is at most 5 %. 0 or 1: this metric alone.
	Family int `json:"family,omitempty"`
	// Primary is set on the metrics the comparison decides on
	// (PairedOptions.Primary); Family then counts the primary metrics, and
	// on the others it counts the others.
	Primary bool `json:"primary,omitempty"`
	// Looks is, in a sequential comparison (CompareSequential), how many
	// looks at the pairs the interval's coverage holds over; Spending names
	// the alpha-spending function; DecidedAt is the number of pairs after
	// which the metric was decided (0: not decided).
	Looks     int    `json:"looks,omitempty"`
	Spending  string `json:"spending,omitempty"`
	DecidedAt int    `json:"decided_at,omitempty"`
	// Summary is the line a person reads: "p50: B won 4/4 pairs (−10 % to
	// −29 %), median −17 %, 95 % CI [−24 %, −9 %] → better".
	Summary string `json:"summary"`
	// ProfileDiff is set on a better, worse or inconclusive
	// cpu_us_per_request verdict whose rounds have CPU profiles: the
	// functions whose CPU per request moved most between A and B (each
	// side's rounds merged), biggest mover first.
	ProfileDiff []FunctionCost `json:"profile_diff,omitempty"`
	// AllocDiff is set on a better, worse or inconclusive
	// alloc_bytes_per_request verdict whose rounds have two heap profiles
	// each: the allocation sites whose bytes allocated per request moved
	// most between A and B, biggest mover first.
	AllocDiff []AllocationCost `json:"alloc_diff,omitempty"`
	// Wall is set on a worse latency or throughput verdict whose B rounds
	// have thread readings that show a saturated resource (ExplainWalls):
	// which, in words, and WallCause its name (CauseSingleThread, …).
	Wall      string `json:"wall,omitempty"`
	WallCause string `json:"wall_cause,omitempty"`
}
