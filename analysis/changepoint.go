package analysis

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// This file finds change points in a series of runs (one value per nightly
// soak: CPU µs per request, p99, throughput ...), the way Apache Otava
// (formerly Hunter, Fleming et al. 2023, "Hunter: Using Change Point
// Detection to Hunt for Performance Regressions") does:
//
//  1. Split. E-divisive means (Matteson & James 2014) proposes, inside a
//     window of the series, the split τ (and the end κ of the segment after
//     it) that maximises the energy divergence between Z[s:τ] and Z[τ:κ].
//     Student's t-test between the two segments the split leaves in its
//     interval accepts or rejects it (instead of Matteson & James's
//     permutation test: deterministic, and fast enough to run at every
//     new run). Accepted splits divide the interval and the search goes on
//     in the pieces until a proposal is rejected. The series is covered by
//     overlapping windows (50 runs, moving by 25, or to the last point
//     found), because a point far from a window's edges is found better
//     than in one pass over a long series. This pass uses a relaxed
//     threshold (10 × MaxPValue): its points are "weak".
//  2. Merge. The weak points are tested again, each against the segments
//     between its neighbours; the weakest one (the highest p-value above
//     MaxPValue, else the smallest change below MinChange, else a side
//     shorter than MinRuns) is removed and its neighbours retested, until
//     every point left passes all three.
//
// Adding a run changes only the windows that reach the end of the series,
// so ChangePointSeries keeps the weak points of the complete windows and
// redoes the last ones: the result is exactly that of FindChangePoints on
// the whole series.

// Change-point defaults, with their reasons.
const (
	// DefaultChangePointMaxP: a run-to-run change must be this unlikely
	// under "no change". Across a year of nightly runs and a dozen metrics
	// a looser threshold would cry wolf every few weeks (Otava's default).
	DefaultChangePointMaxP = 0.001
	// DefaultChangePointMinChange: smaller shifts than 5 % are real but
	// rarely worth a person's morning: soak-to-soak noise on a shared
	// machine is of that order.
	DefaultChangePointMinChange = 0.05
	// DefaultChangePointMinRuns on each side: with fewer, the t-test's
	// variance estimate is too poor to trust, and one odd night could
	// pass for a step.
	DefaultChangePointMinRuns = 4
	// DefaultChangePointWindow is the split step's window (Otava's).
	DefaultChangePointWindow = 50
)

// ChangePointOptions tune FindChangePoints. Zero fields take the defaults.
type ChangePointOptions struct {
	// MaxPValue is the two-sided p-value of the t-test between the segments
	// on either side of a point below which it is reported.
	MaxPValue float64
	// MinChange is the smallest relative change of the mean, in either
	// direction (max of |after/before − 1| and |before/after − 1|), that
	// is reported.
	MinChange float64
	// MinRuns is the fewest runs a segment on either side of a point must
	// have; a step shows only once MinRuns runs after it exist.
	MinRuns int
	// Window is the length of the split step's sliding window (≥ 2 ×
	// MinRuns).
	Window int
}

func (o ChangePointOptions) withDefaults() ChangePointOptions {
	def(&o.MaxPValue, DefaultChangePointMaxP)
	def(&o.MinChange, DefaultChangePointMinChange)
	def(&o.MinRuns, DefaultChangePointMinRuns)
	def(&o.Window, DefaultChangePointWindow)
	o.MinRuns = max(o.MinRuns, 1)
	o.Window = max(o.Window, 2*o.MinRuns, 4)
	return o
}

// firstPassP is the relaxed threshold of the split step (Otava's rule).
func (o ChangePointOptions) firstPassP() float64 {
	switch {
	case o.MaxPValue < 0.05:
		return 10 * o.MaxPValue
	case o.MaxPValue < 0.5:
		return 2 * o.MaxPValue
	}
	return o.MaxPValue
}

// ChangePoint is a point of a series where its mean changes: Index is the
// first value of the new segment. Before and After are the means of the
// segments on either side (up to the neighbouring change points), StdBefore
// and StdAfter their sample standard deviations, NBefore and NAfter their
// lengths. Change is After/Before − 1; PValue the two-sided Student's t-test
// (pooled variance) between the segments.
type ChangePoint struct {
	Index     int     `json:"index"`
	Before    float64 `json:"before"`
	After     float64 `json:"after"`
	StdBefore float64 `json:"std_before"`
	StdAfter  float64 `json:"std_after"`
	NBefore   int     `json:"n_before"`
	NAfter    int     `json:"n_after"`
	Change    float64 `json:"change"`
	PValue    float64 `json:"p_value"`
}

// Magnitude is the larger of |After/Before − 1| and |Before/After − 1|: a
// halving and a doubling weigh the same.
func (c ChangePoint) Magnitude() float64 {
	m := 0.0
	if c.Before != 0 {
		m = math.Abs(c.After/c.Before - 1)
	}
	if c.After != 0 {
		m = math.Max(m, math.Abs(c.Before/c.After-1))
	}
	return m
}

