package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Expected values below come from testdata/stats_reference.py (standard-library
// Python: brute-force permutation enumeration for the exact Mann–Kendall
// p-values, Gilbert 1987 §16.4 formulas for the normal ones) and, where noted,
// from published tables.

func approxEqual(got, want, relTol float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= relTol*math.Max(math.Abs(want), 1e-300)
}

func TestMannKendallExact(t *testing.T) {
	tests := []struct {
		y         []float64
		s         float64
		pUp, pDn  float64
		reference string
	}{
		{[]float64{1, 2, 3, 4}, 6, 1.0 / 24, 1, "1/4!"},
		{[]float64{1, 2, 3, 4, 5}, 10, 1.0 / 120, 1, "Kendall's table n=5 S=10: .008"},
		{[]float64{3, 1, 4, 5, 9, 2, 6}, 9, 0.119444444444, 0.931944444444, "enumeration"},
		{[]float64{10, 12, 11, 14, 13, 15, 17, 16}, 22, 0.00275297619048, 0.999131944444, "Kendall's table n=8 S=22: .0028"},
	}
	for _, tt := range tests {
		got := MannKendall(tt.y)
		if !got.Exact || got.S != tt.s || !approxEqual(got.PUp, tt.pUp, 1e-9) || !approxEqual(got.PDown, tt.pDn, 1e-9) {
			t.Errorf("MannKendall(%v) = S %v PUp %.12g PDown %.12g exact %v; want S %v PUp %.12g PDown %.12g exact (%s)",
				tt.y, got.S, got.PUp, got.PDown, got.Exact, tt.s, tt.pUp, tt.pDn, tt.reference)
		}
	}
}

func TestMannKendallNormal(t *testing.T) {
	long := make([]float64, 50)
	for i := range long {
		long[i] = float64(i%7) + float64(i)*0.1
	}
	wave := make([]float64, 60)
	for i := range wave {
		wave[i] = math.Sin(float64(i))
	}
	tests := []struct {
		name          string
		y             []float64
		s, v, z       float64
		pUp, pDown    float64
		wantTwoSided  float64
		wantTauApprox float64
	}{
		{"ties", []float64{5, 5, 6, 6, 6, 7, 8, 8, 9, 9, 10, 10}, 59, 205, 4.05089571546, 2.55109723016e-05, 0.999986087994, 5.10219446032e-05, 59.0 / 66},
		{"many zero ties", []float64{0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 2, 5, 8, 7, 9, 12}, 88, 428, 4.20530372735, 1.30365886713e-05, 0.99999153597, 2.60731773426e-05, 88.0 / 120},
		{"n=50 no ties", long, 551, 14291.6666667, 4.60067177247, 2.10565287252e-06, 0.999998057125, 4.21130574504e-06, 551.0 / 1225},
		{"n=60 no trend", wave, 12, 24583.3333333, 0.0701572084558, 0.472034266533, 0.533039667094, 0.944068533066, 12.0 / 1770},
	}
	for _, tt := range tests {
		got := MannKendall(tt.y)
		if got.Exact || got.S != tt.s || !approxEqual(got.VarS, tt.v, 1e-9) || !approxEqual(got.Z, tt.z, 1e-9) ||
			!approxEqual(got.PUp, tt.pUp, 1e-8) || !approxEqual(got.PDown, tt.pDown, 1e-8) ||
			!approxEqual(got.P(), tt.wantTwoSided, 1e-8) || !approxEqual(got.Tau, tt.wantTauApprox, 1e-12) {
			t.Errorf("%s: got %+v P %.12g; want S %v Var %v Z %v PUp %v PDown %v P %v tau %v",
				tt.name, got, got.P(), tt.s, tt.v, tt.z, tt.pUp, tt.pDown, tt.wantTwoSided, tt.wantTauApprox)
		}
	}
}

func TestMannKendallEdges(t *testing.T) {
	tests := []struct {
		name string
		y    []float64
		want MannKendallTest
	}{
		{"empty", nil, MannKendallTest{PUp: 1, PDown: 1, Correction: 1}},
		{"one", []float64{3}, MannKendallTest{N: 1, PUp: 1, PDown: 1, Correction: 1}},
		{"constant", []float64{2, 2, 2, 2}, MannKendallTest{N: 4, PUp: 1, PDown: 1, Correction: 1}},
	}
	for _, tt := range tests {
		if got := MannKendall(tt.y); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestMannKendallHamedRao(t *testing.T) {
	wave := make([]float64, 40)
	for i := range wave {
		wave[i] = 0.05*float64(i) + math.Sin(float64(i)/3)
	}
	zigzag := make([]float64, 30)
	for i := range zigzag {
		zigzag[i] = float64(i)
		if i%2 == 1 {
			zigzag[i] += 3
		}
	}
	tests := []struct {
		name                 string
		y                    []float64
		s, factor, v, up, dn float64
	}{
		// A trend under a slow wave: the wave's autocorrelation inflates VarS.
		{"trend+wave", wave, 230, 1.37317163371, 10115.6977017, 0.0113971004161, 0.989183532683},
		// Negative autocorrelation: the factor is held at 1, never below.
		{"zigzag", zigzag, 394, 1, 3128.66666667, 1.06210658972e-12, 0.999999999999},
	}
	for _, tt := range tests {
		got := MannKendallHamedRao(tt.y)
		if got.S != tt.s || !approxEqual(got.Correction, tt.factor, 1e-9) || !approxEqual(got.VarS, tt.v, 1e-9) ||
			!approxEqual(got.PUp, tt.up, 1e-8) || !approxEqual(got.PDown, tt.dn, 1e-8) {
			t.Errorf("%s: got S %v factor %.12g Var %.12g PUp %.12g PDown %.12g; want %v %.12g %.12g %.12g %.12g",
				tt.name, got.S, got.Correction, got.VarS, got.PUp, got.PDown, tt.s, tt.factor, tt.v, tt.up, tt.dn)
		}
	}
	// Short series are not corrected: the plain (exact) test comes back.
	short := []float64{1, 3, 2, 4, 6, 5, 7, 8}
	if got, want := MannKendallHamedRao(short), MannKendall(short); got != want {
		t.Errorf("n=8: got %+v, want the plain test %+v", got, want)
	}
}

// The exact distribution must agree with the normal approximation where both
// are good (n = 40, moderate S) and be symmetric.
func TestInversionCDFConsistent(t *testing.T) {
	cdf := inversionCDF(40)
	pairs := 40 * 39 / 2
	if got := cdf[len(cdf)-1]; !approxEqual(got, 1, 1e-12) {
		t.Fatalf("cdf total = %v, want 1", got)
	}
	for _, s := range []int{20, 80, 150} {
		exact := cdf[(pairs-s)/2]
		sd := math.Sqrt(40 * 39 * 85 / 18.0)
		approx := normalSF((float64(s) - 1) / sd)
		if !approxEqual(exact, approx, 0.02) {
			t.Errorf("n=40 S=%d: exact %v vs normal %v differ by more than 2 %%", s, exact, approx)
		}
	}
}

func TestTheilSen(t *testing.T) {
	tests := []struct {
		x, y []float64
		want Line
		ok   bool
	}{
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 2, 3, 4, 100}, Line{Slope: 1, Intercept: 0}, true},
		{[]float64{0, 1, 2, 3, 4, 5, 6}, []float64{2, 4.1, 5.9, 8.2, 10, 30, 14}, Line{Slope: 2.025, Intercept: 2}, true},
		{[]float64{1, 1, 1}, []float64{1, 2, 3}, Line{}, false},
		{[]float64{1}, []float64{1}, Line{}, false},
	}
	for _, tt := range tests {
		got, ok := TheilSen(tt.x, tt.y)
		if ok != tt.ok || !approxEqual(got.Slope, tt.want.Slope, 1e-12) || !approxEqual(got.Intercept, tt.want.Intercept, 1e-12) {
			t.Errorf("TheilSen(%v, %v) = %+v, %v; want %+v, %v", tt.x, tt.y, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSpearman(t *testing.T) {
	tests := []struct {
		x, y []float64
		want float64
	}{
		// SciPy's documentation example for spearmanr: 0.8207826816681233.
		{[]float64{1, 2, 3, 4, 5}, []float64{5, 6, 7, 8, 7}, 0.820782681668},
		{[]float64{1, 2, 2, 3, 4, 5}, []float64{2, 1, 4, 4, 6, 5}, 0.808823529412},
		{[]float64{1, 2, 3}, []float64{3, 2, 1}, -1},
	}
	for _, tt := range tests {
		if got := Spearman(tt.x, tt.y); !approxEqual(got, tt.want, 1e-10) {
			t.Errorf("Spearman(%v, %v) = %.12g, want %.12g", tt.x, tt.y, got, tt.want)
		}
	}
	if got := Spearman([]float64{1, 1, 1}, []float64{1, 2, 3}); !math.IsNaN(got) {
		t.Errorf("Spearman of a constant = %v, want NaN", got)
	}
}

func TestQuantileAndMedian(t *testing.T) {
	v := []float64{7, 1, 3, 9, 4, 4, 10, 2}
	for _, tt := range []struct{ q, want float64 }{{0, 1}, {0.25, 2.75}, {0.5, 4}, {0.9, 9.3}, {1, 10}} {
		if got := Quantile(v, tt.q); !approxEqual(got, tt.want, 1e-12) {
			t.Errorf("Quantile(%v, %v) = %v, want %v", v, tt.q, got, tt.want)
		}
	}
	for _, tt := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{4, 1}, 2.5}, {[]float64{5, 1, 3}, 3}, {v, 4}, {[]float64{2, 2, 2, 1, 2, 2}, 2}} {
		orig := slices.Clone(tt.xs)
		if got := Median(tt.xs); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
		if !slices.Equal(orig, tt.xs) {
			t.Errorf("Median modified its input: %v -> %v", orig, tt.xs)
		}
	}
	if !math.IsNaN(Median(nil)) || !math.IsNaN(Quantile(nil, 0.5)) || !math.IsNaN(Quantile(v, 2)) {
		t.Error("empty input or bad q should give NaN")
	}
}

// nth must agree with sorting, including on inputs full of duplicates.
func TestNthMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(60)
		a := make([]float64, n)
		for i := range a {
			a[i] = float64(r.IntN(1 + trial%7)) // few distinct values on many trials
		}
		k := r.IntN(n)
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		if got := nth(a, k); got != sorted[k] {
			t.Fatalf("nth(%v, %d) = %v, want %v", a, k, got, sorted[k])
		}
		for i := 0; i < k; i++ {
			if a[i] > a[k] {
				t.Fatalf("nth left a[%d]=%v > a[k]=%v", i, a[i], a[k])
			}
		}
		if got, want := Median(sorted), Quantile(sorted, 0.5); !approxEqual(got, want, 1e-12) {
			t.Fatalf("Median %v != Quantile(0.5) %v for %v", got, want, sorted)
		}
	}
}

func BenchmarkTheilSen240(b *testing.B) {
	x, y := make([]float64, 240), make([]float64, 240)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range x {
		x[i] = float64(i)
		y[i] = 3*float64(i) + r.NormFloat64()*20
	}
	var buf []float64
	b.ReportAllocs()
	for b.Loop() {
		theilSen(x, y, &buf)
	}
}

func BenchmarkMannKendall240(b *testing.B) {
	y := make([]float64, 240)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range y {
		y[i] = r.NormFloat64()
	}
	var buf []float64
	b.ReportAllocs()
	for b.Loop() {
		mannKendall(y, &buf)
	}
}
