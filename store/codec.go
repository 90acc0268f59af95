package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// toNanos stores a time as Unix nanoseconds; the zero time is 0.
func toNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the inverse of toNanos; times come back in UTC.
func fromNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// nullable turns a nil pointer into SQL NULL.
func nullable[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// nullBytes stores an empty byte string as NULL; both read back as nil.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// opsFormat is the first byte of an ops blob; a new layout gets a new value.
const opsFormat = 1

// encodeOps packs a window's ops — figures and encoded histograms — into one
// blob, so a window is one row however many ops it has, and reading it back
// needs no JSON decoding of the ops (the bulk of a window's document):
//
//	byte opsFormat, uvarint count, then per op in name order:
//	uvarint len(name), name,
//	varint Requests, OK, the window.NumClasses-1 error counts, Skipped,
//	8-byte floats RPS, P50, P90, P95, P99, P999, Max,
//	uvarint len(histogram), histogram
//
// No ops gives nil (NULL). TestOpStatsCodecCoversEveryField fails when
// window.OpStats gains a field this layout does not carry.
func encodeOps(ops map[string]window.OpStats) []byte {
	if len(ops) == 0 {
		return nil
	}
	names := make([]string, 0, len(ops))
	size := 1 + binary.MaxVarintLen64
	for name, o := range ops {
		names = append(names, name)
		size += len(name) + len(o.Histogram) + 14*binary.MaxVarintLen64 + 7*8
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = append(b, opsFormat)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		o := ops[name]
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendVarint(b, o.Requests)
		b = binary.AppendVarint(b, o.OK)
		for c := window.Class(1); c < window.NumClasses; c++ {
			b = binary.AppendVarint(b, o.Errors.Get(c))
		}
		b = binary.AppendVarint(b, o.Skipped)
		l := o.LatencyMs
		for _, f := range [...]float64{o.RPS, l.P50, l.P90, l.P95, l.P99, l.P999, l.Max} {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
		}
		b = binary.AppendUvarint(b, uint64(len(o.Histogram)))
		b = append(b, o.Histogram...)
	}
	return b
}

var errCorrupt = errors.New("corrupt ops blob")

// opsReader reads an ops blob; the first error sticks.
type opsReader struct {
	b   []byte
	err error
}

func (r *opsReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *opsReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.b)
	if k <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *opsReader) float() float64 {
	if r.err != nil || len(r.b) < 8 {
		r.err = errCorrupt
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *opsReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errCorrupt
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// decodeOps is the inverse of encodeOps. Histograms share b's memory. An
// empty b gives nil.
func decodeOps(b []byte) (map[string]window.OpStats, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != opsFormat {
		return nil, fmt.Errorf("%w: unknown format %d", errCorrupt, b[0])
	}
	r := &opsReader{b: b[1:]}
	count := r.uvarint()
	ops := make(map[string]window.OpStats, min(count, 64))
	for i := uint64(0); i < count && r.err == nil; i++ {
		name := string(r.bytes())
		var o window.OpStats
		o.Requests, o.OK = r.varint(), r.varint()
		for c := window.Class(1); c < window.NumClasses; c++ {
			o.Errors.Add(c, r.varint())
		}
		o.Skipped = r.varint()
		o.RPS = r.float()
		o.LatencyMs = window.Latency{P50: r.float(), P90: r.float(), P95: r.float(), P99: r.float(), P999: r.float(), Max: r.float()}
		if h := r.bytes(); len(h) > 0 {
			o.Histogram = h
		}
		ops[name] = o
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(r.b))
	}
	return ops, nil
}

var errCorruptV1 = errors.New("corrupt op histograms")

// decodeOpHistograms sets the Histogram of each op in ops from b, the
// op_histograms column of schema version 1 (histograms only, the figures
// being in the document) and returns ops, allocated if it was nil. The
// histograms share b's memory. An op present in b but missing from ops is
// added, so no measured data is dropped.
func decodeOpHistograms(b []byte, ops map[string]window.OpStats) (map[string]window.OpStats, error) {
	if len(b) == 0 {
		return ops, nil
	}
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errCorruptV1
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return ops, errCorruptV1
	}
	if ops == nil {
		ops = make(map[string]window.OpStats, min(count, 64))
	}
	b = b[k:]
	for i := uint64(0); i < count; i++ {
		name, err := next()
		if err != nil {
			return ops, fmt.Errorf("op %d name: %w", i, err)
		}
		h, err := next()
		if err != nil {
			return ops, fmt.Errorf("op %s: %w", name, err)
		}
		o := ops[string(name)]
		o.Histogram = h
		ops[string(name)] = o
	}
	if len(b) != 0 {
		return ops, fmt.Errorf("%w: %d trailing bytes", errCorruptV1, len(b))
	}
	return ops, nil
}
