package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

func TestTTestMatchesClosedForm(t *testing.T) {
	// df = 2 (four values): P(|T| > t) = 1 − t/√(2 + t²).
	a, b := []float64{1, 2}, []float64{4, 6}
	// means 1.5 and 5, pooled variance (0.5 + 2)/2 = 1.25, se = √(1.25·1)
	wantT := 3.5 / math.Sqrt(1.25)
	wantP := 1 - wantT/math.Sqrt(2+wantT*wantT)
	gotT, gotP := tTest(a, b)
	if math.Abs(gotT-wantT) > 1e-12 || math.Abs(gotP-wantP) > 1e-9 {
		t.Errorf("tTest = %v, %v; want %v, %v", gotT, gotP, wantT, wantP)
	}
	// df = 1 (three values): Cauchy, P(|T| > t) = 1 − (2/π)·atan(t).
	a, b = []float64{1, 3}, []float64{5}
	wantT = 3 / math.Sqrt(2*(0.5+1))
	wantP = 1 - 2/math.Pi*math.Atan(wantT)
	gotT, gotP = tTest(a, b)
	if math.Abs(gotT-wantT) > 1e-12 || math.Abs(gotP-wantP) > 1e-9 {
		t.Errorf("tTest = %v, %v; want %v, %v", gotT, gotP, wantT, wantP)
	}
	if _, p := tTest([]float64{2, 2, 2}, []float64{3, 3}); p != 0 {
		t.Errorf("two different constants: p = %v, want 0", p)
	}
	if _, p := tTest([]float64{2, 2}, []float64{2, 2}); p != 1 {
		t.Errorf("equal constants: p = %v, want 1", p)
	}
	if _, p := tTest([]float64{2}, []float64{3}); p != 1 {
		t.Errorf("two values: p = %v, want 1", p)
	}
}

// qDirect is Q̂ written straight from Matteson & James's definition, to
// check the prefix-sum version against.
func qDirect(z []float64, s, tau, kappa int) float64 {
	x, y := z[s:tau], z[tau:kappa]
	n, m := float64(len(x)), float64(len(y))
	var cross, wx, wy float64
	for _, a := range x {
		for _, b := range y {
			cross += math.Abs(a - b)
		}
	}
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			wx += math.Abs(x[i] - x[j])
		}
	}
	for i := range y {
		for j := i + 1; j < len(y); j++ {
			wy += math.Abs(y[i] - y[j])
		}
	}
	e := 2 / (n * m) * cross
	if n > 1 {
		e -= wx / (n * (n - 1) / 2)
	}
	if m > 1 {
		e -= wy / (m * (m - 1) / 2)
	}
	return n * m / (n + m) * e
}

func TestEnergyMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	z := make([]float64, 17)
	for i := range z {
		z[i] = r.NormFloat64()
	}
	e := newEnergy(z)
	for s := 0; s < len(z); s++ {
		for tau := s + 1; tau < len(z); tau++ {
			for kappa := tau + 1; kappa <= len(z); kappa++ {
				got, want := e.q(s, tau, kappa), qDirect(z, s, tau, kappa)
				if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Fatalf("q(%d, %d, %d) = %v, want %v", s, tau, kappa, got, want)
				}
			}
		}
	}
}

