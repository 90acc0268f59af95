package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Simulated comparisons: the accuracy bar of the paired verdicts (issue 11)
// on thousands of seeds per metric. A round's value is
//
//	base · exp(drift_pair + order + noise_round + shift_B)
//
// drift_pair is the machine's drift, shared by both rounds of a pair (±30 %
// between pairs: it must cancel); order is a penalty on the first round of
// each pair (a cold page cache), which ABBA alternates between A and B;
// noise_round is the round-to-round noise of the metric, normal or
// heavy-tailed (Student's t with 3 degrees of freedom, same scale) with
// occasional unmarked foreign load spikes.

type noiseProfile struct {
	metric string
	// sigma is the round-to-round standard deviation of log(value).
	sigma float64
	// heavy: Student-t(3) noise instead of normal; spikes: the chance that
	// a round carries an unmarked +4σ burst of foreign load.
	heavy  bool
	spikes float64
}

// profiles: noise per metric, that of rounds on a host without much other
// work. On this 2-core VM shared with other jobs (foreign load 65–80 % of
// the host) bench/compare measured 2–4× these sigmas for latency,
// throughput and CPU per request, and bench/compare/power runs this rule at
// those: bench/compare/RESULTS.md has both.
var profiles = []noiseProfile{
	{metric: MetricP50Ms, sigma: 0.06},
	{metric: MetricP95Ms, sigma: 0.08, heavy: true},
	{metric: MetricP99Ms, sigma: 0.15, heavy: true, spikes: 0.05},
	{metric: MetricRPS, sigma: 0.06},
	{metric: MetricCPUMicrosPerReq, sigma: 0.025},
	{metric: MetricHeapBytes, sigma: 0.03},
	{metric: MetricRSSBytes, sigma: 0.02},
	{metric: MetricRowsReadPerRequest, sigma: 0.01},
}

type simSetup struct {
	pairs int
	// order is "abba" or "ab".
	order string
	// orderEffect: log-penalty of the first round of a pair.
	orderEffect float64
	// shift: the true log-ratio of B over A (0 for A/A).
	shift float64
}

func (p noiseProfile) draw(r *rand.Rand) float64 {
	var e float64
	if p.heavy {
		// Student t(3) scaled to the same standard deviation (var of t3 = 3).
		z := r.NormFloat64()
		chi := 0.0
		for range 3 {
			g := r.NormFloat64()
			chi += g * g
		}
		e = z / math.Sqrt(chi/3) * p.sigma / math.Sqrt(3)
	} else {
		e = r.NormFloat64() * p.sigma
	}
	if p.spikes > 0 && r.Float64() < p.spikes {
		e += 4 * p.sigma
	}
	return e
}

// simulate returns one comparison's verdict for profile p.
func simulate(p noiseProfile, s simSetup, seed uint64) Verdict {
	r := rand.New(rand.NewPCG(seed, 0x11))
	pv := make([]PairValues, s.pairs)
	for i := range pv {
		pv[i].A, pv[i].B = p.pair(r, s, i, r.NormFloat64()*0.3, s.shift)
	}
	return PairedVerdict(p.metric, pv, PairedOptions{})
}

// pair draws pair i's A and B values of the metric: the pair's drift, the
// order penalty on its first round, each round's noise, and B's shift.
func (p noiseProfile) pair(r *rand.Rand, s simSetup, i int, drift, shift float64) (a, b float64) {
	aFirst := s.order == "ab" || i%2 == 0 // abba: A B | B A | A B ...
	oa, ob := 0.0, 0.0
	if aFirst {
		oa = s.orderEffect
	} else {
		ob = s.orderEffect
	}
	sign := 1.0
	if HigherIsBetter(p.metric) {
		sign = -1 // a penalty lowers throughput
	}
	return 100 * math.Exp(drift+sign*oa+p.draw(r)), 100 * math.Exp(drift+sign*ob+p.draw(r)+shift)
}

type simRates struct{ better, worse, noDiff, inconclusive float64 }

func rates(p noiseProfile, s simSetup, n int) simRates {
	var c simRates
	for seed := range uint64(n) {
		switch simulate(p, s, seed+seedOffsetFromEnv()).Outcome {
		case Better:
			c.better++
		case Worse:
			c.worse++
		case NoDifference:
			c.noDiff++
		default:
			c.inconclusive++
		}
	}
	f := float64(n)
	return simRates{c.better / f, c.worse / f, c.noDiff / f, c.inconclusive / f}
}

