package analysis

import (
	"math"
	"slices"
	"sync"
)

// This file holds the statistics the detectors are built on. They are exported
// because later analyses (A/B verdicts, change points) and callers charting a
// trend need the same numbers. None of them modifies its input. Inputs must not
// contain NaN; the detectors filter missing readings out before calling them.

// Median returns the median of xs: the middle value, or the mean of the two
// middle values for an even count. It returns NaN for an empty slice.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return medianInPlace(slices.Clone(xs))
}

// Quantile returns the q-quantile of xs (0 ≤ q ≤ 1) by linear interpolation
// between order statistics (Hyndman–Fan type 7, the default of R and NumPy):
// Quantile(xs, 0.5) equals Median(xs). It returns NaN for an empty slice or a
// q outside [0, 1].
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// medianInPlace returns the median of a, reordering a.
func medianInPlace(a []float64) float64 {
	n := len(a)
	if n == 0 {
		return math.NaN()
	}
	k := n / 2
	m := nth(a, k)
	if n%2 == 1 {
		return m
	}
	// nth leaves every element of a[:k] ≤ a[k], so the other middle value
	// is the largest of them.
	return (slices.Max(a[:k]) + m) / 2
}

// nth reorders a so that a[k] holds the value that would be there if a were
// sorted, every element before it is ≤ it and every one after it ≥ it, and
// returns that value. The three-way partition keeps it linear when many values
// are equal (a heap reading repeated until the next GC gives many zero slopes).
func nth(a []float64, k int) float64 {
	lo, hi := 0, len(a)
	for hi-lo > 1 {
		x, y, z := a[lo], a[lo+(hi-lo)/2], a[hi-1]
		p := max(min(x, y), min(max(x, y), z)) // median of three
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch {
			case a[i] < p:
				a[lt], a[i] = a[i], a[lt]
				lt++
				i++
			case a[i] > p:
				gt--
				a[gt], a[i] = a[i], a[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	return a[k]
}

// Line is y = Intercept + Slope·x.
type Line struct {
	Slope     float64
	Intercept float64
}

// At returns the line's value at x.
func (l Line) At(x float64) float64 { return l.Intercept + l.Slope*x }

// TheilSen fits a line robustly: the slope is the median of the slopes between
// every pair of points with distinct x (Sen 1968), the intercept the median of
// y − slope·x. Up to 29 % of the points can be outliers without moving it, which
// is why it is used for heap and throughput trends where one stalled window or
// one late GC is normal. ok is false when x has fewer than two distinct values
// or x and y differ in length. Cost: O(n²) time and memory; the detectors bin
// long series first (Options.MaxPoints).
func TheilSen(x, y []float64) (l Line, ok bool) {
	return theilSen(x, y, nil)
}

// theilSen is TheilSen with a reusable buffer for the pairwise slopes.
func theilSen(x, y []float64, buf *[]float64) (Line, bool) {
	n := len(x)
	if n != len(y) || n < 2 {
		return Line{}, false
	}
	var slopes []float64
	if buf != nil {
		slopes = (*buf)[:0]
	} else {
		slopes = make([]float64, 0, n*(n-1)/2)
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if dx := x[j] - x[i]; dx != 0 {
				slopes = append(slopes, (y[j]-y[i])/dx)
			}
		}
	}
	if buf != nil {
		*buf = slopes
	}
	if len(slopes) == 0 {
		return Line{}, false
	}
	slope := medianInPlace(slopes)
	res := slopes[:0]
	for i := range x {
		res = append(res, y[i]-slope*x[i])
	}
	return Line{Slope: slope, Intercept: medianInPlace(res)}, true
}

// MannKendallTest is the result of the Mann–Kendall test for a monotonic trend
// in a series taken in time order.
type MannKendallTest struct {
	N int
	// S is the number of later-higher pairs minus later-lower pairs.
	S float64
	// VarS is the variance of S under "no trend", corrected for ties.
	VarS float64
	// Z is the continuity-corrected normal score (S − sign(S)) / √VarS.
	Z float64
	// Tau is Kendall's tau-a: S over the number of pairs, in [−1, 1].
	Tau float64
	// PUp is the one-sided p-value for an increasing trend, P(S ≥ observed),
	// and PDown for a decreasing one, P(S ≤ observed).
	PUp, PDown float64
	// Exact says the p-values come from the exact permutation distribution
	// (no ties and N ≤ 40) rather than the normal approximation.
	Exact bool
	// Correction is the factor VarS was multiplied by for serial correlation
	// (MannKendallHamedRao); 1 when there was none.
	Correction float64
}

// P returns the two-sided p-value: twice the smaller one-sided one, at most 1.
func (m MannKendallTest) P() float64 {
	if m.N < 2 {
		return 1
	}
	return math.Min(1, 2*math.Min(m.PUp, m.PDown))
}

// mkExactMaxN is the largest series for which the exact distribution of S is
// used. Beyond it the normal approximation is accurate to well under 1 % of the
// p-value's size in the range that matters (p > 1e-6), and the exact table would
// cost O(n³) to build.
const mkExactMaxN = 40

// MannKendall tests y (in time order) for a monotonic trend. Without ties and
// for N ≤ 40 the p-values are exact (the distribution of S is that of the
// number of inversions of a random permutation); otherwise they use the normal
// approximation with the tie-corrected variance and a continuity correction
// (Kendall 1975; Gilbert 1987, §16.4). N < 2 gives p-values of 1.
func MannKendall(y []float64) MannKendallTest {
	return mannKendall(y, nil)
}

func mannKendall(y []float64, buf *[]float64) MannKendallTest {
	n := len(y)
	r := MannKendallTest{N: n, PUp: 1, PDown: 1, Correction: 1}
	if n < 2 {
		return r
	}
	var s int
	for i := 0; i < n; i++ {
		yi := y[i]
		for j := i + 1; j < n; j++ {
			switch {
			case y[j] > yi:
				s++
			case y[j] < yi:
				s--
			}
		}
	}
	var sorted []float64
	if buf != nil {
		sorted = append((*buf)[:0], y...)
		*buf = sorted
	} else {
		sorted = slices.Clone(y)
	}
	slices.Sort(sorted)
	nf := float64(n)
	v := nf * (nf - 1) * (2*nf + 5)
	ties := false
	for i := 0; i < n; {
		j := i + 1
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		if t := float64(j - i); t > 1 {
			ties = true
			v -= t * (t - 1) * (2*t + 5)
		}
		i = j
	}
	r.S = float64(s)
	r.VarS = v / 18
	pairs := n * (n - 1) / 2
	r.Tau = r.S / float64(pairs)
	if r.VarS <= 0 { // every value equal
		return r
	}
	sd := math.Sqrt(r.VarS)
	switch {
	case s > 0:
		r.Z = (r.S - 1) / sd
	case s < 0:
		r.Z = (r.S + 1) / sd
	}
	if !ties && n <= mkExactMaxN {
		// S = pairs − 2·inversions, so P(S ≥ s) = P(inversions ≤ (pairs − s)/2).
		cdf := inversionCDF(n)
		r.PUp = cdf[(pairs-s)/2]
		r.PDown = cdf[(pairs+s)/2]
		r.Exact = true
		return r
	}
	// S moves in steps of 2 without ties, so ±1 is the half-step correction.
	r.PUp = normalSF((r.S - 1) / sd)
	r.PDown = normalCDF((r.S + 1) / sd)
	return r
}

// hamedRaoMinN is the shortest series whose autocorrelation is estimated;
// below it the estimates are too noisy to correct anything.
const hamedRaoMinN = 10

// MannKendallHamedRao is MannKendall with the variance of S corrected for
// serial correlation (Hamed & Rao 1998, "A modified Mann–Kendall trend test
// for autocorrelated data", J. Hydrology 204): the series is detrended with
// Sen's slope, the autocorrelations ρ_k of the ranks of the residuals that are
// significant at 5 % (|ρ_k| > 1.96/√n) give the factor
// n/n* = 1 + 2/(n(n−1)(n−2)) · Σ_k (n−k)(n−k−1)(n−k−2)·ρ_k, and VarS is
// multiplied by it. Consecutive windows of a soak are not independent (a GC
// that ran late, a noisy neighbour for half a minute), and plain Mann–Kendall
// then finds trends in the wander. The factor is never taken below 1, so the
// test is never more liberal than the plain one; with a factor above 1 the
// p-values come from the normal approximation. Series shorter than 10 are
// not corrected.
func MannKendallHamedRao(y []float64) MannKendallTest {
	var buf []float64
	return mannKendallHamedRao(y, &buf, &buf)
}

func mannKendallHamedRao(y []float64, sortBuf, pairBuf *[]float64) MannKendallTest {
	r := mannKendall(y, sortBuf)
	n := len(y)
	if n < hamedRaoMinN || r.VarS <= 0 {
		return r
	}
	idx := make([]float64, n)
	for i := range idx {
		idx[i] = float64(i + 1)
	}
	line, ok := theilSen(idx, y, pairBuf)
	if !ok {
		return r
	}
	resid := make([]float64, n)
	for i := range y {
		resid[i] = y[i] - line.Slope*idx[i]
	}
	rk := ranks(resid)
	var mean float64
	for _, v := range rk {
		mean += v
	}
	mean /= float64(n)
	var den float64
	for i := range rk {
		rk[i] -= mean
		den += rk[i] * rk[i]
	}
	if den == 0 {
		return r
	}
	nf := float64(n)
	bound := 1.959963984540054 / math.Sqrt(nf)
	var sum float64
	for k := 1; k < n; k++ {
		var num float64
		for i := 0; i+k < n; i++ {
			num += rk[i] * rk[i+k]
		}
		rho := num / den
		if math.Abs(rho) > bound {
			kf := float64(k)
			sum += (nf - kf) * (nf - kf - 1) * (nf - kf - 2) * rho
		}
	}
	f := 1 + 2/(nf*(nf-1)*(nf-2))*sum
	if f <= 1 {
		return r
	}
	r.Correction = f
	r.VarS *= f
	sd := math.Sqrt(r.VarS)
	switch {
	case r.S > 0:
		r.Z = (r.S - 1) / sd
	case r.S < 0:
		r.Z = (r.S + 1) / sd
	}
	r.PUp = normalSF((r.S - 1) / sd)
	r.PDown = normalCDF((r.S + 1) / sd)
	r.Exact = false
	return r
}

var (
	inversionOnce sync.Once
	inversionCDFs [mkExactMaxN + 1][]float64
)

// inversionCDF returns c with c[k] = P(a random permutation of n items has at
// most k inversions), for 2 ≤ n ≤ mkExactMaxN. The tables are built once, on
// first use, by the recurrence P_j(k) = (1/j)·Σ_{m<j} P_{j−1}(k−m).
func inversionCDF(n int) []float64 {
	inversionOnce.Do(func() {
		pmf := []float64{1} // n = 1: no inversions
		for j := 2; j <= mkExactMaxN; j++ {
			next := make([]float64, len(pmf)+j-1)
			// Sliding window sum over pmf[k−j+1 .. k].
			var win float64
			for k := range next {
				if k < len(pmf) {
					win += pmf[k]
				}
				if k-j >= 0 && k-j < len(pmf) {
					win -= pmf[k-j]
				}
				next[k] = win / float64(j)
			}
			pmf = next
			cdf := make([]float64, len(pmf))
			var acc float64
			for k, p := range pmf {
				acc += p
				cdf[k] = math.Min(acc, 1)
			}
			inversionCDFs[j] = cdf
		}
	})
	return inversionCDFs[n]
}

// Spearman returns Spearman's rank correlation of x and y (ties get their
// average rank), in [−1, 1]. It returns NaN when the lengths differ, n < 3, or
// either side is constant.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 3 {
		return math.NaN()
	}
	return pearson(ranks(x), ranks(y))
}

// ranks returns the 1-based ranks of xs, ties sharing their average rank.
func ranks(xs []float64) []float64 {
	n := len(xs)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	r := make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && xs[idx[j]] == xs[idx[i]] {
			j++
		}
		avg := float64(i+j+1) / 2 // mean of ranks i+1 .. j
		for k := i; k < j; k++ {
			r[idx[k]] = avg
		}
		i = j
	}
	return r
}

// pearson returns the Pearson correlation of x and y, NaN if either is constant.
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= n
	my /= n
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// normalCDF is Φ(z), the standard normal distribution function.
func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// normalSF is 1 − Φ(z), computed without cancellation for large z.
func normalSF(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }
