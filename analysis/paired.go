package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// Paired verdicts: is build B better or worse than build A?
//
// A comparison runs N pairs of rounds, one round of each build per pair, on
// one host, interleaved. Run-to-run drift on a shared machine (±30 %) is
// larger than the effects people look for (5–20 %), but it moves both
// rounds of a pair alike, so each pair gives one ratio B/A and the ratios,
// not the raw values, are compared with 1.
//
// The interval: with fewer than 6 pairs no rank test can reach 95 % (with 3
// pairs the sign test's smallest two-sided p is 0.25), so the 95 % interval
// of the geometric-mean ratio comes from the pairs' log-ratios with
// Student's t at n−1 degrees of freedom. Log-ratios because a ratio is
// multiplicative (×1.1 and ×1/1.1 cancel) and round values are skewed. The
// sign count (how many pairs B won) is reported beside it; from 6 pairs the
// Wilcoxon signed-rank test must agree too. Which was used is in
// Verdict.Method.
//
// The decision, with the effect-size floor f (default 3 %):
//   - the interval excludes no change and the geometric-mean ratio is
//     beyond ±f: better or worse (from 6 pairs, if Wilcoxon agrees at 5 %);
//   - the interval excludes no change but the ratio is within ±f:
//     no_difference (a significant change that small is not worth acting
//     on), and so is an interval that lies within ±f;
//   - anything else is inconclusive, with the reason: too few pairs, the
//     pairs disagree, the interval spans both no change and the floor,
//     disturbed rounds.
//
// So an A-vs-A comparison is called better or worse at most as often as
// the 95 % interval misses (5 %, two-sided), less where the floor catches
// it; TestPairedAccuracyAA holds that on simulated noise per metric.
//
// Deciding eight metrics at 95 % each would call some metric of an A-vs-A
// comparison better or worse about a third of the time, so ComparePairs
// makes the intervals hold jointly (Bonferroni, PairedOptions.Family); and
// so that 3 pairs still resolve a 15 % change, the standard deviation is
// pooled with that of earlier comparisons of the scenario on the host
// (PairedOptions.Prior, PriorNoise). TestPairedFamilyAA and
// TestPairedPooledPower hold both on simulated noise.
//
// An A-vs-A comparison (the same build on both sides) is a first-class use:
// its intervals are this machine's noise floor for each metric (Verdict.Noise).

// Defaults of PairedOptions.
const (
	// DefaultFloor: effects under 3 % are rarely worth a change, and
	// CPU per request, the steadiest metric, varies ±1–2 % between rounds.
	DefaultFloor = 0.03
	// DefaultMinPairs: t with 1 degree of freedom (2 pairs) gives a 95 %
	// interval ±12.7 standard errors wide — no answer a person can use.
	DefaultMinPairs = 3
	// DefaultWilcoxonFrom: with 6 pairs the signed-rank test's smallest
	// two-sided p is 0.031, the first n where it can reach 0.05.
	DefaultWilcoxonFrom = 6
	// DefaultAlpha: 95 % intervals, two-sided.
	DefaultAlpha = 0.05
)

// PairedOptions tune the paired verdicts. The zero value is the defaults.
type PairedOptions struct {
	// Floor is the effect-size floor, as a fraction (0.03 is 3 %); 0 means
	// DefaultFloor. Floors overrides it per metric name.
	Floor  float64
	Floors map[string]float64
	// MinPairs is the fewest undisturbed pairs for a verdict (0: DefaultMinPairs).
	MinPairs int
	// WilcoxonFrom is the number of pairs from which the Wilcoxon
	// signed-rank test must confirm a change (0: DefaultWilcoxonFrom).
	WilcoxonFrom int
	// Alpha: the interval is 1−Alpha, two-sided (0: DefaultAlpha).
	Alpha float64
	// Family is the number of metrics decided together: each interval is
	// then 1−Alpha/Family (Bonferroni), so that over all of them the
	// chance of any false better or worse stays within Alpha. ComparePairs
	// sets it to the metrics it can decide; 0 or 1 is one metric alone.
	Family int
	// Primary names the metrics the comparison decides on (nil:
	// DefaultPrimary). ComparePairs spends the joint coverage on them as
	// one family and reports the other metrics as a second family with
	// its own joint coverage, so adding metrics to a report does not
	// widen the intervals a decision rests on.
	Primary []string
	// Prior is, per metric, the noise earlier comparisons of the same
	// scenario on the same host measured; it is pooled with this
	// comparison's own (see PriorNoise).
	Prior map[string]PriorNoise
}