func TestFindChangePoints(t *testing.T) {
	noise := func(seed uint64, n int, mean, cv float64) []float64 {
		r := rand.New(rand.NewPCG(seed, 7))
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = mean * (1 + cv*r.NormFloat64())
		}
		return xs
	}
	step := func(before, after []float64) []float64 { return append(append([]float64{}, before...), after...) }

	t.Run("flat", func(t *testing.T) {
		if got := FindChangePoints(noise(1, 60, 100, 0.02), ChangePointOptions{}); len(got) != 0 {
			t.Errorf("flat series: %+v", got)
		}
		if got := FindChangePoints(make([]float64, 30), ChangePointOptions{}); len(got) != 0 {
			t.Errorf("zeros: %+v", got)
		}
		if got := FindChangePoints(nil, ChangePointOptions{}); len(got) != 0 {
			t.Errorf("empty: %+v", got)
		}
	})
	t.Run("step", func(t *testing.T) {
		xs := step(noise(2, 20, 100, 0.02), noise(3, 10, 130, 0.02))
		got := FindChangePoints(xs, ChangePointOptions{})
		if len(got) != 1 || got[0].Index != 20 {
			t.Fatalf("got %+v, want one point at 20", got)
		}
		c := got[0]
		if c.NBefore != 20 || c.NAfter != 10 || math.Abs(c.Change-0.3) > 0.03 || !(c.PValue < 1e-6) {
			t.Errorf("point %+v", c)
		}
	})
	t.Run("min runs after", func(t *testing.T) {
		base := noise(4, 20, 100, 0.02)
		for after, want := range map[int]int{3: 0, 4: 1} {
			got := FindChangePoints(step(base, noise(5, after, 150, 0.02)), ChangePointOptions{})
			if len(got) != want {
				t.Errorf("%d runs after a +50 %% step: %d points, want %d: %+v", after, len(got), want, got)
			}
		}
	})
	t.Run("min change", func(t *testing.T) {
		// A 3 % step with almost no noise is significant but below 5 %.
		xs := step(noise(6, 20, 100, 0.001), noise(7, 20, 103, 0.001))
		if got := FindChangePoints(xs, ChangePointOptions{}); len(got) != 0 {
			t.Errorf("3 %% step: %+v", got)
		}
		if got := FindChangePoints(xs, ChangePointOptions{MinChange: 0.02}); len(got) != 1 || got[0].Index != 20 {
			t.Errorf("3 %% step, MinChange 2 %%: %+v", got)
		}
	})
	t.Run("two steps", func(t *testing.T) {
		xs := step(step(noise(8, 30, 100, 0.03), noise(9, 30, 80, 0.03)), noise(10, 30, 120, 0.03))
		got := FindChangePoints(xs, ChangePointOptions{})
		if len(got) != 2 || got[0].Index != 30 || got[1].Index != 60 {
			t.Fatalf("got %+v, want points at 30 and 60", got)
		}
		if got[0].Change > -0.15 || got[1].Change < 0.4 {
			t.Errorf("changes %v, %v; want ≈ −0.2 and +0.5", got[0].Change, got[1].Change)
		}
	})
	t.Run("long series", func(t *testing.T) {
		// A step far from the start, beyond the first windows.
		xs := step(noise(11, 170, 100, 0.03), noise(12, 40, 115, 0.03))
		got := FindChangePoints(xs, ChangePointOptions{})
		if len(got) != 1 || got[0].Index != 170 {
			t.Errorf("got %+v, want one point at 170", got)
		}
	})
}

// TestChangePointSeriesIncremental: adding runs one by one gives, at every
// length, exactly the points of a fresh computation over the prefix.
func TestChangePointSeriesIncremental(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		n := 60 + r.IntN(120)
		xs := make([]float64, n)
		level := 100.0
		for i := range xs {
			if r.IntN(25) == 0 {
				level *= 0.7 + 0.6*r.Float64()
			}
			xs[i] = level * (1 + 0.04*r.NormFloat64())
		}
		s := NewChangePointSeries(ChangePointOptions{})
		for i, x := range xs {
			s.Add(x)
			got, want := s.ChangePoints(), FindChangePoints(xs[:i+1], ChangePointOptions{})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d, %d runs: incremental %+v, batch %+v", seed, i+1, got, want)
			}
		}
	}
}

