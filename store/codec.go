package store

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// encodeOpHistograms packs the ops' encoded histograms into one blob, so a
// window is one row however many ops it has:
//
//	uvarint count, then per op in name order: uvarint len(name), name,
//	uvarint len(histogram), histogram
//
// Ops without a histogram are left out. No ops gives nil (NULL).
func encodeOpHistograms(ops map[string]window.OpStats) []byte {
	names := make([]string, 0, len(ops))
	size := binary.MaxVarintLen64
	for name, o := range ops {
		if len(o.Histogram) == 0 {
			continue
		}
		names = append(names, name)
		size += 2*binary.MaxVarintLen64 + len(name) + len(o.Histogram)
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		h := ops[name].Histogram
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(h)))
		b = append(b, h...)
	}
	return b
}

var errCorrupt = errors.New("corrupt op histograms")

// decodeOpHistograms sets the Histogram of each op in ops from b (the output
// of encodeOpHistograms) and returns ops, allocated if it was nil. The
// histograms share b's memory. An op present in b but missing from ops is
// added, so no measured data is dropped.
func decodeOpHistograms(b []byte, ops map[string]window.OpStats) (map[string]window.OpStats, error) {
	if len(b) == 0 {
		return ops, nil
	}
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errCorrupt
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return ops, errCorrupt
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
		return ops, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(b))
	}
	return ops, nil
}
