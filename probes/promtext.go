package probes

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// cutLine returns the first line of body and what follows its newline.
func cutLine(body []byte) (line, rest []byte) {
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		return body[:i], body[i+1:]
	}
	return body, nil
}

var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// ValidMetricName reports whether name is a valid Prometheus metric name.
func ValidMetricName(name string) bool { return metricNameRE.MatchString(name) }

// Errors of ParseMetric; callers branch on them to say what is wrong with the
// target's exposition.
var (
	ErrMetricNotFound = errors.New("metric not found")
	ErrMetricNaN      = errors.New("metric is not a number")
	ErrExposition     = errors.New("malformed exposition line")
)

// ParseMetric finds metric name in a Prometheus text exposition (format
// 0.0.4, or OpenMetrics text) and returns the sum of its samples (one per
// label set; usually there is exactly one) and how many there were.
//
// Comments (# HELP, # TYPE, # EOF) and other metrics are skipped; label
// values may contain escaped quotes and braces; values may be written with
// exponents, NaN, +Inf or -Inf, and may be followed by a timestamp. A sample
// whose value is NaN or infinite makes the result ErrMetricNaN; a name never
// seen, ErrMetricNotFound. A malformed line of the wanted metric gives
// ErrExposition; malformed lines of other metrics are ignored. ParseMetric
// does not allocate unless it returns an error.
func ParseMetric(body []byte, name string) (sum float64, series int, err error) {
	for len(body) > 0 {
		var line []byte
		line, body = cutLine(body)
		line = trimSpace(line)
		if len(line) <= len(name) || line[0] == '#' {
			continue
		}
		if string(line[:len(name)]) != name {
			continue
		}
		rest := line[len(name):]
		if c := rest[0]; c != '{' && c != ' ' && c != '\t' {
			continue // a longer name with this prefix (name_sum, name_total, ...)
		}
		v, ok := sampleValue(rest)
		if !ok {
			return 0, series, fmt.Errorf("%w: %.200q", ErrExposition, line)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, series, fmt.Errorf("%s = %v: %w", name, v, ErrMetricNaN)
		}
		sum += v
		series++
	}
	if series == 0 {
		return 0, 0, fmt.Errorf("%s: %w", name, ErrMetricNotFound)
	}
	return sum, series, nil
}

// sampleValue parses `{labels} value [timestamp]` or ` value [timestamp]`.
func sampleValue(b []byte) (float64, bool) {
	if b[0] == '{' {
		end, ok := skipLabels(b)
		if !ok {
			return 0, false
		}
		b = b[end:]
	}
	b = trimSpace(b)
	end := 0
	for end < len(b) && b[end] != ' ' && b[end] != '\t' {
		end++
	}
	if end == 0 {
		return 0, false
	}
	tok := b[:end]
	if rest := trimSpace(b[end:]); len(rest) > 0 {
		// Optional timestamp (integer ms in 0.0.4, float seconds in OpenMetrics),
		// optionally followed by an OpenMetrics exemplar ("# {...} v").
		ts := rest
		if i := bytes.IndexByte(rest, ' '); i >= 0 {
			ts = rest[:i]
		}
		if ts[0] != '#' {
			if _, err := strconv.ParseFloat(string(ts), 64); err != nil {
				return 0, false
			}
		}
	}
	switch string(tok) { // spellings Go does not parse the same way
	case "NaN", "Nan", "nan":
		return math.NaN(), true
	case "+Inf", "Inf", "inf", "+inf":
		return math.Inf(1), true
	case "-Inf", "-inf":
		return math.Inf(-1), true
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// skipLabels returns the index just past the '}' closing the label set that
// starts at b[0] == '{', honouring quoted values with backslash escapes.
func skipLabels(b []byte) (int, bool) {
	inQuote := false
	for i := 1; i < len(b); i++ {
		c := b[i]
		switch {
		case inQuote && c == '\\':
			i++ // skip the escaped character
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return i + 1, true
		}
	}
	return 0, false
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
