package analysis

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestSignTest(t *testing.T) {
	tests := []struct {
		won, lost int
		want      float64
	}{
		{3, 0, 0.25}, // 3 pairs can never reach 0.05
		{0, 3, 0.25},
		{2, 1, 1},
		{6, 0, 0.03125},
		{5, 1, 0.21875},
		{0, 0, 1},
	}
	for _, tt := range tests {
		if got := SignTest(tt.won, tt.lost); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("SignTest(%d, %d) = %v, want %v", tt.won, tt.lost, got, tt.want)
		}
	}
}

func TestWilcoxonSignedRank(t *testing.T) {
	tests := []struct {
		name string
		d    []float64
		want float64
	}{
		// All 6 positive: only 1 of 64 sign patterns is as extreme on each side.
		{"6 of 6 up", []float64{1, 2, 3, 4, 5, 6}, 2.0 / 64},
		{"6 of 6 down", []float64{-1, -2, -3, -4, -5, -6}, 2.0 / 64},
		// The one negative has the smallest rank: W+ = 20; P(W+ ≥ 20) = 2/64.
		{"5 up, smallest down", []float64{-1, 2, 3, 4, 5, 6}, 4.0 / 64},
		// 3 pairs: the best two-sided p is 2/8.
		{"3 up", []float64{0.1, 0.2, 0.3}, 0.25},
		{"zeros dropped", []float64{0, 0, 1, 2, 3, 4, 5, 6}, 2.0 / 64},
		{"balanced", []float64{-1, 1, -2, 2}, 1},
		{"none", []float64{0, 0}, 1},
	}
	for _, tt := range tests {
		if got := WilcoxonSignedRank(tt.d); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: WilcoxonSignedRank(%v) = %v, want %v", tt.name, tt.d, got, tt.want)
		}
	}
	// Ties share their average rank: |d| = 1, 1 get rank 1.5 each; W+ = 1.5 + 3 + 4 + 5 + 6 + 7 = 26.5 of 28.
	// Doubled ranks 3 3 6 8 10 12 14; P(sum of negatives ≤ 3) = #{∅, {3}, {3'}} / 128.
	if got, want := WilcoxonSignedRank([]float64{-1, 1, 3, 4, 5, 6, 7}), 2*3.0/128; math.Abs(got-want) > 1e-9 {
		t.Errorf("ties: p = %v, want %v", got, want)
	}
	// The normal approximation (n > 50) agrees with the exact count near the boundary.
	d := make([]float64, 60)
	for i := range d {
		d[i] = float64(i + 1)
		if i%3 == 0 {
			d[i] = -d[i]
		}
	}
	if p := WilcoxonSignedRank(d); p <= 0 || p >= 0.05 {
		t.Errorf("60 pairs, two in three up: p = %v, want in (0, 0.05)", p)
	}
}

// pairs builds pairs with B/A = ratios (A = 100).
func pairs(ratios ...float64) []PairValues {
	out := make([]PairValues, len(ratios))
	for i, r := range ratios {
		out[i] = PairValues{A: 100, B: 100 * r}
	}
	return out
}

func TestPairedVerdictInterval(t *testing.T) {
	// Log-ratios 0.08, 0.10, 0.12: mean 0.10, sd 0.02, t(0.975, 2) = 4.3027.
	v := PairedVerdict(MetricCPUMicrosPerReq, pairs(math.Exp(0.08), math.Exp(0.10), math.Exp(0.12)), PairedOptions{})
	half := 4.302652729911275 * 0.02 / math.Sqrt(3)
	if got, want := v.CI, [2]float64{math.Exp(0.10 - half), math.Exp(0.10 + half)}; math.Abs(got[0]-want[0]) > 1e-9 || math.Abs(got[1]-want[1]) > 1e-9 {
		t.Errorf("CI = %v, want %v", got, want)
	}
	if math.Abs(v.Ratio-math.Exp(0.10)) > 1e-12 {
		t.Errorf("Ratio = %v, want e^0.1", v.Ratio)
	}
	if v.Outcome != Worse || v.Method != MethodTLogRatio || v.Pairs != 3 || v.PairsBBetter != 0 || math.Abs(v.SignP-0.25) > 1e-9 {
		t.Errorf("verdict = %+v, want worse by t-log-ratio, 3 pairs, 0 won, sign p 0.25", v)
	}
}

func TestPairedVerdictOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		metric  string
		pairs   []PairValues
		opts    PairedOptions
		want    Outcome
		reason  string // substring of Reason; "" means Reason must be empty
		method  string
		bBetter int
	}{
		{"cpu up 15 %", MetricCPUMicrosPerReq, pairs(1.14, 1.15, 1.16), PairedOptions{}, Worse, "", MethodTLogRatio, 0},
		{"p50 down 17 %", MetricP50Ms, pairs(0.81, 0.83, 0.85, 0.84), PairedOptions{}, Better, "", MethodTLogRatio, 4},
		{"throughput up is better", MetricRPS, pairs(1.14, 1.15, 1.16), PairedOptions{}, Better, "", MethodTLogRatio, 3},
		{"throughput down is worse", MetricRPS, pairs(0.86, 0.85, 0.87), PairedOptions{}, Worse, "", MethodTLogRatio, 0},
		{"within the floor", MetricP50Ms, pairs(1.001, 0.999, 1.002, 1.0), PairedOptions{}, NoDifference, "", MethodTLogRatio, 1},
		{"significant but under the floor", MetricCPUMicrosPerReq, pairs(1.010, 1.011, 1.012), PairedOptions{}, NoDifference, "smaller than the 3 % floor", MethodTLogRatio, 0},
		{"a 1 % floor sees it", MetricCPUMicrosPerReq, pairs(1.020, 1.021, 1.022), PairedOptions{Floors: map[string]float64{MetricCPUMicrosPerReq: 0.01}}, Worse, "", MethodTLogRatio, 0},
		{"too few pairs", MetricP50Ms, pairs(1.5, 1.5), PairedOptions{}, Inconclusive, "too few pairs: 2 (need 3)", MethodTLogRatio, 0},
		{"pairs disagree", MetricP50Ms, pairs(1.2, 0.85, 1.1), PairedOptions{}, Inconclusive, "pairs disagree: B better in 1, worse in 2 of 3", MethodTLogRatio, 1},
		{"significant, at the floor", MetricP50Ms, pairs(1.03, 1.04, 1.05), PairedOptions{}, Worse, "", MethodTLogRatio, 0},
		{"noisy, one way", MetricP99Ms, pairs(1.01, 1.3, 1.02), PairedOptions{}, Inconclusive, "spans both no change and the 3 % floor", MethodTLogRatio, 0},
		{"disturbed pairs left out", MetricP50Ms, []PairValues{{A: 100, B: 150, Disturbed: true}, {A: 100, B: 115}, {A: 100, B: 114}},
			PairedOptions{}, Inconclusive, "disturbed rounds: 1 of 3 pairs", MethodTLogRatio, 0},
		{"not measured", MetricHeapBytes, []PairValues{{A: 0, B: 5}, {A: 4, B: math.NaN()}}, PairedOptions{}, Inconclusive, "not measured on both sides", MethodTLogRatio, 0},
		{"6 pairs, Wilcoxon agrees", MetricP50Ms, pairs(1.2, 1.2, 1.21, 1.19, 1.2, 1.22), PairedOptions{}, Worse, "", MethodTLogRatioWilcoxon, 0},
		{"6 pairs, Wilcoxon does not confirm", MetricP50Ms, pairs(1.22, 1.22, 1.22, 1.22, 1.22, 0.99), PairedOptions{}, Inconclusive, "Wilcoxon signed-rank test does not confirm", MethodTLogRatioWilcoxon, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := PairedVerdict(tt.metric, tt.pairs, tt.opts)
			if v.Outcome != tt.want || v.Method != tt.method || v.PairsBBetter != tt.bBetter {
				t.Errorf("outcome %s by %s, B won %d; want %s by %s, B won %d\n%s", v.Outcome, v.Method, v.PairsBBetter, tt.want, tt.method, tt.bBetter, v.Summary)
			}
			if tt.reason == "" && v.Reason != "" || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("reason %q, want %q", v.Reason, tt.reason)
			}
			if !strings.HasPrefix(v.Summary, MetricLabel(tt.metric)+": ") || !strings.Contains(v.Summary, "→ "+string(tt.want)) {
				t.Errorf("summary %q", v.Summary)
			}
		})
	}
}

func TestPairedVerdictSummary(t *testing.T) {
	v := PairedVerdict(MetricP50Ms, pairs(0.90, 0.71, 0.83, 0.84), PairedOptions{})
	want := "p50: B won 4/4 pairs (−10 % to −29 %), median −17 %, 95 % CI [−30 %, −4.2 %] → better"
	if v.Summary != want {
		t.Errorf("summary\n got %s\nwant %s", v.Summary, want)
	}
	v = PairedVerdict(MetricRPS, pairs(1.02, 0.97, 1.01), PairedOptions{})
	if !strings.HasPrefix(v.Summary, "throughput: B won 2/3 pairs (−3.0 % to +2.0 %), median +1.0 %, 95 % CI [") {
		t.Errorf("summary %s", v.Summary)
	}
	if n := v.Noise(); n < 0.03 || n > 0.2 {
		t.Errorf("Noise() = %v for an interval %v", n, v.CI)
	}
}

func TestComparePairsAllMetrics(t *testing.T) {
	a := RoundValues{MetricP50Ms: 2, MetricCPUMicrosPerReq: 100, MetricRPS: 1000}
	b := RoundValues{MetricP50Ms: 2, MetricCPUMicrosPerReq: 115, MetricRPS: 1000}
	vs := ComparePairs([]Pair{{A: a, B: b}, {A: a, B: b}, {A: a, B: b}}, PairedOptions{})
	if len(vs) != len(Metrics) {
		t.Fatalf("%d verdicts, want %d", len(vs), len(Metrics))
	}
	got := map[string]Outcome{}
	for i, v := range vs {
		if v.Metric != Metrics[i] {
			t.Errorf("verdict %d is %s, want %s", i, v.Metric, Metrics[i])
		}
		got[v.Metric] = v.Outcome
	}
	want := map[string]Outcome{MetricP50Ms: NoDifference, MetricCPUMicrosPerReq: Worse, MetricRPS: NoDifference, MetricHeapBytes: Inconclusive}
	for m, o := range want {
		if got[m] != o {
			t.Errorf("%s: %s, want %s", m, got[m], o)
		}
	}
}

func TestPairedVerdictPooled(t *testing.T) {
	// Own log-ratios 0.08, 0.10, 0.12: sd 0.02 over 2 df. The history: 10 df
	// at sd 0.02 → pooled sd 0.02 at 12 df, t(0.975, 12) = 2.1788.
	prior := PriorNoise{}
	for range 5 {
		prior.Add(Verdict{Pairs: 3, SD: 0.02})
	}
	if prior.DF != 10 || prior.Comparisons != 5 || math.Abs(prior.SS-10*0.0004) > 1e-12 {
		t.Fatalf("prior = %+v, want 10 df from 5 comparisons", prior)
	}
	prior.Add(Verdict{Pairs: 1, SD: 0.5}) // one pair has no spread: nothing added
	prior.Add(Verdict{Pairs: 3})          // no SD recorded (an older comparison)
	if prior.DF != 10 || prior.Comparisons != 5 {
		t.Fatalf("prior = %+v after verdicts without a spread", prior)
	}
	ps := pairs(math.Exp(0.08), math.Exp(0.10), math.Exp(0.12))
	v := PairedVerdict(MetricCPUMicrosPerReq, ps, PairedOptions{Prior: map[string]PriorNoise{MetricCPUMicrosPerReq: prior}})
	half := 2.1788128296672284 * 0.02 / math.Sqrt(3)
	if got, want := v.CI, [2]float64{math.Exp(0.10 - half), math.Exp(0.10 + half)}; math.Abs(got[0]-want[0]) > 1e-9 || math.Abs(got[1]-want[1]) > 1e-9 {
		t.Errorf("CI = %v, want %v", got, want)
	}
	if v.Method != MethodTLogRatioPooled || v.DF != 12 || v.PooledFrom != 5 || math.Abs(v.SD-0.02) > 1e-12 || v.Outcome != Worse {
		t.Errorf("verdict = %+v, want worse by %s at 12 df from 5 earlier comparisons", v, MethodTLogRatioPooled)
	}
	// Another metric's history does not apply.
	if w := PairedVerdict(MetricP50Ms, ps, PairedOptions{Prior: map[string]PriorNoise{MetricCPUMicrosPerReq: prior}}); w.Method != MethodTLogRatio || w.DF != 2 || w.PooledFrom != 0 {
		t.Errorf("p50 with only a CPU history: %+v", w)
	}

	// Pairs ten times noisier than the history: it is set aside (F test),
	// and the reason says so.
	quiet := PriorNoise{}
	for range 5 {
		quiet.Add(Verdict{Pairs: 3, SD: 0.002})
	}
	noisy := pairs(1.01, 1.3, 1.02)
	v = PairedVerdict(MetricP99Ms, noisy, PairedOptions{Prior: map[string]PriorNoise{MetricP99Ms: quiet}})
	if v.Method != MethodTLogRatio || v.DF != 2 || v.PooledFrom != 0 || v.Outcome != Inconclusive ||
		!strings.Contains(v.Reason, "noisier than the 5 earlier comparisons") {
		t.Errorf("noisy pairs against a quiet history: %+v", v)
	}
	// 6 pairs pooled: the method names both.
	six := pairs(1.2, 1.2, 1.21, 1.19, 1.2, 1.22)
	if v := PairedVerdict(MetricP50Ms, six, PairedOptions{Prior: map[string]PriorNoise{MetricP50Ms: prior}}); v.Method != MethodTLogRatioPooledWilcoxon || v.DF != 15 {
		t.Errorf("6 pairs pooled: method %s at %d df", v.Method, v.DF)
	}
}

func TestPairedVerdictFamily(t *testing.T) {
	// Bonferroni over 4 metrics: the interval is t(1 − 0.05/8, 2) wide, and
	// the +10 % that one metric alone calls worse is no longer resolved by
	// 3 pairs of their own (a history of earlier comparisons resolves it).
	ps := pairs(math.Exp(0.08), math.Exp(0.10), math.Exp(0.12))
	v := PairedVerdict(MetricCPUMicrosPerReq, ps, PairedOptions{Family: 4})
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 2}.Quantile(1 - 0.05/8)
	half := q * 0.02 / math.Sqrt(3)
	if math.Abs(v.CI[0]-math.Exp(0.10-half)) > 1e-9 || v.Family != 4 || v.Outcome != Inconclusive {
		t.Errorf("family of 4: CI %v family %d %s, want lower %v", v.CI, v.Family, v.Outcome, math.Exp(0.10-half))
	}
	// ComparePairs counts the metrics it can decide: here p50, CPU and rps
	// are measured in 3 pairs, the rest not at all.
	a := RoundValues{MetricP50Ms: 2, MetricCPUMicrosPerReq: 100, MetricRPS: 1000}
	b := RoundValues{MetricP50Ms: 2, MetricCPUMicrosPerReq: 115, MetricRPS: 1000}
	for _, v := range ComparePairs([]Pair{{A: a, B: b}, {A: a, B: b}, {A: a, B: b}}, PairedOptions{}) {
		if v.Family != 3 && v.Pairs > 0 {
			t.Errorf("%s: family %d, want the 3 measured metrics", v.Metric, v.Family)
		}
	}
}

func TestIntervalNote(t *testing.T) {
	for _, tt := range []struct {
		vs   []Verdict
		want string
	}{
		{nil, ""},
		{[]Verdict{{Family: 1}}, ""},
		{[]Verdict{{Family: 7}, {Family: 7, PooledFrom: 1}}, "the intervals hold jointly over 7 metrics; noise pooled with 1 earlier comparison of this scenario on this host"},
		{[]Verdict{{Family: 3}}, "the intervals hold jointly over 3 metrics; no earlier comparison of this scenario on this host to pool noise with: an A-vs-A comparison first lets later ones resolve smaller changes"},
	} {
		if got := IntervalNote(tt.vs); got != tt.want {
			t.Errorf("IntervalNote(%+v)\n got %q\nwant %q", tt.vs, got, tt.want)
		}
	}
}
