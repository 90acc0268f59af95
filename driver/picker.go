package driver

import (
	"fmt"
	"math/bits"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// picker picks an index at random in proportion to integer weights, in
// constant time and without allocating (Walker's alias method, built with
// Vose's algorithm in exact integer arithmetic). A picker is immutable after
// newPicker and safe for concurrent use; the randomness comes from the caller.
type picker struct {
	n      uint64
	thresh []uint32 // column i keeps i when the low 32 random bits are below thresh[i]
	alias  []uint32
}

// opPicker builds a picker over plan's ops by their weights.
func opPicker(plan *scenarios.Plan) (*picker, error) {
	weights := make([]int, len(plan.Ops))
	for i, op := range plan.Ops {
		weights[i] = op.Weight
	}
	return newPicker(weights)
}

// newPicker builds a picker for weights (all > 0).
func newPicker(weights []int) (*picker, error) {
	n := len(weights)
	if n == 0 {
		return nil, fmt.Errorf("picker: no weights")
	}
	var total uint64
	for i, w := range weights {
		if w <= 0 {
			return nil, fmt.Errorf("picker: weight %d of item %d is not positive", w, i)
		}
		total += uint64(w)
	}
	p := &picker{n: uint64(n), thresh: make([]uint32, n), alias: make([]uint32, n)}
	// Each column holds `total` units; item i brings w_i*n units.
	scaled := make([]uint64, n)
	var small, large []int
	for i, w := range weights {
		scaled[i] = uint64(w) * uint64(n)
		p.alias[i] = uint32(i)
		if scaled[i] < total {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		p.thresh[s] = fraction32(scaled[s], total)
		p.alias[s] = uint32(l)
		scaled[l] -= total - scaled[s]
		if scaled[l] < total {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What remains holds exactly `total` units (up to rounding): keep always.
	for _, i := range append(small, large...) {
		p.thresh[i] = 1<<32 - 1
		p.alias[i] = uint32(i)
	}
	return p, nil
}

// fraction32 returns floor(a / b * 2^32) for a < b.
func fraction32(a, b uint64) uint32 {
	hi, lo := bits.Mul64(a, 1<<32)
	q, _ := bits.Div64(hi, lo, b)
	return uint32(q)
}

// pick maps 64 uniformly random bits to an index.
func (p *picker) pick(r uint64) int {
	i := ((r >> 32) * p.n) >> 32
	if uint32(r) < p.thresh[i] {
		return int(i)
	}
	return int(p.alias[i])
}

// rng is a wyrand generator: fast, small, good enough to pick ops. Not
// safe for concurrent use; each VU has its own.
type rng struct{ state uint64 }

func newRNG(seed uint64) rng { return rng{state: seed ^ 0x9e3779b97f4a7c15} }

func (r *rng) next() uint64 {
	r.state += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.state, r.state^0xe7037ed1a0b428db)
	return hi ^ lo
}
