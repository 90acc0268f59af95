package driver

import (
	"math"
	"testing"
)

func TestPickerProportions(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
	}{
		{"one", []int{5}},
		{"equal", []int{1, 1, 1, 1}},
		{"parse mix", []int{40, 15, 20, 19, 4, 1, 1}},
		{"skewed", []int{1, 1000}},
		{"large weights", []int{1 << 40, 3 << 40, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newPicker(tt.weights)
			if err != nil {
				t.Fatal(err)
			}
			var total float64
			for _, w := range tt.weights {
				total += float64(w)
			}
			const n = 1_000_000
			counts := make([]int, len(tt.weights))
			r := newRNG(42)
			for range n {
				counts[p.pick(r.next())]++
			}
			for i, w := range tt.weights {
				want := float64(w) / total
				got := float64(counts[i]) / n
				// 5 standard deviations of a binomial proportion, at least 1e-5.
				tol := math.Max(5*math.Sqrt(want*(1-want)/n), 1e-5)
				if math.Abs(got-want) > tol {
					t.Errorf("item %d (weight %d): picked %.5f of the time, want %.5f ± %.5f", i, w, got, want, tol)
				}
			}
		})
	}
}

func TestPickerExact(t *testing.T) {
	// Walking every column and both halves of it gives each item exactly
	// its share when the weights divide evenly.
	p, err := newPicker([]int{1, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 3)
	const cols, steps = 3, 1 << 12
	for c := uint64(0); c < cols; c++ {
		hi := (c<<32 + cols - 1) / cols // smallest high word mapping to column c
		for s := uint64(0); s < steps; s++ {
			counts[p.pick(hi<<32|s<<20)]++
		}
	}
	total := cols * steps
	for i, w := range []int{1, 2, 5} {
		want := total * w / 8
		if d := counts[i] - want; d < -3 || d > 3 {
			t.Errorf("item %d: %d picks, want %d", i, counts[i], want)
		}
	}
}

func TestPickerErrors(t *testing.T) {
	for _, ws := range [][]int{nil, {1, 0}, {-1}} {
		if _, err := newPicker(ws); err == nil {
			t.Errorf("newPicker(%v) accepted", ws)
		}
	}
}

// BenchmarkPick picks one of 10 weighted ops, as each VU does per request.
func BenchmarkPick(b *testing.B) {
	p, err := newPicker([]int{40, 15, 20, 19, 4, 1, 1, 3, 7, 2})
	if err != nil {
		b.Fatal(err)
	}
	r := newRNG(1)
	var sink int
	b.ReportAllocs()
	for b.Loop() {
		sink += p.pick(r.next())
	}
	_ = sink
}
