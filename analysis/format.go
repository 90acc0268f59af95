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