// FindChangePoints returns the change points of xs (in time order), in
// index order. xs must not contain NaN (leave runs without the metric out).
// It costs O(n · Window²).
func FindChangePoints(xs []float64, o ChangePointOptions) []ChangePoint {
	s := NewChangePointSeries(o)
	s.Add(xs...)
	return s.ChangePoints()
}

// ChangePointSeries is a series that grows one run at a time, with its
// change points kept current: Add redoes only the split windows that reach
// the end of the series, so a nightly history costs O(Window²) per run, not
// O(n · Window²). ChangePoints equals FindChangePoints of the whole series.
// The zero value is not usable; a ChangePointSeries is not safe for
// concurrent use.
type ChangePointSeries struct {
	o  ChangePointOptions
	xs []float64
	// done are the split windows that lie wholly inside xs: appending
	// cannot change what they found.
	done []splitWindow
}

// splitWindow is one window of the split step and the weak points it found.
type splitWindow struct {
	start, end int
	points     []int
}

// NewChangePointSeries returns an empty series.
func NewChangePointSeries(o ChangePointOptions) *ChangePointSeries {
	return &ChangePointSeries{o: o.withDefaults()}
}

// Len is the number of values added.
func (s *ChangePointSeries) Len() int { return len(s.xs) }

// Add appends values (NaN is not allowed) and updates the complete windows.
func (s *ChangePointSeries) Add(xs ...float64) {
	s.xs = append(s.xs, xs...)
	n, w := len(s.xs), s.o.Window
	start := 0
	if k := len(s.done); k > 0 {
		start = s.nextStart(s.done[k-1])
	}
	for start+w <= n {
		sw := splitWindow{start: start, end: start + w, points: s.divide(start, start+w)}
		s.done = append(s.done, sw)
		start = s.nextStart(sw)
	}
}

// nextStart is where the window after sw starts: half a window on, or at
// its last point when that is further.
func (s *ChangePointSeries) nextStart(sw splitWindow) int {
	next := sw.start + s.o.Window/2
	if k := len(sw.points); k > 0 {
		next = max(next, sw.points[k-1])
	}
	return next
}

// weak returns the split step's points over the whole series, sorted.
func (s *ChangePointSeries) weak() []int {
	var pts []int
	for _, sw := range s.done {
		pts = append(pts, sw.points...)
	}
	n := len(s.xs)
	start := 0
	if k := len(s.done); k > 0 {
		start = s.nextStart(s.done[k-1])
	}
	// The windows that reach the end of the series, redone at every call.
	for start < n {
		end := min(start+s.o.Window, n)
		found := s.divide(start, end)
		pts = append(pts, found...)
		next := start + s.o.Window/2
		if k := len(found); k > 0 {
			next = max(next, found[k-1])
		}
		start = next
	}
	slices.Sort(pts)
	return slices.Compact(pts)
}

// ChangePoints returns the change points of the series so far, in index order.
func (s *ChangePointSeries) ChangePoints() []ChangePoint {
	return s.merge(s.weak())
}

// divide runs E-divisive with t-test acceptance on xs[start:end] and
// returns the accepted split indexes (absolute), sorted.
func (s *ChangePointSeries) divide(start, end int) []int {
	z := s.xs[start:end]
	q := newEnergy(z)
	bounds := []int{0, len(z)} // sorted; the intervals are between neighbours
	for {
		bestQ, bestTau, bestI := math.Inf(-1), -1, -1
		for i := 0; i+1 < len(bounds); i++ {
			if tau, qv, ok := q.best(bounds[i], bounds[i+1]); ok && qv > bestQ {
				bestQ, bestTau, bestI = qv, tau, i
			}
		}
		if bestTau < 0 {
			break
		}
		_, p := tTest(z[bounds[bestI]:bestTau], z[bestTau:bounds[bestI+1]])
		if !(p <= s.o.firstPassP()) {
			break
		}
		bounds = slices.Insert(bounds, bestI+1, bestTau)
	}
	out := make([]int, 0, len(bounds)-2)
	for _, b := range bounds[1 : len(bounds)-1] {
		out = append(out, start+b)
	}
	return out
}

// merge retests the weak points against their neighbours and drops the
// weakest until every remaining one passes MaxPValue, MinChange and MinRuns.
func (s *ChangePointSeries) merge(pts []int) []ChangePoint {
	cps := make([]ChangePoint, len(pts))
	for i := range pts {
		cps[i] = s.stats(pts, i)
	}
	for len(cps) > 0 {
		weakest := -1
		// The highest p-value, if it fails.
		for i, c := range cps {
			if !(c.PValue < s.o.MaxPValue) && (weakest < 0 || c.PValue > cps[weakest].PValue || math.IsNaN(c.PValue)) {
				weakest = i
			}
		}
		// Else the smallest change, if it fails.
		if weakest < 0 {
			for i, c := range cps {
				if !(c.Magnitude() > s.o.MinChange) && (weakest < 0 || c.Magnitude() < cps[weakest].Magnitude()) {
					weakest = i
				}
			}
		}
		// Else the shortest side, if it is too short.
		if weakest < 0 {
			for i, c := range cps {
				if short := min(c.NBefore, c.NAfter); short < s.o.MinRuns && (weakest < 0 || short < min(cps[weakest].NBefore, cps[weakest].NAfter)) {
					weakest = i
				}
			}
		}
		if weakest < 0 {
			break
		}
		cps = slices.Delete(cps, weakest, weakest+1)
		pts = slices.Delete(pts, weakest, weakest+1)
		for _, i := range []int{weakest - 1, weakest} {
			if i >= 0 && i < len(cps) {
				cps[i] = s.stats(pts, i)
			}
		}
	}
	return cps
}