// PriorNoise is the pair-to-pair noise of one metric that earlier
// comparisons measured: Σ df·sd² of their pair log-ratios and Σ df.
//
// Why pool: with 3 pairs the interval's t has 2 degrees of freedom (its 95 %
// quantile is 4.30) and the standard deviation itself comes from three
// numbers, so it is often twice the true one or half of it: a real +15 %
// is missed about one time in three. The noise of a scenario on a host
// changes little from one comparison to the next, so earlier comparisons'
// pairs estimate it far better: with five earlier 3-pair comparisons the
// pooled t has 12 degrees of freedom (quantile 2.18). A comparison's own
// pairs stay in the pool, and when they are clearly noisier than the
// history (an F test at 1 %) the history is set aside: pooling then would
// make a noisy comparison look precise.
type PriorNoise struct {
	SS          float64
	DF          int
	Comparisons int
}

// Add pools an earlier comparison's verdict of the metric; verdicts from
// fewer than 2 pairs or without a recorded SD add nothing.
func (p *PriorNoise) Add(v Verdict) {
	if v.Pairs < 2 || !(v.SD > 0) || math.IsInf(v.SD, 0) {
		return
	}
	df := v.Pairs - 1
	p.SS += float64(df) * v.SD * v.SD
	p.DF += df
	p.Comparisons++
}

// priorHomogeneity is the F test's level below which a comparison counts as
// noisier than its history. Every comparison whose noise is like its
// history's is set aside this often, at a cost in power (at 5 %, a +15 %
// CPU change in 3 pairs was found in 93 % of simulated comparisons instead
// of 97 %); 1 % still catches a round set twice as noisy as usual.
const priorHomogeneity = 0.01

// DefaultPrimary are the metrics a comparison decides on unless told
// otherwise: what a person judges a build by — its cost (CPU per request),
// its typical and its tail latency, its throughput.
var DefaultPrimary = []string{MetricCPUMicrosPerReq, MetricP50Ms, MetricP99Ms, MetricRPS}

// primary reports whether metric is in the primary family.
func (o PairedOptions) primary(metric string) bool {
	if o.Primary == nil {
		return slices.Contains(DefaultPrimary, metric)
	}
	return slices.Contains(o.Primary, metric)
}

// ParseMetrics reads a comma-separated list of metric names (Metrics) or
// their short labels ("cpu", "p50", "p99", "throughput"), as --decide-on
// takes them; the names come back in Metrics order, without repeats.
func ParseMetrics(s string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		m, ok := metricAliases[f]
		if !ok && slices.Contains(Metrics, f) {
			m, ok = f, true
		}
		if !ok {
			return nil, fmt.Errorf("unknown metric %q: use %s (or cpu, alloc, gc, p50, p95, p99, throughput, heap, rss, rows)", f, strings.Join(Metrics, ", "))
		}
		want[m] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no metric in %q", s)
	}
	var out []string
	for _, m := range Metrics {
		if want[m] {
			out = append(out, m)
		}
	}
	return out, nil
}

var metricAliases = map[string]string{
	"cpu": MetricCPUMicrosPerReq, "p50": MetricP50Ms, "p95": MetricP95Ms, "p99": MetricP99Ms,
	"rps": MetricRPS, "throughput": MetricRPS, "heap": MetricHeapBytes, "rss": MetricRSSBytes, "rows": MetricRowsReadPerRequest,
	"alloc": MetricAllocBytesPerReq, "gc": MetricGCPer1kRequests,
}

func (o PairedOptions) floor(metric string) float64 {
	if f, ok := o.Floors[metric]; ok && f > 0 {
		return f
	}
	if o.Floor > 0 {
		return o.Floor
	}
	return DefaultFloor
}

func (o PairedOptions) minPairs() int {
	if o.MinPairs > 0 {
		return max(o.MinPairs, 2)
	}
	return DefaultMinPairs
}

func (o PairedOptions) wilcoxonFrom() int {
	if o.WilcoxonFrom > 0 {
		return o.WilcoxonFrom
	}
	return DefaultWilcoxonFrom
}

func (o PairedOptions) alpha() float64 {
	if o.Alpha > 0 && o.Alpha < 1 {
		return o.Alpha
	}
	return DefaultAlpha
}

// PairValues are one pair's values of a metric. A value ≤ 0 or not finite
// means "not measured" and leaves the pair out of that metric.
type PairValues struct {
	A, B float64
	// Disturbed is set when either round had foreign load on the host; the
	// pair is left out of the verdict.
	Disturbed bool
}

// measured: both sides have the metric.
func (p PairValues) measured() bool {
	return p.A > 0 && p.B > 0 && !math.IsInf(p.A, 0) && !math.IsInf(p.B, 0)
}

// usable: measured and undisturbed, so it counts towards a verdict.
func (p PairValues) usable() bool { return p.measured() && !p.Disturbed }

// HigherIsBetter reports whether a larger value of metric is better
// (throughput); for every other metric a smaller one is.
func HigherIsBetter(metric string) bool { return metric == MetricRPS }

// PairedVerdict decides one metric from its pairs. See the comment above
// DefaultFloor for how.
func PairedVerdict(metric string, pairs []PairValues, opts PairedOptions) Verdict {
	alpha := opts.alpha()
	family := max(opts.Family, 1)
	v := pairedVerdict(metric, pairs, opts, func(df int) float64 {
		return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - alpha/float64(family)/2)
	}, ruleFixed)
	if v.Pairs >= opts.minPairs() {
		v.Family = family
	}
	return v
}

// rule says how pairedVerdict classifies an interval: ruleFixed is the
// fixed-pairs rule (every interval gets an outcome); ruleLook is one look of
// a sequential comparison, which only decides better, worse or a
// no_difference within the floor and otherwise leaves the metric undecided
// (Inconclusive, the reason saying what the interval still spans).
type rule int

const (
	ruleFixed rule = iota
	ruleLook
)

