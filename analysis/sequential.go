package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// Sequential comparisons: add a pair at a time until the metrics are decided.
//
// A fixed number of pairs is either too few (on a host with no history, 3
// pairs give the t interval 2 degrees of freedom, and a +30 % change comes
// back inconclusive) or too many (a +50 % change is plain after 3). So a
// sequential comparison looks at its pairs after every pair from the third
// on, decides each primary metric — better, worse, or no_difference within
// the floor — or runs another pair, and stops when every primary metric is
// decided or at MaxPairs.
//
// Looking after every pair and stopping at the first interval that excludes
// no change would call an A-vs-A comparison better or worse far more often
// than 5 %: each look is another chance. The intervals here are repeated
// confidence intervals of a group-sequential design (Jennison & Turnbull,
// "Repeated confidence intervals for group sequential clinical trials",
// Controlled Clinical Trials 5, 1984; "Group Sequential Methods with
// Applications to Clinical Trials", 2000, ch. 9): they hold jointly at
// every look, so a decision taken at any look keeps the error rate. The
// boundary at each look comes from an alpha-spending function (Lan &
// DeMets, "Discrete sequential boundaries for clinical trials",
// Biometrika 70, 1983): of the metric's α, the share α(t) is spent by
// information fraction t = pairs/MaxPairs, and the boundary of look k is
// the z at which, given the looks before it, the chance of crossing first
// at k is α(t_k) − α(t_{k−1}) (computed by the recursive numerical
// integration of Armitage, McPherson & Rowe 1969). Pairs that are
// disturbed or not measured add no information and no look. The noise is
// unknown, so each look's nominal level is turned into Student's t at the
// look's degrees of freedom (Jennison & Turnbull 2000, §3.8: the
// "significance level approach"), and TestSequentialFamilyAA checks the
// result on simulated comparisons.
//
// Across metrics the α is split as in the fixed rule (Bonferroni within
// each family), so the chance of any false better or worse among the
// primary metrics, at any look, stays within Alpha, and likewise for the
// secondary family.

// Defaults of SequentialOptions.
const (
	// DefaultMaxPairs: at this machine's noise 10 pairs resolve a +15 %
	// CPU per request with no history to pool (TestSequentialPower), and a
	// comparison of 30 s rounds stays within about 12 minutes.
	DefaultMaxPairs = 10
	// DefaultSpending is the alpha-spending function: in simulated
	// comparisons at this machine's noise, O'Brien–Fleming found a +15 %
	// CPU per request within 10 pairs in 80 % of loaded-noise comparisons,
	// Pocock in 62 % (a +30 % change stopped one pair later: 5 pairs
	// instead of 4 at the local noise).
	DefaultSpending = SpendingOBrienFleming
)

// Alpha-spending functions of a sequential comparison (two-sided α, t the
// information fraction in (0, 1]).
const (
	// SpendingOBrienFleming is Lan–DeMets' O'Brien–Fleming type,
	// α(t) = 2 − 2Φ(z_{1−α/2}/√t): almost nothing early, nearly the whole
	// α at the last look. The final interval is barely wider than a fixed
	// design's, but a comparison seldom stops before its last pairs.
	SpendingOBrienFleming = "obrien-fleming"
	// SpendingPocock is Lan–DeMets' Pocock type, α(t) = α·ln(1 + (e−1)t):
	// about even boundaries, so a large change stops the comparison early.
	SpendingPocock = "pocock"
)

// SequentialOptions bound a sequential comparison.
type SequentialOptions struct {
	// MaxPairs is the most pairs the comparison runs (0: DefaultMaxPairs);
	// the information fraction of a look is its usable pairs over it.
	MaxPairs int `json:"max_pairs,omitempty"`
	// Spending is SpendingOBrienFleming or SpendingPocock ("":
	// DefaultSpending).
	Spending string `json:"spending,omitempty"`
	// SpendRest makes the last look of a final evaluation spend all the α
	// left, as the last look of the design would: for a comparison stopped
	// by a time limit, which did not stop because of what its pairs showed.
	SpendRest bool `json:"spend_rest,omitempty"`
}

