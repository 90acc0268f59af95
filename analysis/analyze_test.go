package analysis

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// windows returns n steady 3-second windows of incarnation 0 (2,000 req/s,
// 16 VUs, p50 8 ms, no errors, no probes); edit sets anything else.
func windows(n int, edit func(i int, w *window.Window)) []window.Window {
	ws := make([]window.Window, n)
	for i := range ws {
		ws[i] = window.Window{
			Index: i, Start: t0.Add(time.Duration(i) * 3 * time.Second), End: t0.Add(time.Duration(i+1) * 3 * time.Second),
			Requests: 6000, OK: 6000, RPS: 2000, VUs: 16, InFlight: 16,
			LatencyMs: window.Latency{P50: 8, P99: 30},
		}
		if edit != nil {
			edit(i, &ws[i])
		}
	}
	return ws
}

func bytesPtr(v float64) *int64 { b := int64(v); return &b }

const mib = 1 << 20

// kinds lists "severity kind" for each finding, in order.
func kinds(res Result) []string {
	var out []string
	for _, f := range res.Findings {
		out = append(out, string(f.Severity)+" "+f.Kind)
	}
	return out
}

func find(res Result, kind string) (Finding, bool) {
	for _, f := range res.Findings {
		if f.Kind == kind {
			return f, true
		}
	}
	return Finding{}, false
}

func TestLeakVerdicts(t *testing.T) {
	tests := []struct {
		name     string
		heap     func(i int) float64 // bytes at window i (30 windows of 3 s)
		forced   func(i int) bool
		want     Severity // of the leak finding; "" for none
		contains string
	}{
		{"linear growth", func(i int) float64 { return 10*mib + float64(i)*mib }, nil, Critical, "likely a memory leak"},
		{"flat with noise", func(i int) float64 { return 10*mib + float64(i%3)*0.2*mib }, nil, "", ""},
		{"cache fills and levels off", func(i int) float64 { return 10*mib + 40*mib*(1-math.Exp(-float64(i)/3)) }, nil, Info, "levelled off"},
		{"grows 15 %: a note, not a verdict", func(i int) float64 { return 20*mib + float64(i)*0.1*mib }, nil, Info, "less than the 25 %"},
		{"only forced-GC checkpoints, 6 of them", func(i int) float64 { return 10*mib + float64(i)*mib },
			func(i int) bool { return i%5 == 4 }, Warning, "only 6 readings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := windows(30, func(i int, w *window.Window) {
				forced := tt.forced != nil && tt.forced(i)
				if tt.forced == nil || forced {
					w.Probes.HeapBytes, w.Probes.HeapForcedGC = bytesPtr(tt.heap(i)), forced
				}
			})
			res := Analyze(ws, DefaultOptions())
			f, ok := find(res, KindLeak)
			switch {
			case tt.want == "" && ok:
				t.Fatalf("got %s leak %q, want none", f.Severity, f.Summary)
			case tt.want == "":
				return
			case !ok:
				t.Fatalf("no leak finding, want %s; got %v", tt.want, kinds(res))
			}
			if f.Severity != tt.want || !strings.Contains(f.Summary, tt.contains) {
				t.Errorf("got %s %q, want %s containing %q", f.Severity, f.Summary, tt.want, tt.contains)
			}
		})
	}
}

func TestLeakEvidence(t *testing.T) {
	// 1 MiB per window of 6,000 requests: 1,200 MiB/hour, 174.8 KiB per 1,000 requests.
	ws := windows(30, func(i int, w *window.Window) { w.Probes.HeapBytes = bytesPtr(10*mib + float64(i)*mib) })
	f, ok := find(Analyze(ws, DefaultOptions()), KindLeak)
	if !ok {
		t.Fatal("no leak finding")
	}
	ev := f.Evidence
	if ev.FirstWindow != 1 || ev.LastWindow != 29 {
		t.Errorf("windows %d–%d, want 1–29 (window 0 is warm-up)", ev.FirstWindow, ev.LastWindow)
	}
	if got, want := ev.Slope, 1200.0*mib; !approxEqual(got, want, 1e-9) || ev.SlopeUnit != "bytes/hour" {
		t.Errorf("slope %v %s, want %v bytes/hour", got, ev.SlopeUnit, want)
	}
	if got, want := ev.PerKRequests, 1000.0*mib/6000; !approxEqual(got, want, 1e-9) {
		t.Errorf("per 1k requests %v, want %v", got, want)
	}
	if ev.PValue <= 0 || ev.PValue > 1e-6 {
		t.Errorf("p-value %v, want a tiny positive one", ev.PValue)
	}
	// Quarter medians: readings 1..8 and 22..29.
	if ev.Before != 14.5*mib || ev.After != 35.5*mib || ev.Unit != "bytes" {
		t.Errorf("before/after %v/%v %s, want %v/%v bytes", ev.Before, ev.After, ev.Unit, 14.5*mib, 35.5*mib)
	}
}

