package store

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/longhaul-dev/longhaul/window"
)

func sampleOps() map[string]window.OpStats {
	return map[string]window.OpStats{
		"get": {Requests: 20, OK: 17, Errors: window.Errors{Status4xx: 1, Status5xx: 1, Refused: 1, Reset: 0, Timeout: 0, Other: 0, Unexpected: 0, Interrupted: 0},
			Skipped: 2, RPS: 6.667, LatencyMs: window.Latency{P50: 1.5, P90: 2.5, P95: 3.5, P99: 4.5, P999: 5.5, Max: 60000}, Histogram: []byte{1, 2, 3}},
		"put": {Requests: 1, Errors: window.Errors{Unexpected: 1, Interrupted: 1, Timeout: 3, Other: 4, Reset: 5}, Histogram: bytes.Repeat([]byte{9}, 300)},
		"":    {Requests: -1}, // odd but representable: no histogram, negative count
	}
}

func TestOpsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ops  map[string]window.OpStats
		want map[string]window.OpStats
	}{
		{"nil", nil, nil},
		{"empty", map[string]window.OpStats{}, nil},
		{"sample", sampleOps(), sampleOps()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeOps(encodeOps(tt.ops))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("round trip = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The ops blob carries every field of window.OpStats by hand; a new field
// must be added to encodeOps/decodeOps (or it would be lost on read).
func TestOpStatsCodecCoversEveryField(t *testing.T) {
	var names []string
	typ := reflect.TypeFor[window.OpStats]()
	for i := 0; i < typ.NumField(); i++ {
		names = append(names, typ.Field(i).Name)
	}
	want := []string{"Requests", "OK", "Errors", "Skipped", "RPS", "LatencyMs", "Histogram"}
	if !slices.Equal(names, want) {
		t.Errorf("window.OpStats fields = %v; encodeOps/decodeOps carry %v: update them (and opsFormat)", names, want)
	}
	if n := reflect.TypeFor[window.Errors]().NumField(); n != int(window.NumClasses)-1 {
		t.Errorf("window.Errors has %d fields, the codec carries NumClasses-1 = %d", n, window.NumClasses-1)
	}
	if n := reflect.TypeFor[window.Latency]().NumField(); n != 6 {
		t.Errorf("window.Latency has %d fields, the codec carries 6", n)
	}
}

func TestOpsDecodeCorrupt(t *testing.T) {
	good := encodeOps(sampleOps())
	tests := map[string][]byte{
		"unknown format": {7, 0},
		"no count":       {opsFormat},
		"short name":     {opsFormat, 1, 5, 'a'},
		"short figures":  {opsFormat, 1, 1, 'a', 2},
		"trailing bytes": append(slices.Clone(good), 0),
		"truncated":      good[:len(good)-1],
		"huge count":     {opsFormat, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for name, b := range tests {
		if _, err := decodeOps(b); err == nil {
			t.Errorf("%s: decode succeeded, want an error", name)
		}
	}
}

func FuzzDecodeOps(f *testing.F) {
	f.Add(encodeOps(sampleOps()))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := decodeOps(b)
		if err != nil {
			return
		}
		// Whatever decodes survives a round trip.
		again, err := decodeOps(encodeOps(ops))
		if err != nil {
			t.Fatalf("decode of re-encoded %x: %v", b, err)
		}
		if len(ops) == 0 {
			ops = nil
		}
		for k, o := range ops {
			if len(o.Histogram) == 0 {
				o.Histogram = nil
				ops[k] = o
			}
		}
		if !reflect.DeepEqual(again, ops) && !hasNaN(ops) {
			t.Errorf("round trip of %x = %v, want %v", b, again, ops)
		}
	})
}

func hasNaN(ops map[string]window.OpStats) bool {
	for _, o := range ops {
		l := o.LatencyMs
		for _, f := range []float64{o.RPS, l.P50, l.P90, l.P95, l.P99, l.P999, l.Max} {
			if f != f {
				return true
			}
		}
	}
	return false
}

// encodeOpHistogramsV1 writes schema 1's op_histograms column, to test that
// rows written before schema 2 still read back.
func encodeOpHistogramsV1(ops map[string]window.OpStats) []byte {
	var names []string
	for name, o := range ops {
		if len(o.Histogram) > 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	b := binary.AppendUvarint(nil, uint64(len(names)))
	for _, name := range names {
		h := ops[name].Histogram
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(h)))
		b = append(b, h...)
	}
	return b
}

func TestOpHistogramsV1(t *testing.T) {
	ops := sampleOps()
	stripped := map[string]window.OpStats{}
	for k, v := range ops {
		v.Histogram = nil
		stripped[k] = v
	}
	got, err := decodeOpHistograms(encodeOpHistogramsV1(ops), stripped)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ops) {
		t.Errorf("v1 decode = %+v, want %+v", got, ops)
	}
	for name, b := range map[string][]byte{"bad count": {0xff}, "short": {1, 5, 'a'}, "trailing": append(encodeOpHistogramsV1(ops), 0)} {
		if _, err := decodeOpHistograms(b, nil); err == nil {
			t.Errorf("v1 %s: decode succeeded, want an error", name)
		}
	}
}
