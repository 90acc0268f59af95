package analysis

import "time"

// Kinds of finding.
const (
	KindLeak            = "leak"
	KindCollapse        = "collapse"
	KindErrorSurge      = "error_surge"
	KindThroughputLimit = "throughput_limit"
	// KindPauses: event-loop delay (Node.js) or GC pauses (Go) rising with
	// the run or sitting high, with the latency tail following.
	KindPauses = "pauses"
	// KindMissingEvidence says a detector could not run because the windows
	// lack the probe data it needs (for example no heap readings).
	KindMissingEvidence = "missing_evidence"
)

// Severity orders findings: info < warning < critical.
type Severity string

// Severities.
const (
	Info     Severity = "info"
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

// Rank orders severities (info 0, warning 1, critical 2; unknown -1).
func (s Severity) Rank() int {
	switch s {
	case Info:
		return 0
	case Warning:
		return 1
	case Critical:
		return 2
	}
	return -1
}

// Finding is one thing a soak revealed, with the evidence behind it.
type Finding struct {
	Kind     string   `json:"kind"`
	Severity Severity `json:"severity"`
	// Summary is one line a person can act on.
	Summary     string   `json:"summary"`
	Incarnation int      `json:"incarnation"`
	Evidence    Evidence `json:"evidence"`
}

// Evidence backs a finding. Fields that do not apply are left zero and omitted.
type Evidence struct {
	FirstWindow int `json:"first_window"`
	LastWindow  int `json:"last_window"`
	// Slope of the trend that triggered the finding, in SlopeUnit
	// (e.g. "bytes/hour", "req/s per 1k rows").
	Slope     float64 `json:"slope,omitempty"`
	SlopeUnit string  `json:"slope_unit,omitempty"`
	// PerKRequests is heap growth per 1,000 requests (leak).
	PerKRequests float64 `json:"bytes_per_1k_requests,omitempty"`
	PValue       float64 `json:"p_value,omitempty"`
	// Correlation (e.g. Spearman's rho of throughput against table rows).
	Correlation float64 `json:"correlation,omitempty"`
	Table       string  `json:"table,omitempty"`
	// Op is the op whose latency grew most with the run (collapse), and Ops
	// every op's latency at the start and the end, the ones that grew first.
	Op  string    `json:"op,omitempty"`
	Ops []OpTrend `json:"ops,omitempty"`
	// Before and After are the metric's level at the start and end, in Unit.
	Before float64 `json:"before,omitempty"`
	After  float64 `json:"after,omitempty"`
	Unit   string  `json:"unit,omitempty"`
	// Cause names the likely cause where a detector tells causes apart
	// (rate_missed: CauseTargetLatency, CauseMaxVUs, CauseDriverCPU;
	// throughput_limit and collapse: CauseSingleThread, CauseTargetCores,
	// CauseDatabaseCPU, CauseNoCPU — the wall).
	Cause string `json:"cause,omitempty"`
	// Thread is the target's busiest thread's name beyond a throughput
	// limit's knee or in a collapse's late windows (with the thread
	// probe's readings).
	Thread string `json:"thread,omitempty"`
	// Missing names the probe data a detector needed and did not find.
	Missing []string `json:"missing,omitempty"`
	// Notes carries any other figure worth showing, keyed by name.
	Notes map[string]float64 `json:"notes,omitempty"`
	// At is when the fault happened (crash), and Output the last lines
	// the target printed before it, oldest first, secrets masked.
	At     time.Time `json:"at,omitzero"`
	Output []string  `json:"output,omitempty"`
	// Functions (collapse) are the functions whose CPU per request grew
	// most between the early (A) and the late (B) windows' CPU profiles.
	Functions []FunctionCost `json:"functions,omitempty"`
	// AllocationSites (leak) are the allocation sites whose retained bytes
	// grew most between the heap profiles at the start and the end of the
	// leak's range.
	AllocationSites []AllocationSite `json:"allocation_sites,omitempty"`
}

// KindInsufficientData says there was too little data for a verdict (too few
// windows after warm-up, too few heap readings). It is always of severity info:
// it describes the run, not the target.
const KindInsufficientData = "insufficient_data"
