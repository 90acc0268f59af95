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