// pairedVerdict is PairedVerdict with the interval's critical t at df
// degrees of freedom given by crit (+Inf: no interval at this look).
func pairedVerdict(metric string, pairs []PairValues, opts PairedOptions, crit func(df int) float64, how rule) Verdict {
	v := Verdict{Metric: metric, Method: MethodTLogRatio, Floor: opts.floor(metric), HigherIsBetter: HigherIsBetter(metric)}
	var logs []float64
	measured, disturbed := 0, 0
	for _, p := range pairs {
		if !p.measured() {
			continue
		}
		measured++
		if p.Disturbed {
			disturbed++
			continue
		}
		logs = append(logs, math.Log(p.B/p.A))
	}
	n := len(logs)
	v.Pairs = n
	if n >= opts.wilcoxonFrom() {
		v.Method = MethodTLogRatioWilcoxon
	}
	if n > 0 {
		v.describe(logs)
	}
	need := opts.minPairs()
	switch {
	case measured == 0:
		v.Outcome, v.Reason = Inconclusive, "not measured on both sides"
		if metric == MetricAllocBytesPerReq || metric == MetricGCPer1kRequests {
			// Say why, since a Node.js target never has them.
			v.Reason += ": it needs a Go target's runtime counters (probes.heap.metric); a Node.js target has no allocation counter"
		}
		v.Summary = v.line()
		return v
	case n < need && disturbed > 0:
		v.Outcome = Inconclusive
		v.Reason = fmt.Sprintf("disturbed rounds: %d of %d pairs had foreign load on the host, %d undisturbed %s too few (need %d; --rerun-disturbed reruns them)",
			disturbed, measured, n, plural(n, "is", "are"), need)
		v.Summary = v.line()
		return v
	case n < need:
		v.Outcome = Inconclusive
		v.Reason = fmt.Sprintf("too few pairs: %d (need %d)", n, need)
		v.Summary = v.line()
		return v
	}

	mean, sd := meanSD(logs)
	v.SD = sd
	alpha := opts.alpha()
	se, df, noisier := v.pool(sd, n, opts.Prior[metric])
	q := crit(df)
	v.Ratio = math.Exp(mean)
	lo, hi := math.Inf(-1), math.Inf(1)
	if half := q * se; !math.IsInf(half, 0) && !math.IsNaN(half) {
		lo, hi = mean-half, mean+half
		if l, h := math.Exp(lo), math.Exp(hi); l > 0 && !math.IsInf(h, 0) {
			v.CI = [2]float64{l, h}
		}
	}
	f := math.Log1p(v.Floor)
	if n >= opts.wilcoxonFrom() {
		v.WilcoxonP = WilcoxonSignedRank(logs)
	}

	significant := lo > 0 || hi < 0
	switch {
	case significant && math.Abs(mean) >= f:
		if n >= opts.wilcoxonFrom() && v.WilcoxonP >= alpha {
			v.Outcome = Inconclusive
			v.Reason = fmt.Sprintf("the Wilcoxon signed-rank test does not confirm the interval (p = %.3f)", v.WilcoxonP)
			break
		}
		if (mean > 0) == v.HigherIsBetter {
			v.Outcome = Better
		} else {
			v.Outcome = Worse
		}
	case significant && how == ruleFixed:
		v.Outcome = NoDifference
		v.Reason = fmt.Sprintf("a significant change, but smaller than the %s floor", pct(v.Floor))
	case lo >= -f && hi <= f:
		v.Outcome = NoDifference
	case how == ruleLook:
		// Undecided at this look: the interval reaches past the floor on
		// one side at least, so more pairs may still decide it.
		v.Outcome = Inconclusive
		v.Reason = fmt.Sprintf("undecided after %d %s: the interval still spans the %s floor", n, plural(n, "pair", "pairs"), pct(v.Floor))
	default:
		v.Outcome = Inconclusive
		won, lost := v.PairsBBetter, v.pairsBWorse(logs)
		if won > 0 && lost > 0 {
			v.Reason = fmt.Sprintf("pairs disagree: B better in %d, worse in %d of %d", won, lost, n)
		} else {
			v.Reason = fmt.Sprintf("the interval spans both no change and the %s floor: %d pairs cannot resolve a change this size at this noise", pct(v.Floor), n)
		}
	}
	if noisier != "" && v.Outcome == Inconclusive {
		v.Reason += "; " + noisier
	}
	if disturbed > 0 && v.Reason != "" {
		v.Reason += fmt.Sprintf(" (%d disturbed %s left out)", disturbed, plural(disturbed, "pair", "pairs"))
	}
	v.Summary = v.line()
	return v
}

// pool decides the interval's standard error and degrees of freedom from
// the comparison's own n pairs (sample sd) and the prior noise, and sets
// the verdict's method, DF and PooledFrom. noisier is set when the history
// was set aside because these pairs are noisier than it.
func (v *Verdict) pool(sd float64, n int, prior PriorNoise) (se float64, df int, noisier string) {
	own := n - 1
	se, df = sd/math.Sqrt(float64(n)), own
	v.DF = df
	if prior.DF <= 0 || !(prior.SS > 0) {
		return se, df, ""
	}
	hist := prior.SS / float64(prior.DF)
	if p := 1 - (distuv.F{D1: float64(own), D2: float64(prior.DF)}).CDF(sd*sd/hist); p < priorHomogeneity {
		return se, df, fmt.Sprintf("these pairs are noisier than the %d earlier %s of this scenario on this host (F test p = %.3f), so that history was set aside",
			prior.Comparisons, plural(prior.Comparisons, "comparison", "comparisons"), p)
	}
	df = prior.DF + own
	pooled := math.Sqrt((prior.SS + float64(own)*sd*sd) / float64(df))
	v.PooledFrom, v.DF = prior.Comparisons, df
	if v.Method == MethodTLogRatioWilcoxon {
		v.Method = MethodTLogRatioPooledWilcoxon
	} else {
		v.Method = MethodTLogRatioPooled
	}
	return pooled / math.Sqrt(float64(n)), df, ""
}