// stats describes point pts[i] against the segments up to its neighbours.
func (s *ChangePointSeries) stats(pts []int, i int) ChangePoint {
	lo, hi := 0, len(s.xs)
	if i > 0 {
		lo = pts[i-1]
	}
	if i+1 < len(pts) {
		hi = pts[i+1]
	}
	idx := pts[i]
	left, right := s.xs[lo:idx], s.xs[idx:hi]
	c := ChangePoint{Index: idx, NBefore: len(left), NAfter: len(right)}
	c.Before, c.StdBefore = meanStd(left)
	c.After, c.StdAfter = meanStd(right)
	if c.Before != 0 {
		c.Change = c.After/c.Before - 1
	}
	_, c.PValue = tTest(left, right)
	return c
}

// meanStd returns the mean and the sample standard deviation (0 for one value).
func meanStd(xs []float64) (mean, sd float64) {
	n := float64(len(xs))
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1))
}

// tTest is Student's two-sample t-test with pooled variance: the statistic
// and its two-sided p-value. Two constant segments with different means
// give p = 0; fewer than three values in all give p = 1.
func tTest(a, b []float64) (t, p float64) {
	na, nb := float64(len(a)), float64(len(b))
	if na < 1 || nb < 1 || na+nb < 3 {
		return 0, 1
	}
	ma, sa := meanStd(a)
	mb, sb := meanStd(b)
	df := na + nb - 2
	pooled := ((na-1)*sa*sa + (nb-1)*sb*sb) / df
	se := math.Sqrt(pooled * (1/na + 1/nb))
	if se == 0 {
		if ma == mb {
			return 0, 1
		}
		return math.Copysign(math.Inf(1), mb-ma), 0
	}
	t = (mb - ma) / se
	p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
	return t, math.Min(p, 1)
}

// energy holds, for one window z, the sums of |z_i − z_j| over every
// contiguous run of indexes, so the E-divisive divergence of any two
// adjacent segments costs O(1).
type energy struct {
	n int
	// w[a*(n+1)+b] = Σ_{a ≤ i < j < b} |z_i − z_j|.
	w []float64
}

func newEnergy(z []float64) *energy {
	n := len(z)
	e := &energy{n: n, w: make([]float64, (n+1)*(n+1))}
	// W(a, b) = W(a+1, b) + Σ_{a < j < b} |z_a − z_j|, filled from a = n−1 down.
	for a := n - 1; a >= 0; a-- {
		row := 0.0
		for b := a + 1; b <= n; b++ {
			if b-1 > a {
				row += math.Abs(z[a] - z[b-1])
			}
			e.w[a*(n+1)+b] = e.w[(a+1)*(n+1)+b] + row
		}
	}
	return e
}

func (e *energy) within(a, b int) float64 { return e.w[a*(e.n+1)+b] }

// q is Matteson & James's divergence Q̂ of X = z[s:τ] and Y = z[τ:κ] (α = 1):
// 2/(n+m)·Σ|X−Y| − 2m/((n+m)(n−1))·Σ_{X pairs} − 2n/((n+m)(m−1))·Σ_{Y pairs},
// a within term dropping out for a one-value segment.
func (e *energy) q(s, tau, kappa int) float64 {
	n, m := float64(tau-s), float64(kappa-tau)
	wx, wy := e.within(s, tau), e.within(tau, kappa)
	cross := e.within(s, kappa) - wx - wy
	v := 2 / (n + m) * cross
	if n > 1 {
		v -= 2 * m / ((n + m) * (n - 1)) * wx
	}
	if m > 1 {
		v -= 2 * n / ((n + m) * (m - 1)) * wy
	}
	return v
}

// best returns the τ in (lo, hi) whose best κ ∈ (τ, hi] maximises Q̂ over
// the interval [lo, hi), and that maximum; ok is false for an interval of
// fewer than two values. Ties go to the earliest τ, then the earliest κ.
func (e *energy) best(lo, hi int) (tau int, qv float64, ok bool) {
	if hi-lo < 2 {
		return 0, 0, false
	}
	qv = math.Inf(-1)
	for t := lo + 1; t < hi; t++ {
		for k := t + 1; k <= hi; k++ {
			if v := e.q(lo, t, k); v > qv {
				tau, qv = t, v
			}
		}
	}
	return tau, qv, true
}
