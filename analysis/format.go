package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Formatting for summaries: a person reads them, so figures are rounded to what
// the evidence supports and large numbers get thousands separators.

// fmtBytes formats a byte count with binary units: "812 B", "12.3 MiB".
func fmtBytes(b float64) string {
	neg := b < 0
	b = math.Abs(b)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	u := 0
	for b >= 1024 && u < len(units)-1 {
		b /= 1024
		u++
	}
	var s string
	switch {
	case u == 0:
		s = fmt.Sprintf("%.0f B", b)
	case b < 10:
		s = fmt.Sprintf("%.2f %s", b, units[u])
	case b < 100:
		s = fmt.Sprintf("%.1f %s", b, units[u])
	default:
		s = fmt.Sprintf("%.0f %s", b, units[u])
	}
	if neg {
		return "−" + s
	}
	return s
}

// fmtCount formats a number with thousands separators, rounded to a whole
// number from 100 up, with one decimal from 10 and two below.
func fmtCount(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	a := math.Abs(v)
	switch {
	case a < 10 && a != math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100 && a != math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	n := int64(math.Round(v))
	s := strconv.FormatInt(abs64(n), 10)
	var b strings.Builder
	if n < 0 {
		b.WriteString("−")
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// fmtPct formats a fraction as a percentage: 0.084 → "8.4 %", 0.0002 → "0.02 %".
func fmtPct(f float64) string {
	p := f * 100
	switch {
	case p == 0:
		return "0 %"
	case math.Abs(p) < 0.1:
		return fmt.Sprintf("%.3g %%", p)
	case math.Abs(p) < 10:
		return fmt.Sprintf("%.1f %%", p)
	}
	return fmt.Sprintf("%.0f %%", p)
}

// fmtP formats a p-value.
func fmtP(p float64) string {
	if p < 0.0001 {
		return "p < 0.0001"
	}
	return fmt.Sprintf("p = %.2g", p)
}

// fmtFactor formats a ratio ≥ 1 as "5.1×".
func fmtFactor(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

// fmtSeconds formats a duration given in seconds: "87 s", "12 min", "8.0 h".
func fmtSeconds(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.0f s", s)
	case s < 7200:
		return fmt.Sprintf("%.0f min", s/60)
	}
	return fmt.Sprintf("%.1f h", s/3600)
}

// fmtMs formats milliseconds: "0.42 ms", "8.2 ms", "130 ms".
func fmtMs(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmtCount(math.Round(ms)) + " ms"
}

// MissingLabel names an Evidence.Missing entry for a person: "post-GC heap"
// for MissingHeap, "database statistics", "target CPU time".
func MissingLabel(name string) string {
	switch name {
	case MissingHeap:
		return "post-GC heap"
	case MissingDatabase:
		return "database statistics"
	case MissingCPU:
		return "target CPU time"
	case MissingStatements:
		return "statements per request"
	}
	return strings.ReplaceAll(name, "_", " ")
}

// NoteLabel is an Evidence.Notes key for a person: "warmup windows" for
// "warmup_windows".
func NoteLabel(key string) string { return strings.ReplaceAll(key, "_", " ") }

// FormatNote formats an Evidence.Notes value for a person: a share
// (a key ending in _share or _fraction, host_foreign_cpu) as a percentage,
// a count as a whole number ("2", "14,200"), anything else with the digits
// it needs ("0.42", "8.1", "130").
func FormatNote(key string, v float64) string {
	if strings.HasSuffix(key, "_share") || strings.HasSuffix(key, "_fraction") || key == "host_foreign_cpu" {
		return fmtPct(v)
	}
	if math.Abs(v) >= 1e-3 && math.Abs(v) < 1e15 {
		return fmtCount(v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