// IntervalNote says what the verdicts' intervals hold over and where their
// noise came from: "the intervals hold jointly over the 4 primary metrics,
// and over the 4 others as a second family; noise pooled with 5 earlier
// comparisons of this scenario on this host".
func IntervalNote(vs []Verdict) string {
	family, primary, secondary, pooled, looks := 0, 0, 0, 0, 0
	split := false
	for _, v := range vs {
		family = max(family, v.Family)
		pooled = max(pooled, v.PooledFrom)
		looks = max(looks, v.Looks)
		if v.Family > 0 {
			if v.Primary {
				primary, split = v.Family, true
			} else {
				secondary = v.Family
			}
		}
	}
	var parts []string
	switch {
	case split && secondary > 1:
		parts = append(parts, fmt.Sprintf("the intervals hold jointly over the %d primary %s, and over the %d others as a second family",
			primary, plural(primary, "metric", "metrics"), secondary))
	case split && secondary == 1:
		parts = append(parts, fmt.Sprintf("the intervals hold jointly over the %d primary %s, the other metric's on its own", primary, plural(primary, "metric", "metrics")))
	case split && primary > 1:
		parts = append(parts, fmt.Sprintf("the intervals hold jointly over the %d primary metrics", primary))
	case family > 1:
		parts = append(parts, fmt.Sprintf("the intervals hold jointly over %d metrics", family))
	}
	if looks > 1 && len(parts) > 0 {
		parts[0] += fmt.Sprintf(", at every one of the %d looks (one after each pair: group-sequential)", looks)
	}
	switch {
	case pooled > 0:
		parts = append(parts, fmt.Sprintf("noise pooled with %d earlier %s of this scenario on this host", pooled, plural(pooled, "comparison", "comparisons")))
	case family > 1 && looks == 0:
		// Bonferroni over several metrics with a handful of pairs' own
		// noise resolves only large changes; say how to get more.
		parts = append(parts, "no earlier comparison of this scenario on this host to pool noise with: an A-vs-A comparison first lets later ones resolve smaller changes")
	case family > 1:
		parts = append(parts, "no earlier comparison of this scenario on this host to pool noise with: pairs were added until the primary metrics were decided")
	}
	return strings.Join(parts, "; ")
}

// describe fills the pair statistics that need no interval.
func (v *Verdict) describe(logs []float64) {
	ratios := make([]float64, len(logs))
	for i, d := range logs {
		ratios[i] = math.Exp(d)
		if (d > 0) == v.HigherIsBetter && d != 0 {
			v.PairsBBetter++
		}
	}
	v.MinRatio, v.MaxRatio = slices.Min(ratios), slices.Max(ratios)
	v.MedianRatio = Median(ratios)
	v.Ratio = math.Exp(mean(logs))
	won, lost := v.PairsBBetter, v.pairsBWorse(logs)
	v.SignP = SignTest(won, lost)
}

func (v *Verdict) pairsBWorse(logs []float64) int {
	n := 0
	for _, d := range logs {
		if d != 0 && (d > 0) != v.HigherIsBetter {
			n++
		}
	}
	return n
}

// Noise is the half-width of the verdict's interval as a fraction of the
// ratio: in an A-vs-A comparison, the smallest change these pairs could have
// told from noise on this machine (0 without an interval).
func (v Verdict) Noise() float64 {
	if v.CI[0] <= 0 || v.CI[1] <= 0 {
		return 0
	}
	return max(v.CI[1]-1, 1-v.CI[0])
}

// metricLabels name the metrics in text.
var metricLabels = map[string]string{
	MetricP50Ms: "p50", MetricP95Ms: "p95", MetricP99Ms: "p99", MetricRPS: "throughput",
	MetricCPUMicrosPerReq: "CPU/request", MetricHeapBytes: "post-GC heap", MetricRSSBytes: "RSS",
	MetricRowsReadPerRequest: "rows read/request",
	MetricAllocBytesPerReq:   "allocated/request", MetricGCPer1kRequests: "GC cycles/1k requests",
}

// MetricLabel is the short name of a metric in text ("p50", "CPU/request").
func MetricLabel(metric string) string {
	if l, ok := metricLabels[metric]; ok {
		return l
	}
	return metric
}

// line is the verdict in one line: "p50: B won 4/4 pairs (−10 % to −29 %),
// median −17 %, 95 % CI [−24 %, −9 %] → better".
func (v Verdict) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", MetricLabel(v.Metric))
	if v.Pairs == 0 {
		fmt.Fprintf(&b, "→ %s (%s)", v.Outcome, v.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, "B won %d/%d %s", v.PairsBBetter, v.Pairs, plural(v.Pairs, "pair", "pairs"))
	lo, hi := v.MinRatio-1, v.MaxRatio-1
	if lo < 0 && hi < 0 {
		lo, hi = hi, lo // nearest to no change first: (−10 % to −29 %)
	}
	if v.Pairs == 1 {
		fmt.Fprintf(&b, " (%s)", signedPct(lo))
	} else {
		fmt.Fprintf(&b, " (%s to %s)", signedPct(lo), signedPct(hi))
	}
	fmt.Fprintf(&b, ", median %s", signedPct(v.MedianRatio-1))
	if v.CI[0] > 0 {
		fmt.Fprintf(&b, ", 95 %% CI [%s]", ciText(v.CI, ", "))
	}
	fmt.Fprintf(&b, " → %s", v.Outcome)
	if v.Reason != "" {
		fmt.Fprintf(&b, " (%s)", v.Reason)
	}
	return b.String()
}

// signedPct formats a fraction as a signed percentage with a true minus
// sign: "+4.2 %", "−17 %", "0 %".
func signedPct(x float64) string {
	p := x * 100
	a := math.Abs(p)
	var s string
	if a >= 9.95 {
		s = fmt.Sprintf("%.0f %%", a)
	} else {
		s = fmt.Sprintf("%.1f %%", a)
	}
	switch {
	case s == "0.0 %":
		return "0 %"
	case p < 0:
		return "−" + s
	default:
		return "+" + s
	}
}

// pct formats a positive fraction: "3 %", "2.5 %".
func pct(x float64) string {
	s := fmt.Sprintf("%.1f", x*100)
	s = strings.TrimSuffix(s, ".0")
	return s + " %"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// meanSD returns the mean and the sample standard deviation (n−1).
func meanSD(xs []float64) (m, sd float64) {
	m = mean(xs)
	if len(xs) < 2 {
		return m, 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return m, math.Sqrt(ss / float64(len(xs)-1))
}

// SignTest is the exact two-sided sign-test p-value of won successes
// against lost failures (ties left out): the probability, under "each side
// equally likely to win", of a split at least this lopsided.
func SignTest(won, lost int) float64 {
	n := won + lost
	if n == 0 {
		return 1
	}
	k := min(won, lost)
	b := distuv.Binomial{N: float64(n), P: 0.5}
	return min(1, 2*b.CDF(float64(k)))
}

// WilcoxonSignedRank is the two-sided p-value of the Wilcoxon signed-rank
// test that the differences d are centred on 0. Zeros are dropped, tied
// magnitudes get their average rank; the distribution is exact (by
// counting) up to 50 non-zero differences and normal beyond.
func WilcoxonSignedRank(d []float64) float64 {
	var nz []float64
	for _, x := range d {
		if x != 0 && !math.IsNaN(x) {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return 1
	}
	abs := make([]float64, n)
	for i, x := range nz {
		abs[i] = math.Abs(x)
	}
	r := ranks(abs) // average ranks for ties
	// Work in doubled ranks: average ranks are multiples of 1/2.
	wplus := 0
	r2 := make([]int, n)
	for i, x := range nz {
		r2[i] = int(math.Round(2 * r[i]))
		if x > 0 {
			wplus += r2[i]
		}
	}
	total := 0
	for _, x := range r2 {
		total += x
	}
	if n > 50 {
		// Normal approximation with the tie correction folded into the variance.
		m := float64(total) / 4
		v := 0.0
		for _, x := range r2 {
			v += float64(x) * float64(x) / 4
		}
		z := (math.Abs(float64(wplus)-m) - 0.5) / math.Sqrt(v)
		return min(1, 2*normalSF(max(z, 0)))
	}
	// counts[s] = number of sign assignments whose positive doubled-rank sum is s.
	counts := make([]float64, total+1)
	counts[0] = 1
	for _, x := range r2 {
		for s := total; s >= x; s-- {
			counts[s] += counts[s-x]
		}
	}
	all := math.Pow(2, float64(n))
	lower, upper := 0.0, 0.0
	for s, c := range counts {
		if s <= wplus {
			lower += c
		}
		if s >= wplus {
			upper += c
		}
	}
	return min(1, 2*min(lower, upper)/all)
}
