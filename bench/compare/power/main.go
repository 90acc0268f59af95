// Command power simulates paired comparisons at given round-to-round noise
// levels with the real verdict rule (analysis.ComparePairs: the intervals
// hold jointly over the metrics, and each comparison pools the noise of the
// -history comparisons before it on the same host) and prints, per metric
// and number of pairs, how often the same build on both sides is called
// better or worse (false verdicts), how often any metric of an A-vs-A
// comparison is (the bar: none), and how often a true 10 % and 15 %
// regression of the metric is called worse (power). bench/compare/run.sh
// runs it at the noise its A-vs-A comparisons measured:
//
//	go run ./bench/compare/power -sigma cpu_us_per_request=0.04,p50_ms=0.08 -history 5
//
// The model is that of analysis/paired_sim_test.go: a round's value is
// base·exp(drift_pair + order + noise_round + shift_B), drift ±30 % shared
// by both rounds of a pair, a 2 % penalty on each pair's first round (ABBA
// alternates it), normal noise of the given σ.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul/analysis"
)

func main() {
	sigmas := flag.String("sigma", "cpu_us_per_request=0.025", "metric=σ of log(value) per round, comma-separated")
	seeds := flag.Int("seeds", 4000, "simulated comparisons per cell")
	history := flag.Int("history", 5, "earlier A-vs-A comparisons of the same pair count whose noise each comparison pools")
	flag.Parse()
	m := map[string]float64{}
	for _, kv := range strings.Split(*sigmas, ",") {
		k, v, ok := strings.Cut(kv, "=")
		s, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || s <= 0 {
			fmt.Fprintf(os.Stderr, "power: -sigma %q: want metric=σ\n", kv)
			os.Exit(2)
		}
		m[k] = s
	}
	if *history < 0 || *seeds <= 0 {
		fmt.Fprintln(os.Stderr, "power: -history must be ≥ 0 and -seeds > 0")
		os.Exit(2)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	sim := simulator{sigma: m, names: names, history: *history}
	fmt.Printf("%d metrics decided together, each comparison pooling the noise of %d earlier ones.\n\n", len(names), *history)
	fmt.Println("| metric | σ | pairs | false better/worse (A/A) | power, 10 % worse | power, 15 % worse |")
	fmt.Println("|---|---|---|---|---|---|")
	anyFalse := map[int]float64{}
	for _, pairs := range []int{3, 6, 10} {
		aa, someFalse := sim.rates(pairs, "", 0, *seeds)
		anyFalse[pairs] = someFalse
		for _, name := range names {
			fmt.Printf("| %s | %.1f %% | %d | %.1f %% | %.1f %% | %.1f %% |\n", name, 100*m[name], pairs,
				100*aa[name], 100*sim.power(pairs, name, math.Log(1.10), *seeds), 100*sim.power(pairs, name, math.Log(1.15), *seeds))
		}
	}
	fmt.Println()
	for _, pairs := range []int{3, 6, 10} {
		fmt.Printf("A vs A, %d pairs: some metric called better or worse in %.1f %% of comparisons.\n", pairs, 100*anyFalse[pairs])
	}
}

type simulator struct {
	sigma   map[string]float64
	names   []string
	history int
}

// comparison simulates one comparison of every metric, B's metric shifted
// by shift (a regression: higher where lower is better), pooling prior.
func (s simulator) comparison(r *rand.Rand, pairs int, shifted string, shift float64, prior map[string]analysis.PriorNoise) []analysis.Verdict {
	ps := make([]analysis.Pair, pairs)
	for i := range ps {
		drift := r.NormFloat64() * 0.3
		oa, ob := 0.02, 0.0
		if i%2 == 1 {
			oa, ob = 0, 0.02
		}
		ps[i] = analysis.Pair{A: analysis.RoundValues{}, B: analysis.RoundValues{}}
		for _, name := range s.names {
			d := 0.0
			if name == shifted {
				d = shift
				if analysis.HigherIsBetter(name) {
					d = -shift
				}
			}
			ps[i].A[name] = 100 * math.Exp(drift+oa+r.NormFloat64()*s.sigma[name])
			ps[i].B[name] = 100 * math.Exp(drift+ob+r.NormFloat64()*s.sigma[name]+d)
		}
	}
	return analysis.ComparePairs(ps, analysis.PairedOptions{Prior: prior})
}

// series returns the prior after s.history A-vs-A comparisons.
func (s simulator) series(r *rand.Rand, pairs int) map[string]analysis.PriorNoise {
	prior := map[string]analysis.PriorNoise{}
	for range s.history {
		for _, v := range s.comparison(r, pairs, "", 0, nil) {
			p := prior[v.Metric]
			p.Add(v)
			prior[v.Metric] = p
		}
	}
	return prior
}

// rates: per metric, the share of comparisons that called it better or
// worse, and the share in which any metric was.
func (s simulator) rates(pairs int, shifted string, shift float64, seeds int) (map[string]float64, float64) {
	per := map[string]float64{}
	anyHit := 0.0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		hit := false
		for _, v := range s.comparison(r, pairs, shifted, shift, s.series(r, pairs)) {
			if v.Outcome == analysis.Better || v.Outcome == analysis.Worse {
				per[v.Metric]++
				hit = true
			}
		}
		if hit {
			anyHit++
		}
	}
	for k := range per {
		per[k] /= float64(seeds)
	}
	return per, anyHit / float64(seeds)
}

// power: the share of comparisons that called the shifted metric worse.
func (s simulator) power(pairs int, shifted string, shift float64, seeds int) float64 {
	n := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		for _, v := range s.comparison(r, pairs, shifted, shift, s.series(r, pairs)) {
			if v.Metric == shifted && v.Outcome == analysis.Worse {
				n++
			}
		}
	}
	return float64(n) / float64(seeds)
}
