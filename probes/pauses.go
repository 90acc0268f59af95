package probes

import (
	"bytes"
	"math"
	"slices"
	"strconv"

	"github.com/longhaul-dev/longhaul/window"
)

// GCPauseMetric is the Prometheus histogram of a Go program's stop-the-world
// GC pauses (runtime/metrics /sched/pauses/total/gc:seconds, formerly
// /gc/pauses:seconds), as client_golang and VictoriaMetrics/metrics expose
// it. The heap metric's scrape reads it when the page has it.
const GCPauseMetric = "go_gc_pauses_seconds"

// Bucket is one cumulative histogram bucket: Count observations ≤ LE.
type Bucket struct {
	LE    float64
	Count float64
}

// ParseHistogram finds the cumulative buckets (name_bucket{le="..."}) of a
// Prometheus histogram in a text exposition, summed over the other labels,
// sorted by bound. ok is false when the page has no such histogram. Lines of
// it that cannot be read are skipped.
func ParseHistogram(body []byte, name string) (buckets []Bucket, ok bool) {
	prefix := name + "_bucket{"
	sums := map[float64]float64{}
	for len(body) > 0 {
		var line []byte
		line, body = cutLine(body)
		line = trimSpace(line)
		if !bytes.HasPrefix(line, []byte(prefix)) {
			continue
		}
		rest := line[len(name)+len("_bucket"):]
		end, good := skipLabels(rest)
		if !good {
			continue
		}
		le, good := labelValue(rest[1:end-1], "le")
		if !good {
			continue
		}
		bound, err := strconv.ParseFloat(le, 64)
		if le == "+Inf" {
			bound, err = math.Inf(1), nil
		}
		if err != nil {
			continue
		}
		v, good := sampleValue(rest)
		if !good || math.IsNaN(v) || v < 0 {
			continue
		}
		sums[bound] += v
	}
	if len(sums) == 0 {
		return nil, false
	}
	for le, n := range sums {
		buckets = append(buckets, Bucket{LE: le, Count: n})
	}
	slices.SortFunc(buckets, func(a, b Bucket) int { return cmpFloat(a.LE, b.LE) })
	return buckets, true
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// labelValue returns the value of label key in the inside of a label set
// (`a="x",le="0.5"`), unescaping nothing (bounds need no escapes).
func labelValue(labels []byte, key string) (string, bool) {
	for len(labels) > 0 {
		eq := bytes.IndexByte(labels, '=')
		if eq < 0 || eq+1 >= len(labels) || labels[eq+1] != '"' {
			return "", false
		}
		k := string(bytes.TrimSpace(labels[:eq]))
		v := labels[eq+2:]
		end := 0
		for end < len(v) && v[end] != '"' {
			if v[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(v) {
			return "", false
		}
		if k == key {
			return string(v[:end]), true
		}
		labels = bytes.TrimLeft(v[end+1:], ", ")
	}
	return "", false
}

// PausesDelta summarises the pauses recorded between two readings of a
// cumulative histogram of pause durations in seconds: p50 and p99
// interpolated linearly within their bucket (the lower bound of the first
// bucket is 0), Max the upper bound of the highest bucket that gained a
// pause (its lower bound when that bucket is +Inf). It returns nil when the
// buckets differ (the target restarted or changed its layout) or a count
// went down, and a zero summary with Count 0 when no pause happened.
func PausesDelta(prev, cur []Bucket) *window.Pauses {
	if len(prev) != len(cur) || len(cur) == 0 {
		return nil
	}
	d := make([]float64, len(cur))
	for i := range cur {
		if prev[i].LE != cur[i].LE {
			return nil
		}
		d[i] = cur[i].Count - prev[i].Count
		if d[i] < 0 || i > 0 && d[i] < d[i-1]-1e-9 {
			return nil
		}
	}
	total := d[len(d)-1]
	if total <= 0 {
		return &window.Pauses{}
	}
	quantile := func(q float64) float64 {
		rank := q * total
		lo, below := 0.0, 0.0
		for i, c := range d {
			if c >= rank && c > below {
				hi := cur[i].LE
				if math.IsInf(hi, 1) {
					return lo
				}
				return lo + (hi-lo)*(rank-below)/(c-below)
			}
			lo, below = cur[i].LE, c
			if math.IsInf(lo, 1) {
				break
			}
		}
		return lo
	}
	maxS := 0.0
	for i := range d {
		gained := d[i]
		if i > 0 {
			gained -= d[i-1]
		}
		if gained > 0 {
			maxS = cur[i].LE
			if math.IsInf(maxS, 1) {
				maxS = 0
				if i > 0 {
					maxS = cur[i-1].LE
				}
			}
		}
	}
	ms := func(s float64) float64 { return s * 1e3 }
	return &window.Pauses{P50Ms: ms(quantile(0.5)), P99Ms: ms(quantile(0.99)), MaxMs: ms(maxS), Count: int64(math.Round(total))}
}
