package store

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/longhaul-dev/longhaul/window"
)

func TestOpHistogramsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ops  map[string]window.OpStats
		want map[string]window.OpStats // after decoding into ops without histograms
	}{
		{"nil", nil, nil},
		{"no histograms", map[string]window.OpStats{"a": {Requests: 1}}, map[string]window.OpStats{"a": {Requests: 1}}},
		{"two", map[string]window.OpStats{
			"get": {Requests: 2, Histogram: []byte{1, 2, 3}},
			"put": {Requests: 1, Histogram: bytes.Repeat([]byte{9}, 300)},
			"":    {Histogram: []byte{7}},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeOpHistograms(tt.ops)
			stripped := map[string]window.OpStats{}
			for k, v := range tt.ops {
				v.Histogram = nil
				stripped[k] = v
			}
			if tt.ops == nil {
				stripped = nil
			}
			got, err := decodeOpHistograms(b, stripped)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = tt.ops
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip = %+v, want %+v", got, want)
			}
		})
	}
}

// An op histogram whose op is missing from the JSON document is kept.
func TestOpHistogramsDecodeAddsMissingOp(t *testing.T) {
	b := encodeOpHistograms(map[string]window.OpStats{"get": {Histogram: []byte{1}}})
	got, err := decodeOpHistograms(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]window.OpStats{"get": {Histogram: []byte{1}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestOpHistogramsDecodeCorrupt(t *testing.T) {
	good := encodeOpHistograms(map[string]window.OpStats{"get": {Histogram: []byte{1, 2, 3}}})
	tests := map[string][]byte{
		"bad count":      {0xff},
		"short name":     {1, 5, 'a'},
		"short histo":    {1, 1, 'a', 9, 1},
		"trailing bytes": append(append([]byte{}, good...), 0),
		"truncated":      good[:len(good)-1],
		"huge count":     {0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for name, b := range tests {
		if _, err := decodeOpHistograms(b, nil); err == nil {
			t.Errorf("%s: decode succeeded, want an error", name)
		}
	}
}

func FuzzDecodeOpHistograms(f *testing.F) {
	f.Add(encodeOpHistograms(map[string]window.OpStats{"get": {Histogram: []byte{1, 2, 3}}, "put": {Histogram: []byte{4}}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := decodeOpHistograms(b, nil)
		if err != nil {
			return
		}
		// Whatever decodes survives a round trip (ops with empty histograms
		// are dropped by the encoder, as they carry nothing).
		for k, o := range ops {
			if len(o.Histogram) == 0 {
				delete(ops, k)
			}
		}
		again, err := decodeOpHistograms(encodeOpHistograms(ops), nil)
		if err != nil {
			t.Fatalf("decode of re-encoded %x: %v", b, err)
		}
		if len(ops) == 0 {
			ops = nil
		}
		if !reflect.DeepEqual(again, ops) {
			t.Errorf("round trip of %x = %v, want %v", b, again, ops)
		}
	})
}
