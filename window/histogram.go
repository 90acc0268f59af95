package window

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: latencies are recorded in microseconds from 1 µs to 60 s
// with 3 significant digits. Values above the top are clamped to it, so a
// stalled request still counts (as 60 s) instead of vanishing.
const (
	MinMicros         = 1
	MaxMicros         = 60_000_000
	SignificantDigits = 3
)

// NewHistogram returns an empty latency histogram with the package's bounds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(MinMicros, MaxMicros, SignificantDigits)
}

// Record adds one latency in microseconds to h, clamped to [MinMicros, MaxMicros].
func Record(h *hdrhistogram.Histogram, micros int64) {
	if micros < MinMicros {
		micros = MinMicros
	} else if micros > MaxMicros {
		micros = MaxMicros
	}
	_ = h.RecordValue(micros) // cannot fail inside the bounds
}

// EncodeHistogram returns h in the HdrHistogram V2 compressed format
// (interoperable with the Java/C tools). An empty histogram encodes too.
func EncodeHistogram(h *hdrhistogram.Histogram) ([]byte, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	return b, nil
}

// DecodeHistogram is the inverse of EncodeHistogram. A nil or empty input
// decodes to an empty histogram.
func DecodeHistogram(b []byte) (*hdrhistogram.Histogram, error) {
	if len(b) == 0 {
		return NewHistogram(), nil
	}
	h, err := hdrhistogram.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// LatencyOf reads the standard percentiles (in ms) from a microsecond histogram.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 95, 99, 99.9})
	return Latency{
		P50:  ms(v[0]),
		P90:  ms(v[1]),
		P95:  ms(v[2]),
		P99:  ms(v[3]),
		P999: ms(v[4]),
		Max:  ms(h.Max()),
	}
}

// CurvePoint is one point of a latency distribution: the latency at or
// below which Percentile per cent of the requests completed.
type CurvePoint struct {
	Percentile float64 `json:"percentile"`
	LatencyMs  float64 `json:"latency_ms"`
}

// curvePercentiles are the points of the percentile plot HdrHistogram's own
// tools draw (x = 1/(1−q) on a log scale): dense in the tail, where a soak's
// story is, up to the five nines.
var curvePercentiles = []float64{0, 10, 20, 30, 40, 50, 55, 60, 65, 70, 75, 77.5, 80, 82.5, 85, 87.5,
	90, 91.25, 92.5, 93.75, 95, 96, 96.875, 97.5, 98, 98.4375, 98.75, 99, 99.2, 99.375, 99.5, 99.6,
	99.6875, 99.75, 99.8, 99.84375, 99.875, 99.9, 99.92, 99.9375, 99.95, 99.96, 99.96875, 99.975,
	99.98, 99.984375, 99.9875, 99.99, 99.992, 99.99375, 99.995, 99.996, 99.996875, 99.9975,
	99.998, 99.9984375, 99.99875, 99.999}

// Curve returns h's latency distribution as HdrHistogram percentile-plot
// points, in milliseconds, ending with the maximum at 100. Percentiles
// beyond what the sample can resolve (the 99.99th of 1,000 requests) are
// left out: the curve stops at the last one with at least one request
// beyond it. An empty histogram has no curve.
func Curve(h *hdrhistogram.Histogram) []CurvePoint {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	var ps []float64
	for _, p := range curvePercentiles {
		if float64(n)*(100-p)/100 < 1 {
			break
		}
		ps = append(ps, p)
	}
	vs := h.ValueAtPercentilesSlice(ps)
	out := make([]CurvePoint, 0, len(ps)+1)
	for i, p := range ps {
		out = append(out, CurvePoint{Percentile: p, LatencyMs: float64(vs[i]) / 1000})
	}
	return append(out, CurvePoint{Percentile: 100, LatencyMs: float64(h.Max()) / 1000})
}