func TestThinAndMissingData(t *testing.T) {
	tests := []struct {
		name string
		ws   []window.Window
		want []string
	}{
		{"four heap readings", windows(30, func(i int, w *window.Window) {
			if i%7 == 6 {
				w.Probes.HeapBytes, w.Probes.HeapForcedGC = bytesPtr(float64(10+i)*mib), true
			}
		}), []string{"info insufficient_data", "info missing_evidence"}},
		{"five windows", windows(5, nil), []string{"info insufficient_data", "info missing_evidence"}},
		{"no probes", windows(30, nil), []string{"info missing_evidence"}},
		{"nothing but gaps", []window.Window{{Gap: true}, {Index: 1, Gap: true}}, nil},
		{"nothing", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kinds(Analyze(tt.ws, DefaultOptions())); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMissingEvidenceNamesProbes(t *testing.T) {
	cpu := 0.5
	ws := windows(30, func(i int, w *window.Window) { w.Probes.CPUSeconds = &cpu })
	// A second incarnation with the same probes missing: said once.
	ws = append(ws, windows(30, func(i int, w *window.Window) { w.Incarnation, w.Index = 1, 31+i })...)
	var missing []Finding
	for _, f := range Analyze(ws, DefaultOptions()).Findings {
		if f.Kind == KindMissingEvidence {
			missing = append(missing, f)
		}
	}
	if len(missing) != 2 {
		t.Fatalf("got %d missing_evidence findings, want 2 (incarnation 1 lacks CPU too)", len(missing))
	}
	if got, want := missing[0].Evidence.Missing, []string{MissingHeap, MissingDatabase}; !slices.Equal(got, want) {
		t.Errorf("incarnation 0 missing %v, want %v", got, want)
	}
	if got, want := missing[1].Evidence.Missing, []string{MissingHeap, MissingDatabase, MissingCPU}; !slices.Equal(got, want) {
		t.Errorf("incarnation 1 missing %v, want %v", got, want)
	}
	if !strings.Contains(missing[0].Summary, "post-GC heap") || !strings.Contains(missing[0].Summary, "database statistics") {
		t.Errorf("summary does not name what is missing: %q", missing[0].Summary)
	}
}

// TestMissingEvidenceStatements: a PostgreSQL database whose statements the
// probe could not count is named with the probe's reason, and without
// "enable a probe" advice; counted in some window, or never said to be
// missing (MySQL, an old run), it is not.
func TestMissingEvidenceStatements(t *testing.T) {
	cpu, heap := 0.5, int64(1<<20)
	all := func(db window.Database) []window.Window {
		return windows(30, func(i int, w *window.Window) {
			d := db
			w.Probes.CPUSeconds, w.Probes.HeapBytes, w.Probes.Database = &cpu, &heap, &d
		})
	}
	missing := func(ws []window.Window) (Finding, bool) {
		for _, f := range Analyze(ws, DefaultOptions()).Findings {
			if f.Kind == KindMissingEvidence {
				return f, true
			}
		}
		return Finding{}, false
	}
	const why = "the pg_stat_statements extension is not created in the target's database (CREATE EXTENSION pg_stat_statements)"
	f, ok := missing(all(window.Database{StatementsUnavailable: why}))
	if !ok || !slices.Equal(f.Evidence.Missing, []string{MissingStatements}) {
		t.Fatalf("missing %v (%v), want %v", f.Evidence.Missing, ok, []string{MissingStatements})
	}
	if want := "no probe data for statements per request (" + why + ")"; f.Summary != want {
		t.Errorf("summary %q, want %q", f.Summary, want)
	}
	for name, ws := range map[string][]window.Window{
		"counted":       all(window.Database{StatementsCounted: true}),
		"never said":    all(window.Database{}),
		"counted later": append(all(window.Database{StatementsUnavailable: why})[:10], all(window.Database{StatementsCounted: true})[10:]...),
	} {
		if f, ok := missing(ws); ok {
			t.Errorf("%s: %s", name, f.Summary)
		}
	}
}

func TestMissingEvidenceNamesFailingProbes(t *testing.T) {
	cpu := 0.5
	withCPU := func(i int, w *window.Window) { w.Probes.CPUSeconds = &cpu }
	failing := func(probes ...string) func(int, *window.Window) {
		return func(i int, w *window.Window) {
			withCPU(i, w)
			for _, p := range probes {
				w.ProbeFailures = append(w.ProbeFailures, window.ProbeFailure{Probe: p, Error: "dial tcp 127.0.0.1:9229: connect: connection refused"})
			}
		}
	}
	tests := []struct {
		name    string
		ws      []window.Window
		want    []string // in the summary
		wantNot []string
		missing []string
	}{
		{"probes off", windows(30, withCPU),
			[]string{"post-GC heap (no leak verdict is possible)", "— enable the matching probes in the scenario"},
			[]string{"failed", "fix"}, []string{MissingHeap, MissingDatabase}},
		{"inspector failing, no database probe", windows(30, failing("heap.inspector")),
			[]string{"post-GC heap (no leak verdict is possible, the heap.inspector probe failed: dial tcp 127.0.0.1:9229: connect: connection refused)",
				"refused); database statistics (a collapse cannot be traced to a table) — enable the matching probes in the scenario and fix the failing ones"},
			nil, []string{MissingHeap, MissingDatabase}},
		{"every probe failing", windows(30, failing("heap.metric", "database")),
			[]string{"the heap.metric probe failed", "the database probe failed", "— fix the failing probes"},
			[]string{"enable"}, []string{MissingHeap, MissingDatabase}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := find(Analyze(tt.ws, DefaultOptions()), KindMissingEvidence)
			if !ok {
				t.Fatal("no missing_evidence finding")
			}
			for _, w := range tt.want {
				if !strings.Contains(f.Summary, w) {
					t.Errorf("summary %q lacks %q", f.Summary, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(f.Summary, w) {
					t.Errorf("summary %q contains %q", f.Summary, w)
				}
			}
			if !slices.Equal(f.Evidence.Missing, tt.missing) {
				t.Errorf("missing %v, want %v", f.Evidence.Missing, tt.missing)
			}
		})
	}
}

func TestShorten(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer message", 8, "a longer…"},
		{"µµµµ", 3, "µ…"}, // never cuts a rune in half
	}
	for _, tt := range tests {
		if got := shorten(tt.s, tt.n); got != tt.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestWarmupAndIncarnations(t *testing.T) {
	// Heap jumps 10 → 60 MiB over the first five windows, then stays flat.
	warm := func(i int, w *window.Window) {
		w.Probes.HeapBytes = bytesPtr(10*mib + 10*mib*float64(min(i, 5)) + float64(i%2)*0.1*mib)
	}
	tests := []struct {
		name      string
		opts      Options
		wantFirst int
		wantLeak  bool
	}{
		{"default: one warm-up window", Options{}, 1, false},
		{"15 s of warm-up", Options{Warmup: 15 * time.Second}, 5, false},
		{"WarmupWindows 7", Options{WarmupWindows: 7}, 7, false},
		{"no warm-up at all", Options{WarmupWindows: -1}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Analyze(windows(30, warm), tt.opts)
			if _, leak := find(res, KindLeak); leak && tt.wantLeak != (res.Worst().Rank() >= Warning.Rank()) {
				t.Errorf("leak verdict %v, want %v: %v", !tt.wantLeak, tt.wantLeak, kinds(res))
			}
			f, ok := find(res, KindMissingEvidence)
			if !ok || f.Evidence.FirstWindow != tt.wantFirst {
				t.Errorf("first analysed window %d, want %d", f.Evidence.FirstWindow, tt.wantFirst)
			}
		})
	}

	// Two incarnations, each flat, at different levels, with a lost window
	// between them: no leak (analysed jointly they would look like a step).
	ws := windows(20, func(i int, w *window.Window) { w.Probes.HeapBytes = bytesPtr(10*mib + float64(i%3)*0.1*mib) })
	ws = append(ws, window.Window{Incarnation: 0, Index: 20, Gap: true})
	ws = append(ws, windows(20, func(i int, w *window.Window) {
		w.Incarnation, w.Index = 1, 21+i
		w.Probes.HeapBytes = bytesPtr(30*mib + float64(i%3)*0.1*mib)
	})...)
	res := Analyze(ws, DefaultOptions())
	if v := res.Verdicts(); len(v) != 0 {
		t.Errorf("two flat incarnations gave verdicts: %v", kinds(res))
	}
	var incs []int
	for _, f := range res.Findings {
		incs = append(incs, f.Incarnation)
	}
	if !slices.Equal(incs, []int{0}) {
		t.Errorf("findings for incarnations %v, want [0] (the missing-evidence note, said once)", incs)
	}
}

func TestDuplicateWindowKeepsLastCopy(t *testing.T) {
	ws := windows(30, func(i int, w *window.Window) { w.Probes.HeapBytes = bytesPtr(10*mib + float64(i)*mib) })
	// A retried activity wrote windows 10–19 again; the store would keep the
	// last copy, and so does Analyze.
	for i := 10; i < 20; i++ {
		dup := ws[i]
		dup.Probes.HeapBytes = bytesPtr(10*mib + float64(i)*mib)
		ws = append(ws, dup)
	}
	f, ok := find(Analyze(ws, DefaultOptions()), KindLeak)
	if !ok {
		t.Fatal("no leak finding")
	}
	if got := f.Evidence.Notes["readings"]; got != 29 {
		t.Errorf("readings %v, want 29 (duplicates counted once)", got)
	}
}

func TestErrorSurge(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(i int, w *window.Window)
		want     Severity
		contains string
	}{
		{"timeouts from window 20", func(i int, w *window.Window) {
			if i >= 20 {
				w.Errors.Timeout, w.Errors.Status5xx = 540, 60
				w.OK = w.Requests - 600
			}
		}, Critical, "mostly timeout, 90 % of them"},
		{"a burst that recovered", func(i int, w *window.Window) {
			if i >= 12 && i < 16 {
				w.Errors.Status5xx = 1200
				w.OK = w.Requests - 1200
			}
		}, Warning, "then fell back to 0 %"},
		{"interrupted requests at the end are not errors", func(i int, w *window.Window) {
			if i == 29 {
				w.Requests, w.Errors.Interrupted, w.OK = 100, 16, 84
			}
		}, "", ""},
		{"a few stray errors", func(i int, w *window.Window) {
			if i%9 == 8 {
				w.Errors.Reset = 2
			}
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Analyze(windows(30, tt.edit), DefaultOptions())
			f, ok := find(res, KindErrorSurge)
			if tt.want == "" {
				if ok {
					t.Errorf("got %s %q, want no surge", f.Severity, f.Summary)
				}
				return
			}
			if !ok || f.Severity != tt.want || !strings.Contains(f.Summary, tt.contains) {
				t.Errorf("got %v %q, want %s containing %q", kinds(res), f.Summary, tt.want, tt.contains)
			}
		})
	}
}

func TestThroughputLimitOnARamp(t *testing.T) {
	// VUs 2, 4, … 64; throughput min(150·VUs, 1,800) req/s; latency by
	// Little's law. Saturation at 12 VUs.
	ws := windows(32, func(i int, w *window.Window) {
		c := float64(2 * (i + 1))
		x := math.Min(150*c, 1800) * (1 + 0.05*math.Sin(float64(i)))
		w.VUs, w.Target, w.InFlight = int(c), c, int(c)
		w.Requests, w.OK, w.RPS = int64(3*x), int64(3*x), x
		w.LatencyMs.P50 = c / x * 1000
	})
	res := Analyze(ws, DefaultOptions())
	f, ok := find(res, KindThroughputLimit)
	if !ok {
		t.Fatalf("no throughput_limit finding: %v", kinds(res))
	}
	if k := f.Evidence.Notes["knee"]; k < 10 || k > 14 {
		t.Errorf("knee %v VUs, want 10–14: %s", k, f.Summary)
	}
	for _, s := range []string{"VUs", "p50 latency rose", "saturated resource"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
	if _, ok := find(res, KindCollapse); ok {
		t.Errorf("a ramp was read as a collapse: %v", kinds(res))
	}

	// The same ramp scaling linearly: no limit.
	linear := windows(32, func(i int, w *window.Window) {
		c := float64(2 * (i + 1))
		w.VUs, w.Target = int(c), c
		w.Requests, w.RPS = int64(3*150*c), 150*c
	})
	if f, ok := find(Analyze(linear, DefaultOptions()), KindThroughputLimit); ok {
		t.Errorf("linear scaling gave %q", f.Summary)
	}
}

func TestCollapseNamesTheTable(t *testing.T) {
	m := demo.with("no index", func(m *model) { m.noIndex = true })
	res := Analyze(m.generate(1), DefaultOptions())
	f, ok := find(res, KindCollapse)
	if !ok || f.Severity != Critical {
		t.Fatalf("want a critical collapse, got %v", kinds(res))
	}
	ev := f.Evidence
	if ev.Table != "items" || ev.Unit != "req/s" || !(ev.After < ev.Before) || ev.Correlation > -0.5 {
		t.Errorf("evidence %+v: want table items, req/s falling, negative correlation with rows", ev)
	}
	if ev.Op != "list" || len(ev.Ops) == 0 || ev.Ops[0].Op != "list" || !ev.Ops[0].Grew {
		t.Errorf("evidence names op %q, ops %+v: want list first, grown", ev.Op, ev.Ops)
	}
	for _, s := range []string{"throughput fell", "as items grew", "list: p50 ", "seq scans on items read", "rows per request at the end vs", "missing an index"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
}

// An 8-hour soak of 1,440 windows with a 64-byte leak and an unindexed table
// slow enough to cost a third of the throughput: both found, on series long
// enough to be binned.
func TestLongSoak(t *testing.T) {
	m := longClean.with("8 hours, leak and no index", func(m *model) { m.leakPerReq, m.noIndex, m.rowCostK = 64, true, 4e6 })
	for _, seed := range []uint64{1, 2, 3} {
		res := Analyze(m.generate(seed), DefaultOptions())
		if err := wantKind(KindLeak, Critical, nil)(res); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
		if f, ok := find(res, KindCollapse); !ok || f.Evidence.Table != "items" || f.Severity.Rank() < Warning.Rank() {
			t.Errorf("seed %d: want a collapse naming items; got %s", seed, describe(res))
		}
	}
}

func TestSeriesBinned(t *testing.T) {
	var s series
	for i := 0; i < 10; i++ {
		s.add(float64(i), float64(10*i), i)
	}
	got := s.binned(5)
	want := series{x: []float64{0.5, 2.5, 4.5, 6.5, 8.5}, y: []float64{5, 25, 45, 65, 85}, pos: []int{0, 2, 4, 6, 8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("binned = %+v, want %+v", got, want)
	}
	yOnly := series{y: s.y}.binned(5)
	if !slices.Equal(yOnly.y, want.y) || yOnly.x != nil || yOnly.pos != nil {
		t.Errorf("binned y-only series = %+v, want y %v and no x or pos", yOnly, want.y)
	}
}

func TestResultHelpers(t *testing.T) {
	res := Result{Findings: []Finding{{Kind: KindMissingEvidence, Severity: Info}, {Kind: KindLeak, Severity: Warning}}}
	if got := res.Worst(); got != Warning {
		t.Errorf("Worst() = %q, want warning", got)
	}
	if got := res.Verdicts(); len(got) != 1 || got[0].Kind != KindLeak {
		t.Errorf("Verdicts() = %v, want the leak", got)
	}
	if got := (Result{}).Worst(); got != "" {
		t.Errorf("empty Worst() = %q, want \"\"", got)
	}
}

func TestZeroOptionsMeanDefaults(t *testing.T) {
	if got, want := (Options{}).withDefaults(), DefaultOptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("Options{}.withDefaults() = %+v\nwant DefaultOptions() = %+v", got, want)
	}
	custom := Options{Leak: LeakOptions{Alpha: 0.05}}.withDefaults()
	if custom.Leak.Alpha != 0.05 || custom.Leak.MinReadings != DefaultOptions().Leak.MinReadings {
		t.Errorf("a set field must be kept and the rest defaulted: %+v", custom.Leak)
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct{ got, want string }{
		{fmtBytes(812), "812 B"},
		{fmtBytes(12.34 * mib), "12.3 MiB"},
		{fmtBytes(1.5 * 1024), "1.50 KiB"},
		{fmtBytes(300 * 1024 * mib), "300 GiB"},
		{fmtCount(38000), "38,000"},
		{fmtCount(1950.4), "1,950"},
		{fmtCount(-1234567), "−1,234,567"},
		{fmtCount(12.34), "12.3"},
		{fmtCount(0.123), "0.12"},
		{fmtPct(0.084), "8.4 %"},
		{fmtPct(0.0002), "0.02 %"},
		{fmtPct(0.35), "35 %"},
		{fmtP(0.00003), "p < 0.0001"},
		{fmtP(0.0123), "p = 0.012"},
		{fmtFactor(5.12), "5.1×"},
		{fmtSeconds(87), "87 s"},
		{fmtSeconds(8 * 3600), "8.0 h"},
		{fmtMs(0.42), "0.42 ms"},
		{fmtMs(130.4), "130 ms"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestPrefix(t *testing.T) {
	var ws []window.Window
	for i := range 10 {
		s := t0.Add(time.Duration(i) * 10 * time.Second)
		ws = append(ws, window.Window{Index: i, Start: s, End: s.Add(10 * time.Second)})
	}
	for _, tt := range []struct {
		windows int
		until   time.Duration
		want    int
	}{
		{0, 0, 10}, {3, 0, 3}, {20, 0, 10}, {0, 30 * time.Second, 3}, {0, 35 * time.Second, 3}, {2, time.Minute, 2}, {5, 20 * time.Second, 2},
	} {
		got := Prefix(ws, tt.windows, tt.until)
		if len(got) != tt.want || len(got) > 0 && got[len(got)-1].Index != tt.want-1 {
			t.Errorf("Prefix(%d, %v): %d windows, want %d", tt.windows, tt.until, len(got), tt.want)
		}
	}
}

// opWindows are 30 windows of three ops; lat gives each op's p50 in window i.
func opWindows(lat func(op string, i int) float64, rps func(i int) float64) []window.Window {
	return windows(30, func(i int, w *window.Window) {
		w.Ops = map[string]window.OpStats{}
		for _, op := range []string{"create", "get", "list"} {
			p50 := lat(op, i)
			w.Ops[op] = window.OpStats{Requests: 2000, OK: 2000, LatencyMs: window.Latency{P50: p50, P99: 3 * p50}}
		}
		r := rps(i)
		w.Requests, w.OK, w.RPS = int64(3*r), int64(3*r), r
		w.LatencyMs.P50 = 16 * 1000 / r
	})
}

func TestCollapseNamesTheOp(t *testing.T) {
	wobble := func(i int) float64 { return 1 + 0.05*math.Sin(float64(i)*1.7) }
	base := map[string]float64{"create": 6, "get": 3, "list": 8}
	tests := []struct {
		name    string
		lat     func(op string, i int) float64
		rps     func(i int) float64
		op      string   // Evidence.Op
		summary []string // in the summary
	}{
		{"list slows, the others flat",
			func(op string, i int) float64 {
				if op == "list" {
					return base[op] * (1 + 0.2*float64(i)) * wobble(i)
				}
				return base[op] * wobble(i+3)
			},
			func(i int) float64 { return 2000 / (1 + 0.08*float64(i)) },
			"list", []string{"list: p50 ", "create and get stayed flat"}},
		{"every op slows alike: a neighbour, no op named",
			func(op string, i int) float64 { return base[op] * (1 + 0.1*float64(i)) * wobble(i) },
			func(i int) float64 { return 2000 / (1 + 0.1*float64(i)) },
			"", []string{"no op slowed by itself"}},
	}
	for _, tt := range tests {
		res := Analyze(opWindows(tt.lat, tt.rps), DefaultOptions())
		f, ok := find(res, KindCollapse)
		if !ok {
			t.Errorf("%s: no collapse; got %s", tt.name, describe(res))
			continue
		}
		if f.Evidence.Op != tt.op || len(f.Evidence.Ops) != 3 {
			t.Errorf("%s: op %q with %d op trends, want %q and 3: %s", tt.name, f.Evidence.Op, len(f.Evidence.Ops), tt.op, f.Summary)
		}
		for _, s := range tt.summary {
			if !strings.Contains(f.Summary, s) {
				t.Errorf("%s: summary lacks %q: %s", tt.name, s, f.Summary)
			}
		}
	}
}

// On a SQLite target (table rows, no read statistics) the op that slowed
// with a growing table names the table; the table that grew most wins.
func TestCollapseNamesTheSQLiteTable(t *testing.T) {
	ws := opWindows(func(op string, i int) float64 {
		if op == "list" {
			return 8 * (1 + 0.3*float64(i))
		}
		return map[string]float64{"create": 6, "get": 3}[op] * (1 + 0.02*math.Sin(float64(i)))
	}, func(i int) float64 { return 2000 / (1 + 0.1*float64(i)) })
	for i := range ws {
		ws[i].Probes.SQLite = &window.SQLite{FileBytes: int64(i) << 20, Tables: []window.SQLiteTable{
			{Name: "items", Rows: int64(2000 + 1000*i)}, {Name: "sessions", Rows: int64(20 + 100*i)}, {Name: "users", Rows: 16},
		}}
	}
	res := Analyze(ws, DefaultOptions())
	f, ok := find(res, KindCollapse)
	if !ok || f.Severity != Critical || f.Evidence.Table != "items" || f.Evidence.Op != "list" {
		t.Fatalf("want a critical collapse naming items and list; got %s", describe(res))
	}
	for _, s := range []string{"as items grew", "list: p50 ", "list slowed in step with items", "index missing"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
	if m, ok := find(res, KindMissingEvidence); ok && slices.Contains(m.Evidence.Missing, MissingDatabase) {
		t.Errorf("a SQLite probe is database evidence; got %s", describe(res))
	}
}

// A driver and target starved of CPU in more than half of the windows
// (every odd one and every fifth): each op's p50 is 150 ms longer there,
// which squeezes list's p50 relative to the others' towards 1. Those windows are left out of the op trends, so list and items
// are still named; with them in (MaxCommonSlowdown out of reach), they are
// not.
func TestCollapseSQLiteIgnoresStalledWindows(t *testing.T) {
	ws := opWindows(func(op string, i int) float64 {
		p50 := map[string]float64{"create": 1.2, "get": 0.9, "list": 1.1}[op] * (1 + 0.03*math.Sin(float64(i)*2.3))
		if op == "list" {
			p50 += 0.1 * float64(i) // the scan: 1.1 → 4 ms
		}
		if i%2 == 1 || i%5 == 0 {
			p50 += 150
		}
		return p50
	}, func(i int) float64 { return 300 })
	for i := range ws {
		ws[i].Probes.SQLite = &window.SQLite{Tables: []window.SQLiteTable{
			{Name: "items", Rows: int64(1000 + 700*i)}, {Name: "users", Rows: 16},
		}}
	}
	for _, tt := range []struct {
		maxCommon float64
		op        string
	}{{0, "list"}, {1e12, ""}} {
		o := DefaultOptions()
		if tt.maxCommon > 0 {
			o.Collapse.MaxCommonSlowdown = tt.maxCommon
		}
		res := Analyze(ws, o)
		f, _ := find(res, KindCollapse)
		got := f.Evidence.Op
		if f.Severity.Rank() < Warning.Rank() || f.Evidence.Table == "" {
			got = ""
		}
		if got != tt.op || tt.op != "" && f.Evidence.Table != "items" {
			t.Errorf("MaxCommonSlowdown %g: collapse naming op %q, table %q, want op %q; got %s", tt.maxCommon, got, f.Evidence.Table, tt.op, describe(res))
		}
	}
}

// A saturated SQLite target: every op slows alike (the queue), so no op is
// named, but the CPU per request rises with items, which names the table.
func TestCollapseSaturatedSQLiteNamesTheTable(t *testing.T) {
	ws := opWindows(func(op string, i int) float64 {
		return map[string]float64{"create": 20, "get": 19, "list": 22}[op] * (1 + 0.1*float64(i)) * (1 + 0.03*math.Sin(float64(i)*2.3))
	}, func(i int) float64 { return 2000 / (1 + 0.1*float64(i)) })
	for i := range ws {
		cpu := 600 * (1 + 0.08*float64(i))
		ws[i].Probes.CPUMicrosPerRequest = &cpu
		ws[i].Probes.SQLite = &window.SQLite{Tables: []window.SQLiteTable{
			{Name: "items", Rows: int64(2000 + 300*i)}, {Name: "users", Rows: 16},
		}}
	}
	res := Analyze(ws, DefaultOptions())
	f, ok := find(res, KindCollapse)
	if !ok || f.Severity != Warning || f.Evidence.Table != "items" || f.Evidence.Op != "" {
		t.Fatalf("want a warning collapse naming items and no op; got %s", describe(res))
	}
	for _, s := range []string{"CPU per request rose", "in step with items", "no op slowed by itself", "saturated"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
}

// A rise of the target's CPU per request with no table to blame is a
// warning only if it lasts to the end of the run: cores shared for a stretch
// with work the host probe misses (a CI compiling beside the soak) inflate
// it as much, and pass.
func TestCollapseCPURiseMustLast(t *testing.T) {
	run := func(until int) Result {
		return Analyze(windows(30, func(i int, w *window.Window) {
			jitter := 1 + 0.02*math.Sin(float64(i)*2.3)
			rps, cpu := 2000.0, 250.0
			if i >= 15 && i < until {
				rps, cpu = 1300, 400 // the stretch: 35 % fewer requests, 1.6× the CPU
			}
			w.RPS = rps * jitter
			w.Requests = int64(w.RPS * 3)
			w.OK = w.Requests
			c := cpu * jitter
			w.Probes.CPUMicrosPerRequest = &c
		}), DefaultOptions())
	}
	res := run(27) // back to 250 µs in the last three windows, as the real run
	f, ok := find(res, KindCollapse)
	if !ok || f.Severity != Info || !strings.Contains(f.Summary, "then fell back to") || !strings.Contains(f.Summary, "a passing slowdown") {
		t.Errorf("a CPU rise that passed: want an info note that it fell back; got %s", describe(res))
	}
	if ok && (f.Evidence.Notes["cpu_us_per_request_end"] > 300 || f.Evidence.Notes["cpu_us_per_request_after"] < 390) {
		t.Errorf("notes %v, want the last quarter's median ≈ 400 µs and the end's ≈ 250", f.Evidence.Notes)
	}
	res = run(30) // to the end: the target does more work
	f, ok = find(res, KindCollapse)
	if !ok || f.Severity != Warning || !strings.Contains(f.Summary, "does more work per request") {
		t.Errorf("a CPU rise that lasted to the end: want a warning; got %s", describe(res))
	}
}

func TestOffHeapLeak(t *testing.T) {
	// 30 windows of 6,000 requests: external memory +2 KiB per request
	// (12 MiB per window), the heap +100 bytes per request.
	grow := func(perReq, heapPerReq float64) func(i int, w *window.Window) {
		return func(i int, w *window.Window) {
			heap := 10*mib + float64(i)*6000*heapPerReq + float64(i%3)*0.1*mib
			ext := 2*mib + float64(i)*6000*perReq
			rss := 60*mib + heap*1.2 + ext
			w.Probes.HeapBytes, w.Probes.HeapForcedGC = bytesPtr(heap), true
			w.Probes.RSSBytes = bytesPtr(rss)
			w.Probes.Node = &window.NodeMemory{HeapUsedBytes: int64(heap), ExternalBytes: int64(ext), ArrayBuffersBytes: int64(ext), RSSBytes: int64(rss)}
		}
	}
	f, ok := find(Analyze(windows(30, grow(2048, 100)), DefaultOptions()), KindLeak)
	if !ok || f.Severity != Critical {
		t.Fatalf("Buffers retained: leak %v %s %q, want a critical leak", ok, f.Severity, f.Summary)
	}
	if f.Evidence.Notes["off_heap"] != 1 || !strings.HasPrefix(f.Summary, whatExternal+" grew") ||
		!strings.Contains(f.Summary, "outside the managed heap") || !strings.Contains(f.Summary, "post-GC heap grew far less") {
		t.Errorf("summary %q, want the external memory's growth outside the managed heap", f.Summary)
	}
	if got, want := f.Evidence.PerKRequests, 2048.0*1000; !approxEqual(got, want, 0.01) {
		t.Errorf("per 1k requests %v, want %v", got, want)
	}
	// Its clean twin: nothing grows.
	for _, v := range Analyze(windows(30, grow(0, 0)), DefaultOptions()).Verdicts() {
		t.Errorf("no Buffers: %s %s %q, want no verdict", v.Severity, v.Kind, v.Summary)
	}
	// A heap leak: RSS grows with it, so the finding stays a heap leak and
	// gives the RSS beside it.
	ws := windows(30, func(i int, w *window.Window) {
		heap := 10*mib + float64(i)*mib
		w.Probes.HeapBytes = bytesPtr(heap)
		w.Probes.RSSBytes = bytesPtr(20*mib + 2*heap)
	})
	f, ok = find(Analyze(ws, DefaultOptions()), KindLeak)
	if !ok || f.Evidence.Notes["off_heap"] != 0 || !strings.HasPrefix(f.Summary, "post-GC heap grew") || !strings.Contains(f.Summary, "; RSS ") {
		t.Errorf("heap leak: %v %q, want a heap leak with the RSS beside it", ok, f.Summary)
	}
	if f.Evidence.Notes["rss_after"] <= f.Evidence.Notes["rss_before"] {
		t.Errorf("rss before/after %v/%v, want growth", f.Evidence.Notes["rss_before"], f.Evidence.Notes["rss_after"])
	}
	// A Go target's RSS growing with a flat heap: native memory, a leak;
	// the same with an embedded SQLite file (its page cache fills outside
	// the heap as the file grows): an info note.
	native := func(sqlite bool) []window.Window {
		return windows(30, func(i int, w *window.Window) {
			w.Probes.HeapBytes = bytesPtr(10*mib + float64(i%3)*0.1*mib)
			w.Probes.RSSBytes = bytesPtr(30*mib + float64(i)*6000*600)
			if sqlite {
				w.Probes.SQLite = &window.SQLite{FileBytes: int64(i) << 20, Tables: []window.SQLiteTable{{Name: "items", Rows: int64(1000 * (i + 1))}}}
			}
		})
	}
	f, ok = find(Analyze(native(false), DefaultOptions()), KindLeak)
	if !ok || f.Severity != Critical || !strings.HasPrefix(f.Summary, "RSS grew") || f.Evidence.Notes["off_heap"] != 1 {
		t.Errorf("native growth: %v %s %q, want a critical leak outside the heap", ok, f.Severity, f.Summary)
	}
	f, ok = find(Analyze(native(true), DefaultOptions()), KindLeak)
	if !ok || f.Severity != Info || !strings.Contains(f.Summary, "embeds SQLite") {
		t.Errorf("RSS of a SQLite target: %v %s %q, want an info note about SQLite's page cache", ok, f.Severity, f.Summary)
	}
}

func TestPausesFinding(t *testing.T) {
	var foreign func(i int) float64
	cpu, cpuRise := 300.0, 0.1 // µs per request at the start, rising by cpuRise per window
	pausesOf := func(p99 func(i int) float64, lat func(i int, p float64) float64, gc bool) Result {
		return Analyze(windows(30, func(i int, w *window.Window) {
			p := &window.Pauses{P50Ms: p99(i) / 4, P99Ms: p99(i), MaxMs: 2 * p99(i), Count: 300}
			if gc {
				w.Probes.GCPause = p
			} else {
				w.Probes.EventLoopDelay = p
			}
			w.LatencyMs.P99 = lat(i, p99(i))
			w.LatencyMs.P999 = 2 * w.LatencyMs.P99
			if cpu > 0 {
				c := cpu * (1 + cpuRise*float64(i)) // the blocking work is the target's
				w.Probes.CPUMicrosPerRequest = &c
			}
			if foreign != nil {
				f := foreign(i)
				w.Probes.HostForeignCPU = &f
			}
		}), DefaultOptions())
	}
	noise := func(i int) float64 { return float64((i*7)%5) * 0.8 }
	follow := func(_ int, p float64) float64 { return 30 + p }
	steady := func(i int, _ float64) float64 { return 30 + noise(i) }

	f, ok := find(pausesOf(func(i int) float64 { return 4 + 4*float64(i) + noise(i) }, follow, false), KindPauses)
	if !ok || f.Severity != Critical || !strings.Contains(f.Summary, "event-loop delay p99 rose") || !strings.Contains(f.Summary, "p99.9 latency followed") {
		t.Errorf("rising event-loop delay, latency following: %v %s %q, want critical", ok, f.Severity, f.Summary)
	}
	if f.Evidence.Before >= 40 || f.Evidence.After <= 90 || f.Evidence.Correlation < 0.9 {
		t.Errorf("evidence %+v, want before < 40 ms, after > 90 ms, correlation ≈ 1", f.Evidence)
	}
	f, ok = find(pausesOf(func(i int) float64 { return 4 + 4*float64(i) + noise(i) }, steady, false), KindPauses)
	if !ok || f.Severity != Info || !strings.Contains(f.Summary, "did not follow") {
		t.Errorf("rising delay the requests did not feel: %v %s %q, want an info note", ok, f.Severity, f.Summary)
	}
	f, ok = find(pausesOf(func(i int) float64 { return 70 + 20*float64(i%4) }, follow, true), KindPauses)
	if !ok || f.Severity != Warning || !strings.Contains(f.Summary, "GC pause p99 sat at") {
		t.Errorf("GC pauses high and flat, latency following: %v %s %q, want a warning", ok, f.Severity, f.Summary)
	}
	// The same rise on a machine whose other tenants take more and more of
	// it: a starved CPU, an info note.
	foreign = func(i int) float64 { return 0.2 + 0.02*float64(i) }
	f, ok = find(pausesOf(func(i int) float64 { return 4 + 4*float64(i) + noise(i) }, follow, false), KindPauses)
	if !ok || f.Severity != Info || !strings.Contains(f.Summary, "starved CPU") {
		t.Errorf("rising delay with other load rising: %v %s %q, want an info note (a starved CPU)", ok, f.Severity, f.Summary)
	}
	foreign = nil
	// Without host readings: the target's CPU per request stayed flat.
	cpuRise = 0
	f, ok = find(pausesOf(func(i int) float64 { return 4 + 4*float64(i) + noise(i) }, follow, false), KindPauses)
	if !ok || f.Severity != Info || !strings.Contains(f.Summary, "CPU per request stayed") {
		t.Errorf("rising delay, CPU per request flat: %v %s %q, want an info note (a starved CPU)", ok, f.Severity, f.Summary)
	}
	cpuRise = 0.1
	f, ok = find(pausesOf(func(i int) float64 { return 3 + float64(i) + noise(i) }, follow, true), KindPauses)
	if !ok || f.Severity != Info || !strings.Contains(f.Summary, "stay under 50 ms") {
		t.Errorf("GC pauses rising 3 → 30 ms, latency following: %v %s %q, want an info note (under the bar)", ok, f.Severity, f.Summary)
	}
	if _, ok := find(pausesOf(func(i int) float64 { return 2 + noise(i) }, follow, false), KindPauses); ok {
		t.Error("a quiet event loop gave a pauses finding")
	}
	if _, ok := find(pausesOf(func(i int) float64 { return 0.1 + 0.01*float64(i) }, follow, true), KindPauses); ok {
		t.Error("sub-millisecond GC pauses rising a little gave a pauses finding")
	}
}

// A throughput fall that no probe explains is a warning without a database
// probe — unless the host probe saw other processes take the machine.
func TestCollapseOnABusyMachine(t *testing.T) {
	ws := func(foreign bool) []window.Window {
		return windows(30, func(i int, w *window.Window) {
			r := int64(6000 - 185*i)
			w.Requests, w.OK, w.RPS = r, r, float64(r)/3
			c := 300.0
			w.Probes.CPUMicrosPerRequest = &c
			if foreign {
				f := 0.6 + 0.01*float64(i)
				w.Probes.HostForeignCPU = &f
			}
		})
	}
	f, ok := find(Analyze(ws(false), DefaultOptions()), KindCollapse)
	if !ok || f.Severity != Warning {
		t.Fatalf("unexplained fall without host readings: %v %s %q, want a warning", ok, f.Severity, f.Summary)
	}
	f, ok = find(Analyze(ws(true), DefaultOptions()), KindCollapse)
	if !ok || f.Severity != Info || !strings.Contains(f.Summary, "other processes took") {
		t.Errorf("the same fall with other processes taking the machine: %v %s %q, want an info note", ok, f.Severity, f.Summary)
	}
}

// A target longhaul did not start (environment.target.url) cannot have its
// process or database probed: the note says how to get them, not "enable
// the probes".
func TestMissingEvidenceForExternalTarget(t *testing.T) {
	opts := DefaultOptions()
	opts.ExternalTarget = true
	f, ok := find(Analyze(windows(30, nil), opts), KindMissingEvidence)
	if !ok {
		t.Fatal("no missing_evidence finding")
	}
	for _, want := range []string{"longhaul did not start this target (environment.target.url)", "let longhaul start it (target.command or target.image", "probes.heap.metric"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary %q lacks %q", f.Summary, want)
		}
	}
	if strings.Contains(f.Summary, "enable the matching probes") {
		t.Errorf("summary %q tells to enable probes that cannot apply", f.Summary)
	}
}
