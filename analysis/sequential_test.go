package analysis

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestBoundaries(t *testing.T) {
	five := []float64{0.2, 0.4, 0.6, 0.8, 1}
	for _, tt := range []struct {
		name     string
		alpha    float64
		times    []float64
		spending string
		want     []float64
	}{
		// Lan–DeMets Pocock type, 5 equally spaced looks, two-sided 5 %
		// (Jennison & Turnbull 2000, Table 7.6; gsDesign sfLDPocock).
		{"pocock", 0.05, five, SpendingPocock, []float64{2.438, 2.427, 2.410, 2.397, 2.386}},
		// O'Brien–Fleming type: the first look spends 2Φ(−z/√t), so its
		// boundary is z_{0.975}/√0.2; the last is near the fixed 1.96.
		{"obrien-fleming", 0.05, five, SpendingOBrienFleming, []float64{4.383, 3.100, 2.553, 2.254, 2.064}},
		// One look at t = 1 is the fixed design.
		{"one look", 0.05, []float64{1}, SpendingOBrienFleming, []float64{1.960}},
		// A look that adds no information spends nothing.
		{"repeated fraction", 0.05, []float64{0.5, 1, 1}, SpendingPocock, []float64{2.157, 2.201, math.Inf(1)}},
	} {
		got := Boundaries(tt.alpha, tt.times, tt.spending)
		for i := range tt.want {
			if math.IsInf(tt.want[i], 1) != math.IsInf(got[i], 1) || (!math.IsInf(got[i], 1) && math.Abs(got[i]-tt.want[i]) > 2e-3) {
				t.Errorf("%s: boundaries %.3f, want %.3f", tt.name, got, tt.want)
				break
			}
		}
	}
}

func TestBoundariesSpendAlpha(t *testing.T) {
	// The boundaries of looks after pairs 3 … 10 spend the whole α: the
	// chance of crossing some boundary, by simulation of the statistic's
	// path, is α.
	times := []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	for _, spending := range []string{SpendingOBrienFleming, SpendingPocock} {
		c := Boundaries(0.05, times, spending)
		crossed, n := 0, 200000
		r := newTestRand(7)
		for range n {
			s, prev := 0.0, 0.0
			for k, tk := range times {
				s += r.NormFloat64() * math.Sqrt(tk-prev)
				prev = tk
				if math.Abs(s/math.Sqrt(tk)) >= c[k] {
					crossed++
					break
				}
			}
		}
		if got := float64(crossed) / float64(n); math.Abs(got-0.05) > 0.003 {
			t.Errorf("%s: crossed in %.4f of paths, want 0.05", spending, got)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"cpu,p50,p99,throughput", []string{MetricP50Ms, MetricP99Ms, MetricRPS, MetricCPUMicrosPerReq}, ""},
		{"cpu_us_per_request, rss_bytes", []string{MetricCPUMicrosPerReq, MetricRSSBytes}, ""},
		{"p99,P99", []string{MetricP99Ms}, ""},
		{"latency", nil, `unknown metric "latency"`},
		{" , ", nil, "no metric"},
	} {
		got, err := ParseMetrics(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseMetrics(%q): error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseMetrics(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// seqPairs makes pairs whose CPU per request of B is A's times cpu[i],
// p50, p99 and rps equal on both sides but for a small alternating wobble,
// so they are decided no_difference once the interval is narrow enough.
func seqPairs(cpu ...float64) []Pair {
	out := make([]Pair, len(cpu))
	for i, c := range cpu {
		w := 1 + 0.002*float64(i%2*2-1)
		out[i] = Pair{
			A: RoundValues{MetricCPUMicrosPerReq: 100, MetricP50Ms: 2, MetricP99Ms: 9, MetricRPS: 1000, MetricHeapBytes: 5e7},
			B: RoundValues{MetricCPUMicrosPerReq: 100 * c, MetricP50Ms: 2 * w, MetricP99Ms: 9 * w, MetricRPS: 1000 / w, MetricHeapBytes: 5e7 * w},
		}
	}
	return out
}

func TestCompareSequential(t *testing.T) {
	cpu := []float64{1.30, 1.36, 1.28, 1.33, 1.31, 1.35}
	pairs := seqPairs(cpu...)
	verdict := func(s Sequential, m string) Verdict {
		for _, v := range s.Verdicts {
			if v.Metric == m {
				return v
			}
		}
		t.Fatalf("no verdict of %s", m)
		return Verdict{}
	}
	// Two pairs: no look yet, everything undecided.
	s := CompareSequential(pairs[:2], PairedOptions{}, SequentialOptions{}, false)
	if s.Decided || len(s.Undecided) != 4 || verdict(s, MetricCPUMicrosPerReq).Looks != 0 {
		t.Errorf("2 pairs: decided %v, undecided %v", s.Decided, s.Undecided)
	}
	// Find where CPU is decided; the decision does not move as pairs are
	// added (each call replays the same looks).
	decidedAt := 0
	for k := 3; k <= len(pairs); k++ {
		v := verdict(CompareSequential(pairs[:k], PairedOptions{}, SequentialOptions{}, false), MetricCPUMicrosPerReq)
		switch {
		case decidedAt == 0 && v.DecidedAt > 0:
			decidedAt = v.DecidedAt
			if v.Outcome != Worse || v.DecidedAt != k || !v.Primary || v.Family != 4 || v.Spending != SpendingOBrienFleming {
				t.Errorf("CPU decided after %d pairs: %+v", k, v)
			}
		case decidedAt > 0 && (v.DecidedAt != decidedAt || v.Outcome != Worse):
			t.Errorf("after %d pairs the decision of pair %d moved: %+v", k, decidedAt, v)
		}
	}
	if decidedAt == 0 || decidedAt > 5 {
		t.Fatalf("+32 %% CPU with 2 %% noise decided after %d pairs, want 3–5", decidedAt)
	}
	// The other primary metrics move ±0.4 %: decided no_difference within
	// the 3 % floor, and then the comparison is decided.
	s = CompareSequential(pairs, PairedOptions{}, SequentialOptions{}, false)
	if !s.Decided || len(s.Undecided) != 0 {
		t.Errorf("6 pairs: decided %v, undecided %v", s.Decided, s.Undecided)
	}
	if v := verdict(s, MetricP99Ms); v.Outcome != NoDifference || v.DecidedAt == 0 {
		t.Errorf("p99: %+v", v)
	}
	// Secondary metrics are their own family: heap (measured) counts 1.
	if v := verdict(s, MetricHeapBytes); v.Primary || v.Family != 1 {
		t.Errorf("heap: primary %v family %d", v.Primary, v.Family)
	}
	lines := s.Progress()
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "p50: ") ||
		!strings.Contains(strings.Join(lines, "\n"), "CPU/request: +") || !strings.Contains(strings.Join(lines, "\n"), "worse — decided after pair") {
		t.Errorf("progress:\n%s", strings.Join(lines, "\n"))
	}
}

func TestCompareSequentialUndecided(t *testing.T) {
	// CPU per request ±10 % at random: neither a change nor within the
	// floor. While running it is undecided and the line says what the
	// interval spans; when stopped, the fixed rule's outcome and reason.
	pairs := seqPairs(1.10, 0.92, 1.05, 0.97, 1.12, 0.90)
	s := CompareSequential(pairs, PairedOptions{}, SequentialOptions{}, false)
	var v Verdict
	for _, x := range s.Verdicts {
		if x.Metric == MetricCPUMicrosPerReq {
			v = x
		}
	}
	if s.Decided || v.Outcome != Inconclusive || v.DecidedAt != 0 || v.Looks != 4 || !strings.Contains(v.Reason, "still spans") {
		t.Errorf("running: decided %v, CPU %+v", s.Decided, v)
	}
	if l := ProgressLine(v); !strings.HasPrefix(l, "CPU/request: −") || !strings.HasSuffix(l, "still spans the 3 % floor") {
		t.Errorf("progress line %q", l)
	}
	if got := s.Undecided; !reflect.DeepEqual(got, []string{MetricCPUMicrosPerReq}) {
		t.Errorf("undecided %v", got)
	}
	f := CompareSequential(pairs, PairedOptions{}, SequentialOptions{}, true)
	for _, x := range f.Verdicts {
		if x.Metric == MetricCPUMicrosPerReq && (x.Outcome != Inconclusive || !strings.Contains(x.Reason, "pairs disagree")) {
			t.Errorf("final: %+v", x)
		}
	}
	// Disturbed pairs add no look: the same 6 usable pairs with two
	// disturbed ones between them give the same looks.
	d := append([]Pair{}, pairs[:3]...)
	d = append(d, Pair{A: pairs[0].A, B: pairs[0].B, Disturbed: true})
	d = append(d, pairs[3:]...)
	d = append(d, Pair{A: pairs[0].A, B: pairs[0].B, Disturbed: true})
	for _, x := range CompareSequential(d, PairedOptions{}, SequentialOptions{}, false).Verdicts {
		if x.Metric == MetricCPUMicrosPerReq && (x.Looks != 4 || x.Pairs != 6 || !strings.Contains(x.Reason, "2 disturbed pairs left out")) {
			t.Errorf("with disturbed pairs: %+v", x)
		}
	}
}

func TestIntervalNoteFamilies(t *testing.T) {
	for _, tt := range []struct {
		vs   []Verdict
		want string
	}{
		{[]Verdict{{Family: 4, Primary: true}, {Family: 3}}, "the intervals hold jointly over the 4 primary metrics, and over the 3 others as a second family; no earlier comparison of this scenario on this host to pool noise with: an A-vs-A comparison first lets later ones resolve smaller changes"},
		{[]Verdict{{Family: 4, Primary: true, Looks: 5}, {Family: 1}}, "the intervals hold jointly over the 4 primary metrics, the other metric's on its own, at every one of the 5 looks (one after each pair: group-sequential); no earlier comparison of this scenario on this host to pool noise with: pairs were added until the primary metrics were decided"},
		{[]Verdict{{Family: 2, Primary: true, PooledFrom: 3}}, "the intervals hold jointly over the 2 primary metrics; noise pooled with 3 earlier comparisons of this scenario on this host"},
	} {
		if got := IntervalNote(tt.vs); got != tt.want {
			t.Errorf("IntervalNote(%+v)\n got %q\nwant %q", tt.vs, got, tt.want)
		}
	}
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5e)) }

func TestCompareSequentialSpendRest(t *testing.T) {
	// Stopped by a time limit after 4 of 10 pairs: the last look may spend
	// the α left, so its interval is narrower than the look's own.
	pairs := seqPairs(1.10, 1.04, 1.12, 1.06)
	width := func(seq SequentialOptions) float64 {
		for _, v := range CompareSequential(pairs, PairedOptions{}, seq, true).Verdicts {
			if v.Metric == MetricCPUMicrosPerReq {
				return math.Log(v.CI[1] / v.CI[0])
			}
		}
		return 0
	}
	look, rest := width(SequentialOptions{}), width(SequentialOptions{SpendRest: true})
	if !(rest > 0 && rest < look/2) {
		t.Errorf("interval width (log) %.3f with the rest spent, %.3f without", rest, look)
	}
}

func TestProgressLineUnbounded(t *testing.T) {
	v := Verdict{Metric: MetricP99Ms, Primary: true, Outcome: Inconclusive, CI: [2]float64{1e-9, 5e8}, Pairs: 3, Floor: 0.03}
	if got, want := ProgressLine(v), "p99: ≤ −90 % … ≥ +900 %, still spans the 3 % floor"; got != want {
		t.Errorf("ProgressLine = %q, want %q", got, want)
	}
}
