package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// ms formats a latency in milliseconds with about four significant digits:
// 0.123, 1.234, 12.35, 123.5, 1234.
func ms(v float64) string {
	switch a := math.Abs(v); {
	case a < 10:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// shareOf formats n of total as a percentage: "0 %", "0.42 %", "12.5 %".
func shareOf(n, total int64) string {
	if n == 0 || total == 0 {
		return "0 %"
	}
	p := 100 * float64(n) / float64(total)
	if p < 10 {
		return strconv.FormatFloat(p, 'f', 2, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}

// rps formats a rate with one decimal.
func rps(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// clock formats an elapsed time as h:mm:ss, with milliseconds when it is not
// a whole second (a run stopped early ends mid-window).
func clock(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	d = d.Round(time.Millisecond)
	h, m, s := int64(d/time.Hour), int64(d/time.Minute%60), int64(d/time.Second%60)
	out := fmt.Sprintf("%s%d:%02d:%02d", neg, h, m, s)
	if frac := d % time.Second; frac != 0 {
		out += fmt.Sprintf(".%03d", frac/time.Millisecond)
	}
	return out
}

// opNames returns the keys of ops, sorted.
func opNames(ops map[string]window.OpStats) []string {
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// round3 rounds to three decimals, so JSON carries 1234.567, not 1234.5666666666666.
func round3(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*1000) / 1000
}

// utc formats t for text output; the zero time is "-".
func utc(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