func (o SequentialOptions) maxPairs() int {
	if o.MaxPairs > 0 {
		return o.MaxPairs
	}
	return DefaultMaxPairs
}

func (o SequentialOptions) spending() string {
	if o.Spending == SpendingPocock {
		return SpendingPocock
	}
	return DefaultSpending
}

// Sequential is the state of a sequential comparison after its pairs so far.
type Sequential struct {
	// Verdicts has one verdict per metric in Metrics order. A decided
	// metric's verdict is the one of the look that decided it (DecidedAt);
	// an undecided one's is that of the last look: Inconclusive while the
	// comparison goes on, classified as the fixed rule would at the end.
	Verdicts []Verdict
	// Decided is set when every primary metric that can be decided is;
	// Undecided names the primary metrics that are not.
	Decided   bool
	Undecided []string
	// Pairs is the number of pairs looked at (disturbed ones included).
	Pairs int
}

// CompareSequential evaluates a sequential comparison over pairs in the
// order they ran, looking after every pair from the MinPairs-th usable one
// on (see the comment at the top of this file). With final set, the
// comparison has stopped: a metric still undecided gets the fixed rule's
// outcome at the last look (no_difference for a significant change below
// the floor; inconclusive, with the reason, otherwise). It is a pure
// function of its arguments: calling it again with one more pair gives the
// same decisions for the earlier looks.
func CompareSequential(pairs []Pair, opts PairedOptions, seq SequentialOptions, final bool) Sequential {
	byMetric, families := splitPairs(pairs, opts)
	res := Sequential{Pairs: len(pairs), Verdicts: make([]Verdict, 0, len(Metrics))}
	for _, m := range Metrics {
		primary := opts.primary(m)
		family := opts.Family
		if family == 0 {
			family = families[primary]
		}
		v := sequentialVerdict(m, byMetric[m], opts, seq, max(family, 1), final)
		v.Primary = primary
		if v.Pairs >= opts.minPairs() {
			v.Family = max(family, 1)
		}
		res.Verdicts = append(res.Verdicts, v)
		if primary && v.DecidedAt == 0 {
			res.Undecided = append(res.Undecided, m)
		}
	}
	res.Decided = len(res.Undecided) == 0 && families[true] > 0
	return res
}

// sequentialVerdict replays the looks of one metric: the first that
// decides it, or the last.
func sequentialVerdict(metric string, pairs []PairValues, opts PairedOptions, seq SequentialOptions, family int, final bool) Verdict {
	alpha := opts.alpha() / float64(family)
	maxPairs := float64(seq.maxPairs())
	spend := seq.spending()
	var times []float64
	var last Verdict
	lastN, lastK := 0, 0
	usable := 0
	for k := 1; k <= len(pairs); k++ {
		if pairs[k-1].usable() {
			usable++
		}
		if usable < opts.minPairs() || usable == lastN {
			continue
		}
		lastN, lastK = usable, k
		times = append(times, min(1, float64(usable)/maxPairs))
		nominal := nominalLevel(alpha, times, spend)
		v := pairedVerdict(metric, pairs[:k], opts, lookCritical(nominal), ruleLook)
		v.Looks, v.Spending = len(times), spend
		if v.Outcome != Inconclusive {
			v.DecidedAt = k
			v.Summary = v.line()
			return v
		}
		last = v
	}
	if lastK == 0 || lastK < len(pairs) {
		// Too few usable pairs for a look, or pairs after the last look
		// that added nothing (disturbed): describe all of them.
		how := ruleLook
		if final {
			how = ruleFixed
		}
		nominal := 0.0
		if len(times) > 0 {
			nominal = nominalLevel(alpha, times, spend)
		}
		v := pairedVerdict(metric, pairs, opts, lookCritical(nominal), how)
		if len(times) > 0 {
			v.Looks, v.Spending = len(times), spend
		}
		return v
	}
	if final {
		if seq.SpendRest {
			times[len(times)-1] = 1
		}
		nominal := nominalLevel(alpha, times, spend)
		last = pairedVerdict(metric, pairs[:lastK], opts, lookCritical(nominal), ruleFixed)
		last.Looks, last.Spending = len(times), spend
		if seq.SpendRest && last.Outcome != Inconclusive {
			last.DecidedAt = lastK
			last.Summary = last.line()
		}
	}
	return last
}