// TestPairedAccuracyAA: the same build on both sides is called better or
// worse in at most 5 % of comparisons, per metric, for 3, 6 and 10 pairs,
// with a 2 % order effect under ABBA.
func TestPairedAccuracyAA(t *testing.T) {
	n := seeds(t, 4000)
	// The bar is 5 % on the full 4,000 seeds. Under -short (400 seeds) the
	// observed rate scatters by ±1.1 % (one binomial standard error) around
	// the true one, so the short run allows two standard errors more: it
	// catches a broken rule, the full run holds the bar.
	limit := 0.05
	if testing.Short() {
		limit += 2 * math.Sqrt(0.05*0.95/float64(n))
	}
	for _, p := range profiles {
		for _, pairs := range []int{3, 6, 10} {
			s := simSetup{pairs: pairs, order: "abba", orderEffect: 0.02}
			r := rates(p, s, n)
			false_ := r.better + r.worse
			t.Logf("A/A %-22s σ=%4.1f%% %2d pairs: false better %.2f%%, false worse %.2f%%, no_difference %.1f%%, inconclusive %.1f%%",
				p.metric, 100*p.sigma, pairs, 100*r.better, 100*r.worse, 100*r.noDiff, 100*r.inconclusive)
			if false_ > limit {
				t.Errorf("A/A %s with %d pairs: false better/worse rate %.2f%% > %.1f%% (%d seeds)", p.metric, pairs, 100*false_, 100*limit, n)
			}
		}
	}
}

// TestPairedOrderBias shows why ABBA is the default: with A always first, a
// 5 % first-round penalty alone makes B look better; ABBA cancels it.
func TestPairedOrderBias(t *testing.T) {
	n := seeds(t, 2000)
	p := noiseProfile{metric: MetricCPUMicrosPerReq, sigma: 0.02}
	ab := rates(p, simSetup{pairs: 4, order: "ab", orderEffect: 0.05}, n)
	abba := rates(p, simSetup{pairs: 4, order: "abba", orderEffect: 0.05}, n)
	t.Logf("5 %% order effect, 4 pairs: ab false better %.1f%%; abba false better %.2f%%, false worse %.2f%%",
		100*ab.better, 100*abba.better, 100*abba.worse)
	if ab.better < 0.5 {
		t.Errorf("ab order: false better %.1f%%; the simulated order effect should show (want > 50%%)", 100*ab.better)
	}
	if abba.better+abba.worse > 0.05 {
		t.Errorf("abba order: false better/worse %.2f%% > 5%%", 100*(abba.better+abba.worse))
	}
}

// TestPairedPower reports how often a true 10 % change (B worse) is found,
// per metric and number of pairs, at the measured noise levels; and
// checks the ones the accuracy bar relies on: CPU per request at +15 %
// with 3 pairs, and the direction never reversed.
func TestPairedPower(t *testing.T) {
	n := seeds(t, 4000)
	for _, p := range profiles {
		for _, pairs := range []int{3, 6, 10} {
			shift := math.Log(1.10)
			if HigherIsBetter(p.metric) {
				shift = -shift
			}
			r := rates(p, simSetup{pairs: pairs, order: "abba", orderEffect: 0.02, shift: shift}, n)
			t.Logf("10%% worse %-22s σ=%4.1f%% %2d pairs: power %.1f%%, reversed %.2f%%, no_difference %.1f%%, inconclusive %.1f%%",
				p.metric, 100*p.sigma, pairs, 100*r.worse, 100*r.better, 100*r.noDiff, 100*r.inconclusive)
			if r.better > 0.01 {
				t.Errorf("%s, %d pairs: a 10%% regression called better in %.2f%%", p.metric, pairs, 100*r.better)
			}
			if p.metric == MetricCPUMicrosPerReq && pairs >= 6 && r.worse < 0.9 {
				t.Errorf("cpu_us_per_request, %d pairs: power %.1f%% on a 10%% change, want ≥ 90%%", pairs, 100*r.worse)
			}
		}
	}
	cpu := profiles[4]
	r := rates(cpu, simSetup{pairs: 3, order: "abba", orderEffect: 0.02, shift: math.Log(1.15)}, n)
	t.Logf("15%% worse cpu_us_per_request, 3 pairs: power %.1f%%", 100*r.worse)
	if r.worse < 0.7 {
		t.Errorf("cpu_us_per_request +15%%, 3 pairs: power %.1f%%, want ≥ 70%%", 100*r.worse)
	}
}

// simulateComparison is one comparison of every metric of ps at once
// (ComparePairs, so the intervals hold jointly over the metrics), B
// shifted by shift on metric shifted (none if ""), its noise pooled with
// the given prior. The pairs share each pair's drift across metrics.
func simulateComparison(ps []noiseProfile, s simSetup, shifted string, prior map[string]PriorNoise, r *rand.Rand) []Verdict {
	pairs := make([]Pair, s.pairs)
	for i := range pairs {
		drift := r.NormFloat64() * 0.3
		pairs[i] = Pair{A: RoundValues{}, B: RoundValues{}}
		for _, p := range ps {
			shift := 0.0
			if p.metric == shifted {
				shift = s.shift
			}
			pairs[i].A[p.metric], pairs[i].B[p.metric] = p.pair(r, s, i, drift, shift)
		}
	}
	return ComparePairs(pairs, PairedOptions{Prior: prior})
}

