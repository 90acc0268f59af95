// Command power simulates paired comparisons at given round-to-round noise
// levels with the real verdict rule (analysis.PairedVerdict) and prints, per
// metric and number of pairs, how often the same build on both sides is
// called better or worse (false verdicts) and how often a true 10 % and
// 15 % regression is called worse (power). bench/compare/run.sh runs it at
// the noise its A-vs-A comparisons measured:
//
//	go run ./bench/compare/power -sigma cpu_us_per_request=0.04,p50_ms=0.08
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
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Println("| metric | σ | pairs | false better/worse (A/A) | power, 10 % worse | power, 15 % worse |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, name := range names {
		for _, pairs := range []int{3, 6, 10} {
			aa := rate(name, m[name], pairs, 0, *seeds, func(o analysis.Outcome) bool { return o == analysis.Better || o == analysis.Worse })
			worse := func(o analysis.Outcome) bool { return o == analysis.Worse }
			p10 := rate(name, m[name], pairs, math.Log(1.10), *seeds, worse)
			p15 := rate(name, m[name], pairs, math.Log(1.15), *seeds, worse)
			fmt.Printf("| %s | %.1f %% | %d | %.1f %% | %.1f %% | %.1f %% |\n", name, 100*m[name], pairs, 100*aa, 100*p10, 100*p15)
		}
	}
}

// rate is the share of seeds comparisons whose outcome satisfies hit, with
// B's true log-ratio shift (a regression: higher where lower is better).
func rate(metric string, sigma float64, pairs int, shift float64, seeds int, hit func(analysis.Outcome) bool) float64 {
	if analysis.HigherIsBetter(metric) {
		shift = -shift
	}
	n := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		pv := make([]analysis.PairValues, pairs)
		for i := range pv {
			drift := r.NormFloat64() * 0.3
			oa, ob := 0.02, 0.0
			if i%2 == 1 {
				oa, ob = 0, 0.02
			}
			pv[i] = analysis.PairValues{
				A: 100 * math.Exp(drift+oa+r.NormFloat64()*sigma),
				B: 100 * math.Exp(drift+ob+r.NormFloat64()*sigma+shift),
			}
		}
		if hit(analysis.PairedVerdict(metric, pv, analysis.PairedOptions{}).Outcome) {
			n++
		}
	}
	return float64(n) / float64(seeds)
}