// lookCritical is the critical t of a look at nominal two-sided level p
// (0: no interval).
func lookCritical(p float64) func(df int) float64 {
	return func(df int) float64 {
		if !(p > 1e-12) {
			return math.Inf(1)
		}
		k := quantileKey{p, df}
		if q, ok := quantileCache.Load(k); ok {
			return q.(float64)
		}
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - p/2)
		quantileCache.Store(k, q)
		return q
	}
}

// quantileCache holds the critical t per (level, df): the levels come from
// a few boundary schedules and df from a few pair counts, and inverting the
// incomplete beta function is most of a look's cost.
var quantileCache sync.Map

type quantileKey struct {
	p  float64
	df int
}

// nominalLevel is the two-sided nominal level 2Φ(−c_k) of the last of the
// looks at information fractions times, for a total two-sided alpha spent
// by the named function.
func nominalLevel(alpha float64, times []float64, spending string) float64 {
	c := Boundaries(alpha, times, spending)
	z := c[len(c)-1]
	if math.IsInf(z, 1) {
		return 0
	}
	return 2 * normalSF(z)
}

// spent is the two-sided α the named function has spent by fraction t.
func spent(alpha, t float64, spending string) float64 {
	switch {
	case t <= 0:
		return 0
	case t >= 1:
		return alpha
	}
	if spending == SpendingOBrienFleming {
		z := distuv.UnitNormal.Quantile(1 - alpha/2)
		return 2 * normalSF(z/math.Sqrt(t))
	}
	return alpha * math.Log(1+(math.E-1)*t)
}

var boundaryCache sync.Map // string → []float64

// Boundaries are the two-sided z boundaries c_1 … c_K of looks at the
// increasing information fractions times (each in (0, 1]) that spend
// alpha by the named function (SpendingPocock, SpendingOBrienFleming): under
// no change the chance that |Z_k| ≥ c_k at look k and at no look before is
// α(t_k) − α(t_{k−1}). A look that spends nothing has c = +Inf. The
// statistic's path is Brownian motion in information time, so the chance is
// an integral over the paths still inside the earlier boundaries, computed
// on a grid (Simpson's rule; Jennison & Turnbull 2000, ch. 19). Results are
// cached, so the same schedule costs one map lookup.
func Boundaries(alpha float64, times []float64, spending string) []float64 {
	var key strings.Builder
	key.WriteString(spending)
	key.WriteString(strconv.FormatFloat(alpha, 'g', -1, 64))
	for _, t := range times {
		key.WriteByte(',')
		key.WriteString(strconv.FormatFloat(t, 'g', 8, 64))
	}
	if c, ok := boundaryCache.Load(key.String()); ok {
		return c.([]float64)
	}
	c := boundaries(alpha, times, spending)
	boundaryCache.Store(key.String(), c)
	return c
}

// gridPoints is the number of points (odd, for Simpson's rule) of the
// grid of the score statistic at each look; 201 puts the boundaries within
// 1e-4 of the tabulated ones.
const gridPoints = 201

func boundaries(alpha float64, times []float64, spending string) []float64 {
	out := make([]float64, len(times))
	// The density of the score statistic S_k = Z_k·√t_k on the paths that
	// crossed no boundary yet, on a grid: grid[i] with Simpson weight w[i].
	var grid, dens, w []float64
	prevT, prevSpent := 0.0, 0.0
	for k, t := range times {
		target := spent(alpha, t, spending) - prevSpent
		dt := t - prevT
		if dt <= 0 {
			out[k] = math.Inf(1)
			continue
		}
		sdt := math.Sqrt(dt)
		exit := func(c float64) float64 {
			b := c * math.Sqrt(t)
			if grid == nil {
				return 2 * normalSF(c)
			}
			p := 0.0
			for i, u := range grid {
				p += w[i] * dens[i] * (normalSF((b-u)/sdt) + normalSF((b+u)/sdt))
			}
			return p
		}
		c := math.Inf(1)
		if target > 1e-15 {
			lo, hi := 0.0, 40.0
			for range 80 {
				mid := (lo + hi) / 2
				if exit(mid) > target {
					lo = mid
				} else {
					hi = mid
				}
			}
			c = (lo + hi) / 2
			prevSpent += target
		}
		out[k] = c
		// The density at this look inside its boundary (beyond 8 standard
		// deviations there is nothing left to integrate).
		b := math.Min(c, 8) * math.Sqrt(t)
		ng := make([]float64, gridPoints)
		nd := make([]float64, gridPoints)
		nw := make([]float64, gridPoints)
		h := 2 * b / float64(gridPoints-1)
		for i := range ng {
			ng[i] = -b + float64(i)*h
			switch {
			case i == 0 || i == gridPoints-1:
				nw[i] = h / 3
			case i%2 == 1:
				nw[i] = 4 * h / 3
			default:
				nw[i] = 2 * h / 3
			}
			if grid == nil {
				nd[i] = normalPDF(ng[i]/sdt) / sdt
				continue
			}
			d := 0.0
			for j, u := range grid {
				d += w[j] * dens[j] * normalPDF((ng[i]-u)/sdt) / sdt
			}
			nd[i] = d
		}
		grid, dens, w = ng, nd, nw
		prevT = t
	}
	return out
}

func normalPDF(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }

// ProgressLine is a primary metric's state in a sequential comparison, in
// one line: "CPU/request: +28 % … +37 %, worse — decided after pair 4",
// "p99: −6 % … +12 %, still spans the 3 % floor".
func ProgressLine(v Verdict) string {
	var b strings.Builder
	b.WriteString(MetricLabel(v.Metric))
	b.WriteString(": ")
	if v.CI[0] > 0 {
		fmt.Fprintf(&b, "%s, ", ciText(v.CI, " … "))
	} else if v.Pairs > 0 {
		fmt.Fprintf(&b, "%s so far (no interval yet), ", signedPct(v.Ratio-1))
	}
	switch {
	case v.DecidedAt > 0:
		fmt.Fprintf(&b, "%s — decided after pair %d", v.Outcome, v.DecidedAt)
	case v.Outcome != Inconclusive:
		b.WriteString(string(v.Outcome))
	case v.Pairs < DefaultMinPairs && v.Reason != "":
		fmt.Fprintf(&b, "undecided (%s)", v.Reason)
	default:
		fmt.Fprintf(&b, "still spans the %s floor", pct(v.Floor))
	}
	return b.String()
}

// Progress is a sequential comparison's state after its pairs so far, one
// line per primary metric, then what is still undecided.
func (s Sequential) Progress() []string {
	var out []string
	for _, v := range s.Verdicts {
		if v.Primary {
			out = append(out, ProgressLine(v))
		}
	}
	if len(s.Undecided) > 0 {
		labels := make([]string, len(s.Undecided))
		for i, m := range s.Undecided {
			labels[i] = MetricLabel(m)
		}
		out = append(out, "undecided: "+strings.Join(labels, ", "))
	}
	return out
}

// unboundedCI is where an interval stops being worth printing: a bound
// beyond ×10 or ÷10 (the first looks of a sequential comparison at 2–3
// degrees of freedom and a tiny nominal level give bounds like +10⁶ %).
const unboundedCI = 10

// ciText is an interval of ratios as signed percentages joined by sep, a
// bound beyond ×10 or ÷10 as "≤ −90 %" or "≥ +900 %".
func ciText(ci [2]float64, sep string) string {
	lo, hi := signedPct(ci[0]-1), signedPct(ci[1]-1)
	if ci[0] < 1.0/unboundedCI {
		lo = "≤ " + signedPct(1.0/unboundedCI-1)
	}
	if ci[1] > unboundedCI {
		hi = "≥ " + signedPct(unboundedCI-1)
	}
	return lo + sep + hi
}