// simulateSeries runs history A-vs-A comparisons, pooling each one's noise
// into the next, and returns the prior the comparison after them sees.
func simulateSeries(ps []noiseProfile, s simSetup, history int, r *rand.Rand) map[string]PriorNoise {
	prior := map[string]PriorNoise{}
	for range history {
		for _, v := range simulateComparison(ps, simSetup{pairs: s.pairs, order: s.order, orderEffect: s.orderEffect}, "", nil, r) {
			p := prior[v.Metric]
			p.Add(v)
			prior[v.Metric] = p
		}
	}
	return prior
}

// TestPairedFamilyAA: an A-vs-A comparison of all eight metrics, with and
// without the noise of earlier comparisons pooled, calls some primary
// metric better or worse in at most 5 % of comparisons (the bar is "no
// better or worse on every metric"), and some secondary metric in at most
// 5 %: each family's intervals hold jointly.
func TestPairedFamilyAA(t *testing.T) {
	n := seeds(t, 4000)
	limit := 0.05
	if testing.Short() {
		limit += 2 * math.Sqrt(0.05*0.95/float64(n))
	}
	for _, history := range []int{0, 5, 10} {
		for _, pairs := range []int{3, 6} {
			s := simSetup{pairs: pairs, order: "abba", orderEffect: 0.02}
			primary, secondary, pooled := 0, 0, 0
			perMetric := map[string]int{}
			for seed := range uint64(n) {
				r := rand.New(rand.NewPCG(seed+seedOffsetFromEnv(), 0x22))
				prior := simulateSeries(profiles, s, history, r)
				vs := simulateComparison(profiles, s, "", prior, r)
				for _, v := range vs {
					if v.PooledFrom > 0 {
						pooled++
					}
					if v.Outcome == Better || v.Outcome == Worse {
						perMetric[v.Metric]++
					}
				}
				p, s := falseVerdicts(vs)
				if p {
					primary++
				}
				if s {
					secondary++
				}
			}
			fp, fs := float64(primary)/float64(n), float64(secondary)/float64(n)
			t.Logf("A/A, %d pairs, %2d earlier comparisons pooled: a primary metric false %.2f%%, a secondary %.2f%% (%v), pooled in %.0f%% of verdicts",
				pairs, history, 100*fp, 100*fs, perMetric, 100*float64(pooled)/float64(n*len(profiles)))
			if fp > limit || fs > limit {
				t.Errorf("A/A with %d pairs and %d earlier comparisons: a false better/worse on a primary metric in %.2f%%, a secondary in %.2f%%, want ≤ %.1f%%",
					pairs, history, 100*fp, 100*fs, 100*limit)
			}
		}
	}
}

// TestPairedPooledPower: with five earlier comparisons' noise pooled, a
// +15 % CPU per request is found in 3 pairs nearly always (the bar asks
// 5 out of 5 real comparisons), and a 10 % change is reported per metric.
func TestPairedPooledPower(t *testing.T) {
	n := seeds(t, 2000)
	for _, p := range profiles {
		for _, change := range []float64{1.10, 1.15} {
			shift := math.Log(change)
			if HigherIsBetter(p.metric) {
				shift = -shift
			}
			s := simSetup{pairs: 3, order: "abba", orderEffect: 0.02, shift: shift}
			counts := map[Outcome]int{}
			for seed := range uint64(n) {
				r := rand.New(rand.NewPCG(seed+seedOffsetFromEnv(), 0x33))
				prior := simulateSeries(profiles, s, 5, r)
				for _, v := range simulateComparison(profiles, s, p.metric, prior, r) {
					if v.Metric == p.metric {
						counts[v.Outcome]++
					}
				}
			}
			power := float64(counts[Worse]) / float64(n)
			t.Logf("%+3.0f%% worse %-22s σ=%4.1f%% 3 pairs, 5 earlier pooled: power %.1f%%, reversed %.2f%%",
				100*(change-1), p.metric, 100*p.sigma, 100*power, 100*float64(counts[Better])/float64(n))
			if reversed := float64(counts[Better]) / float64(n); reversed > 0.01 {
				t.Errorf("%s %+.0f%%: called better in %.2f%%", p.metric, 100*(change-1), 100*reversed)
			}
			if p.metric == MetricCPUMicrosPerReq && change == 1.15 && power < 0.95 {
				t.Errorf("cpu_us_per_request +15 %%, 3 pairs, 5 earlier comparisons pooled: power %.1f%%, want ≥ 95 %%", 100*power)
			}
		}
	}
}