// Simulated nightly series (the bar of issue 13): values with 5 % noise
// (coefficient of variation), runs added one at a time as nights pass.
//
//   - Step: 30 runs at the base level, then +10 %. The step counts as
//     reported within d runs when, once d runs after it exist, an upward
//     point is reported within ±1 run of it (and, separately, within ±3:
//     with a 2σ step the estimated position is often a few runs off).
//     The oracle is the same t-test told where the step is, with nothing
//     to search: no detector built on it at p < 0.001 can do better.
//   - Flat: 200 runs, no change; every point reported at any time while the
//     series grew counts (a point that later vanishes was still notified).
//     Bar: ≤ 1 false point per 200 runs.
//
// The test runs 200 seeds (50 with -short); bench/changepoint/run.sh runs
// thousands (LONGHAUL_CP_SEEDS) and records the figures.
func TestChangePointAccuracy(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 50
	}
	if v, err := strconv.Atoi(os.Getenv("LONGHAUL_CP_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	const (
		base, cv, stepSize = 100.0, 0.05, 0.10
		before, maxAfter   = 30, 15
		flatRuns           = 200
	)
	opts := ChangePointOptions{}.withDefaults()

	// near[d], loose[d], oracle[d]: seeds reported once d runs after the step exist.
	var near, loose, oracle [maxAfter + 1]int
	var wrongBefore int // seeds with a false point on the clean runs before the step
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 13))
		s := NewChangePointSeries(opts)
		for range before {
			s.Add(base * (1 + cv*r.NormFloat64()))
		}
		if len(s.ChangePoints()) > 0 {
			wrongBefore++
		}
		gotNear, gotLoose, gotOracle := false, false, false
		for d := 1; d <= maxAfter; d++ {
			s.Add(base * (1 + stepSize) * (1 + cv*r.NormFloat64()))
			cps := s.ChangePoints()
			if !gotNear && upwardNear(cps, before, 1) {
				gotNear = true
				near[d]++
			}
			if !gotLoose && upwardNear(cps, before, 3) {
				gotLoose = true
				loose[d]++
			}
			if _, p := tTest(s.xs[:before], s.xs[before:]); !gotOracle && d >= opts.MinRuns && p < opts.MaxPValue {
				gotOracle = true
				oracle[d]++
			}
		}
	}
	for d := 1; d <= maxAfter; d++ {
		near[d] += near[d-1]
		loose[d] += loose[d-1]
		oracle[d] += oracle[d-1]
	}

	var falsePoints, endPoints int
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 17))
		s := NewChangePointSeries(opts)
		seen := map[int]bool{}
		for range flatRuns {
			s.Add(base * (1 + cv*r.NormFloat64()))
			for _, c := range s.ChangePoints() {
				seen[c.Index] = true
			}
		}
		falsePoints += len(seen)
		endPoints += len(s.ChangePoints())
	}

	pct := func(n int) float64 { return 100 * float64(n) / float64(seeds) }
	t.Logf("%d seeds; noise CV %.0f %%; a +%.0f %% step after %d runs; p < %g, change ≥ %.0f %%, ≥ %d runs each side",
		seeds, 100*cv, 100*stepSize, before, opts.MaxPValue, 100*opts.MinChange, opts.MinRuns)
	t.Logf("  runs after the step | reported within ±1 run | within ±3 runs | oracle t-test")
	for d := 4; d <= maxAfter; d++ {
		t.Logf("  %19d | %20.1f %% | %12.1f %% | %11.1f %%", d, pct(near[d]), pct(loose[d]), pct(oracle[d]))
	}
	t.Logf("  seeds with a false point on the %d clean runs before the step: %d", before, wrongBefore)
	t.Logf("flat series of %d runs: %.3f false points per %d runs (%d in %d seeds) ever reported while it grew; %.3f left at the end",
		flatRuns, float64(falsePoints)/float64(seeds), flatRuns, falsePoints, seeds, float64(endPoints)/float64(seeds))

	// The bar of ≥ 95 % within 5 runs is out of reach of a t-test at
	// p < 0.001 (see the oracle column and bench/changepoint/RESULTS.md);
	// what is asserted is that the search loses little against the oracle
	// and that the step is found in the end.
	if got, ceiling := pct(loose[5]), pct(oracle[5]); got < 0.85*ceiling {
		t.Errorf("within 5 runs: %.1f %% of seeds, the oracle %.1f %%: the search loses too much", got, ceiling)
	}
	if got := pct(loose[maxAfter]); got < 90 {
		t.Errorf("within %d runs: %.1f %% of seeds, want ≥ 90 %%", maxAfter, got)
	}
	if got := float64(falsePoints) / float64(seeds); got > 1 {
		t.Errorf("flat series: %.3f false points per %d runs, want ≤ 1", got, flatRuns)
	}
}

// upwardNear reports whether cps has an upward point within tol runs of at.
func upwardNear(cps []ChangePoint, at, tol int) bool {
	for _, c := range cps {
		if c.Index >= at-tol && c.Index <= at+tol && c.Change > 0 {
			return true
		}
	}
	return false
}

// BenchmarkChangePointsNightly is the cost of one night: add a run to a
// year of history and read the change points.
func BenchmarkChangePointsNightly(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	s := NewChangePointSeries(ChangePointOptions{})
	for i := range 365 {
		level := 100.0
		if i > 200 {
			level = 110
		}
		s.Add(level * (1 + 0.05*r.NormFloat64()))
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Add(110 * (1 + 0.05*r.NormFloat64()))
		_ = s.ChangePoints()
	}
}
