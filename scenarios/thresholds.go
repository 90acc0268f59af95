package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Threshold is a pass/fail limit on one metric of a run: the gate a pipeline
// trusts. Exactly one of Max and Min is set. Package thresholds evaluates it.
//
//	thresholds:
//	  - {metric: p99_ms, op: list, max: 250}     # per op, or the whole run when op is absent
//	  - {metric: error_rate, max: 0.01}
//	  - {metric: cpu_us_per_request, max: 2000, scope: window, windows: 3, abort: true}
type Threshold struct {
	// Metric is one of ThresholdMetrics (p99_ms, rps, error_rate, ...).
	Metric string `yaml:"metric" json:"metric"`
	// Op limits the metric of one op; empty means all ops together.
	Op  string   `yaml:"op" json:"op,omitempty"`
	Max *float64 `yaml:"max" json:"max,omitempty"`
	Min *float64 `yaml:"min" json:"min,omitempty"`
	// Scope is ScopeRun (the default: the run's merged summary, warm-up
	// excluded) or ScopeWindow (each window on its own).
	Scope string `yaml:"scope" json:"scope,omitempty"`
	// Windows is, with ScopeWindow, how many consecutive windows must breach
	// the limit for the threshold to fail (default 1).
	Windows int `yaml:"windows" json:"windows,omitempty"`
	// Abort ends the run early once the threshold fails (ScopeWindow only):
	// teardown and analysis still run, and the run completes with the
	// breach recorded.
	Abort bool `yaml:"abort" json:"abort,omitempty"`

	// Line is the threshold's line in Source; not part of the format.
	Line int `yaml:"-" json:"-"`
}

// Threshold scopes.
const (
	ScopeRun    = "run"
	ScopeWindow = "window"
)

// Limit returns the threshold's limit and whether it is an upper bound (max).
func (t Threshold) Limit() (limit float64, isMax bool) {
	if t.Max != nil {
		return *t.Max, true
	}
	if t.Min != nil {
		return *t.Min, false
	}
	return 0, true
}

// Breached reports whether value is outside the limit.
func (t Threshold) Breached(value float64) bool {
	limit, isMax := t.Limit()
	if isMax {
		return value > limit
	}
	return value < limit
}

// String is the threshold as a person reads it: "p99_ms{op=list} max 250",
// "cpu_us_per_request max 2000 (3 windows)".
func (t Threshold) String() string {
	var b strings.Builder
	b.WriteString(t.Metric)
	if t.Op != "" {
		fmt.Fprintf(&b, "{op=%s}", t.Op)
	}
	limit, isMax := t.Limit()
	bound := "min"
	if isMax {
		bound = "max"
	}
	fmt.Fprintf(&b, " %s %s", bound, formatLimit(limit))
	if t.Scope == ScopeWindow {
		n := max(t.Windows, 1)
		if n == 1 {
			b.WriteString(" (any window)")
		} else {
			fmt.Fprintf(&b, " (%d windows in a row)", n)
		}
	}
	return b.String()
}

func formatLimit(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.6f", v), "0"), ".")
}

// ThresholdMetric describes one metric a threshold can limit.
type ThresholdMetric struct {
	Name string
	// PerOp: the metric exists for each op (latency, rps, error rate), not
	// only for the target as a whole.
	PerOp bool
	// Fraction: the value is a fraction within 0..1.
	Fraction bool
	// Meaning says what the value is, for documentation and messages.
	Meaning string
}

// ThresholdMetrics are the metrics thresholds can limit, in documentation order.
var ThresholdMetrics = []ThresholdMetric{
	{Name: "p50_ms", PerOp: true, Meaning: "median latency, ms"},
	{Name: "p90_ms", PerOp: true, Meaning: "90th percentile latency, ms"},
	{Name: "p95_ms", PerOp: true, Meaning: "95th percentile latency, ms"},
	{Name: "p99_ms", PerOp: true, Meaning: "99th percentile latency, ms"},
	{Name: "p999_ms", PerOp: true, Meaning: "99.9th percentile latency, ms"},
	{Name: "max_ms", PerOp: true, Meaning: "slowest request, ms"},
	{Name: "rps", PerOp: true, Meaning: "requests per second"},
	{Name: "error_rate", PerOp: true, Fraction: true, Meaning: "failed requests / requests"},
	{Name: "dropped_rate", Fraction: true, Meaning: "dropped starts / (requests + dropped starts), open model"},
	{Name: "cpu_us_per_request", Meaning: "target CPU time per request, µs"},
	{Name: "alloc_bytes_per_request", Meaning: "bytes a Go target allocated per request (its metrics page)"},
	{Name: "gc_per_1k_requests", Meaning: "GC cycles of a Go target per 1,000 requests (its metrics page)"},
	{Name: "rss_bytes", Meaning: "target resident memory, bytes (the run: its highest reading)"},
	{Name: "heap_bytes", Meaning: "target post-GC heap, bytes (the run: its highest reading)"},
	{Name: "rows_read_per_request", Meaning: "database rows read per request"},
}

// LookupThresholdMetric returns the metric named name.
func LookupThresholdMetric(name string) (ThresholdMetric, bool) {
	i := slices.IndexFunc(ThresholdMetrics, func(m ThresholdMetric) bool { return m.Name == name })
	if i < 0 {
		return ThresholdMetric{}, false
	}
	return ThresholdMetrics[i], true
}

func thresholdMetricNames() string {
	names := make([]string, len(ThresholdMetrics))
	for i, m := range ThresholdMetrics {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

func (v *validator) validateThresholds() {
	ops := make([]string, 0, len(v.s.Ops))
	for _, op := range v.s.Ops {
		ops = append(ops, op.Name)
	}
	for i := range v.s.Thresholds {
		t := &v.s.Thresholds[i]
		base := p("thresholds", i)
		label := fmt.Sprintf("threshold %d", i+1)
		m, known := LookupThresholdMetric(t.Metric)
		switch {
		case t.Metric == "":
			v.errf(base, "%s: metric is required (one of %s)", label, thresholdMetricNames())
		case !known:
			v.errf(join(base, "metric"), "%s: metric %q is not one of %s", label, t.Metric, thresholdMetricNames())
		default:
			label += " (" + t.Metric + ")"
		}
		if t.Op != "" {
			switch {
			case known && !m.PerOp:
				v.errf(join(base, "op"), "%s: %s is measured for the whole target, not per op; remove op", label, t.Metric)
			case len(ops) > 0 && !slices.Contains(ops, t.Op):
				v.errf(join(base, "op"), "%s: op %q is not an op of this scenario (%s)", label, t.Op, strings.Join(ops, ", "))
			}
		}
		switch {
		case t.Max == nil && t.Min == nil:
			v.errf(base, "%s: needs max or min (e.g. max: 250)", label)
		case t.Max != nil && t.Min != nil:
			v.errf(join(base, "min"), "%s: has both max and min; write two thresholds", label)
		default:
			key := "max"
			if t.Min != nil {
				key = "min"
			}
			limit, _ := t.Limit()
			switch {
			case math.IsNaN(limit) || math.IsInf(limit, 0):
				v.errf(join(base, key), "%s: %s must be a finite number, got %v", label, key, limit)
			case limit < 0:
				v.errf(join(base, key), "%s: %s must be ≥ 0, got %v", label, key, limit)
			case m.Fraction && limit > 1:
				v.errf(join(base, key), "%s: %s is a fraction (0..1, e.g. 0.01 for 1 %%), got %v", label, key, limit)
			}
		}
		switch t.Scope {
		case "":
			t.Scope = ScopeRun
		case ScopeRun, ScopeWindow:
		default:
			v.errf(join(base, "scope"), "%s: scope %q is not one of run, window", label, t.Scope)
		}
		if t.Scope == ScopeWindow {
			if t.Windows == 0 && !v.has(join(base, "windows")...) {
				t.Windows = 1
			} else if t.Windows < 1 {
				v.errf(join(base, "windows"), "%s: windows must be ≥ 1, got %d", label, t.Windows)
			}
		} else if t.Windows != 0 || v.has(join(base, "windows")...) {
			v.errf(join(base, "windows"), "%s: windows counts consecutive windows; it needs scope: window", label)
		}
		if t.Abort && t.Scope != ScopeWindow {
			v.errf(join(base, "abort"), "%s: abort: true needs scope: window (a run-scoped threshold is only known when the run ends)", label)
		}
	}
}
