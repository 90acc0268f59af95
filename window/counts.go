package window

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// counts accumulates encoded histograms of the package's bounds into a dense
// counts array, index to index. It exists for speed: the library's Decode
// and Merge cost ~1.1 ms and ~0.6 ms per histogram and its Encode ~5 ms (a
// fresh zlib state at best compression each time), which made merging 8
// windows of 10 ops 160 ms. Here the zlib state is pooled and merging is an
// array addition. The wire format is the library's (HdrHistogram V2
// compressed, base64): what encodeCounts writes, DecodeHistogram reads.
type counts struct {
	c     []int64
	total int64
}

// V2 wire constants (hdrhistogram-go hdr_encoding.go).
const (
	v2Cookie           int32 = 0x1c849303 | 0x10
	v2CompressedCookie int32 = 0x1c849304 | 0x10
	v2HeaderSize             = 40
)

var geometry = sync.OnceValue(func() int { return len(NewHistogram().Export().Counts) })

func newCounts() *counts { return &counts{c: make([]int64, geometry())} }

var (
	zreaders sync.Pool // io.ReadCloser implementing zlib.Resetter
	zwriters = sync.Pool{New: func() any {
		w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
		return w
	}}
)

var errNotOurs = errors.New("histogram of another geometry")

// add adds the histogram b (EncodeHistogram's format) to c. Empty b adds
// nothing. A histogram of other bounds is merged through the library.
func (c *counts) add(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	err := c.addFast(b)
	if errors.Is(err, errNotOurs) {
		h, err := DecodeHistogram(b)
		if err != nil {
			return err
		}
		acc := NewHistogram()
		acc.Merge(h)
		for i, n := range acc.Export().Counts {
			c.c[i] += n
			c.total += n
		}
		return nil
	}
	return err
}

func (c *counts) addFast(b []byte) error {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(raw, b)
	if err != nil {
		return fmt.Errorf("decode histogram: %w", err)
	}
	raw = raw[:n]
	if len(raw) < 8 || int32(binary.BigEndian.Uint32(raw))&^0xf0 != v2CompressedCookie&^0xf0 {
		return fmt.Errorf("decode histogram: not a V2 compressed histogram")
	}
	size := int(binary.BigEndian.Uint32(raw[4:]))
	if size < 0 || size > len(raw)-8 {
		return fmt.Errorf("decode histogram: truncated")
	}
	var zr io.ReadCloser
	if v := zreaders.Get(); v != nil {
		zr = v.(io.ReadCloser)
		err = zr.(zlib.Resetter).Reset(bytes.NewReader(raw[8:8+size]), nil)
	} else {
		zr, err = zlib.NewReader(bytes.NewReader(raw[8 : 8+size]))
	}
	if err != nil {
		return fmt.Errorf("decode histogram: %w", err)
	}
	defer zreaders.Put(zr)
	payload, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("decode histogram: %w", err)
	}
	if len(payload) < v2HeaderSize || int32(binary.BigEndian.Uint32(payload))&^0xf0 != v2Cookie&^0xf0 {
		return fmt.Errorf("decode histogram: bad header")
	}
	h := payload[:v2HeaderSize]
	if binary.BigEndian.Uint32(h[8:]) != 0 || binary.BigEndian.Uint32(h[12:]) != SignificantDigits ||
		binary.BigEndian.Uint64(h[16:]) != MinMicros || binary.BigEndian.Uint64(h[24:]) != MaxMicros {
		return errNotOurs
	}
	body := payload[v2HeaderSize:]
	if int(binary.BigEndian.Uint32(h[4:])) != len(body) {
		return fmt.Errorf("decode histogram: payload length mismatch")
	}
	idx := 0
	for len(body) > 0 {
		u, k := binary.Uvarint(body)
		if k <= 0 {
			return fmt.Errorf("decode histogram: corrupt payload")
		}
		body = body[k:]
		v := int64(u>>1) ^ -int64(u&1) // zig-zag
		if v < 0 {
			if -v > int64(len(c.c)-idx) {
				return fmt.Errorf("decode histogram: corrupt payload")
			}
			idx += int(-v)
			continue
		}
		if idx >= len(c.c) {
			return fmt.Errorf("decode histogram: corrupt payload")
		}
		c.c[idx] += v
		c.total += v
		idx++
	}
	return nil
}

// histogram returns c as a library histogram (for its percentiles).
func (c *counts) histogram() *hdrhistogram.Histogram {
	return hdrhistogram.Import(&hdrhistogram.Snapshot{
		LowestTrackableValue: MinMicros, HighestTrackableValue: MaxMicros,
		SignificantFigures: SignificantDigits, Counts: c.c,
		IntegerToDoubleConversionRatio: 1,
	})
}

// encode writes c in EncodeHistogram's format.
func (c *counts) encode() ([]byte, error) {
	last := len(c.c) - 1
	for last >= 0 && c.c[last] == 0 {
		last--
	}
	body := make([]byte, 0, 256)
	for i := 0; i <= last; {
		if c.c[i] != 0 {
			body = binary.AppendUvarint(body, zigzag(c.c[i]))
			i++
			continue
		}
		j := i
		for j <= last && c.c[j] == 0 {
			j++
		}
		if j-i == 1 {
			body = binary.AppendUvarint(body, 0)
		} else {
			body = binary.AppendUvarint(body, zigzag(-int64(j-i)))
		}
		i = j
	}
	var plain bytes.Buffer
	plain.Grow(v2HeaderSize + len(body))
	hdr := make([]byte, v2HeaderSize)
	binary.BigEndian.PutUint32(hdr[0:], uint32(v2Cookie))
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(body)))
	binary.BigEndian.PutUint32(hdr[8:], 0)
	binary.BigEndian.PutUint32(hdr[12:], SignificantDigits)
	binary.BigEndian.PutUint64(hdr[16:], MinMicros)
	binary.BigEndian.PutUint64(hdr[24:], MaxMicros)
	binary.BigEndian.PutUint64(hdr[32:], math.Float64bits(1))
	plain.Write(hdr)
	plain.Write(body)

	var z bytes.Buffer
	zw := zwriters.Get().(*zlib.Writer)
	defer zwriters.Put(zw)
	zw.Reset(&z)
	if _, err := zw.Write(plain.Bytes()); err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode histogram: %w", err)
	}
	raw := make([]byte, 8, 8+z.Len())
	binary.BigEndian.PutUint32(raw[0:], uint32(v2CompressedCookie))
	binary.BigEndian.PutUint32(raw[4:], uint32(z.Len()))
	raw = append(raw, z.Bytes()...)
	out := make([]byte, base64.StdEncoding.EncodedLen(len(raw)))
	base64.StdEncoding.Encode(out, raw)
	return out, nil
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }
