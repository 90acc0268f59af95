package analysis

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// The accuracy bar (issue 5 §3), on simulated runs: a leak on every seed of
// the leak models, a collapse naming items on every seed of the no-index
// models, and no finding of severity warning or worse on any seed of the
// clean models. Seeds are fixed, so a failure reproduces.

// seeds returns how many seeds to run: many by default, fewer with -short.
func seeds(t *testing.T, n int) int {
	if testing.Short() {
		return max(n/10, 10)
	}
	return n
}

// seedOffset shifts every seed by $ANALYSIS_SEED_OFFSET, to check the
// detectors on runs they were never tuned on:
//
//	ANALYSIS_SEED_OFFSET=100000 go test ./analysis -run Accuracy -v
//
// It is read inside the tests, not at package init, so that the test cache
// knows the result depends on it.
func seedOffsetFromEnv() uint64 {
	v, _ := strconv.ParseUint(os.Getenv("ANALYSIS_SEED_OFFSET"), 10, 64)
	return v
}

// wantOffHeap wants a warning-or-worse leak outside the heap, in series what.
func wantOffHeap(what string) check {
	return func(res Result) error {
		for _, f := range res.Verdicts() {
			if f.Kind == KindLeak {
				if f.Evidence.Notes["off_heap"] != 1 || !strings.HasPrefix(f.Summary, what+" grew") ||
					!strings.Contains(f.Summary, "outside the managed heap") {
					return fmt.Errorf("a leak, but not outside the heap in %s: %s", what, f.Summary)
				}
				return nil
			}
		}
		return fmt.Errorf("no leak; got %s", describe(res))
	}
}

var cleanModels = []model{
	demo,
	demo.with("demo with a cache that fills and levels off", func(m *model) {
		m.cacheMin, m.cacheMax = 10<<20, 60<<20
		m.cacheTauMin, m.cacheTauMax = 0.03, 0.2
	}),
	demo.with("demo with background errors", func(m *model) { m.baseErrRate = 5e-4 }),
	demo.with("demo, forced-GC checkpoints only (thin heap data)", func(m *model) { m.passive = false }),
	demo.with("demo, no probes but the heap", func(m *model) { m.db, m.cpu = false, false; m.interference = false }),
	demo.with("demo, two incarnations", func(m *model) { m.incarnations = 2; m.windows = 20 }),
	demo.with("node target, inspector every window", func(m *model) {
		m.node, m.passive, m.forcedEvery = true, false, 0
		m.cacheMin, m.cacheMax = 2<<20, 8<<20 // compiled code and feedback vectors
		m.cacheTauMin, m.cacheTauMax = 0.03, 0.15
	}),
	demo.with("node target at load 20, inspector every window", func(m *model) {
		m.node, m.passive, m.forcedEvery = true, false, 0
		m.logJitter, m.interference = busy.logJitter, true
	}),
	demoSQLite,
	busy.with("demo on SQLite at load 20", func(m *model) { m.db, m.sqlite = false, true }),
	demoSQLiteStarved,
	rampFree16,
	rampFree64,
	busy,
	busy.with("demo on a machine at load 20, cache levelling off", func(m *model) {
		m.cacheMin, m.cacheMax, m.cacheTauMin, m.cacheTauMax = 10<<20, 60<<20, 0.03, 0.2
	}),
	demoSharedCores,
	demoSQLite.with("demo on SQLite, cores shared for a stretch with a job the host probe misses", func(m *model) { m.sharedCores = true }),
}

// demoSharedCores is the clean demo with a stretch of shared cores that
// raises its CPU per request 1.4–1.8× and then passes (model.sharedCores).
var demoSharedCores = demo.with("demo, cores shared for a stretch with a job the host probe misses", func(m *model) { m.sharedCores = true })

var rampFree16 = model{name: "ramp 1→16 VUs well below capacity", windows: 30, windowSec: 3, vus: 16, rampTo: 16, perVU: 120,
	jitterMin: 0.1, jitterMax: 0.3, passive: true, forcedEvery: 5, db: true, cpu: true, rowCostK: 3000}

var rampFree64 = model{name: "ramp 1→64 VUs well below capacity", windows: 40, windowSec: 3, vus: 64, rampTo: 64, perVU: 40,
	jitterMin: 0.1, jitterMax: 0.3, interference: true, passive: true, forcedEvery: 5, db: true, cpu: true, rowCostK: 3000}

// An unsaturated ramp must not report a throughput limit — except that a
// noisy neighbour taking 15–45 % of the machine for the second half of the
// ramp does make the measured throughput level off, which no window figure
// can tell from the target saturating. Without one: never; with one: rarely.
func TestAccuracyRampWithoutLimit(t *testing.T) {
	for _, tt := range []struct {
		m       model
		maxRate float64
	}{
		{rampFree16, 0},
		{rampFree64, 0.06},
	} {
		n := seeds(t, 1000)
		limits := 0
		for seed := seedOffsetFromEnv() + 1; seed <= seedOffsetFromEnv()+uint64(n); seed++ {
			if f, ok := find(Analyze(tt.m.generate(seed), DefaultOptions()), KindThroughputLimit); ok {
				limits++
				if float64(limits) > tt.maxRate*float64(n) && limits <= int(tt.maxRate*float64(n))+3 {
					t.Errorf("%s, seed %d: %s", tt.m.name, seed, f.Summary)
				}
			}
		}
		t.Logf("%-55s %4d seeds, a limit reported on %d (%.1f %%)", tt.m.name, n, limits, 100*float64(limits)/float64(n))
	}
}

// The demo target in its SQLite mode with the SQLite probe: table rows and
// the file's size, no rows-read statistics.
var demoSQLite = demo.with("demo on SQLite (SQLite probe, no read statistics)", func(m *model) { m.db, m.sqlite = false, true })

// The same with the driver and target starved of CPU in a third of the
// windows (every op's p50 tens to hundreds of milliseconds longer there).
var demoSQLiteStarved = demoSQLite.with("demo on SQLite, starved of CPU in a third of the windows", func(m *model) { m.starved = 1.0 / 3 })

// collapseOn checks a collapse that names the table and the op that slowed.
func collapseOn(table, op string) check {
	return wantKind(KindCollapse, Warning, func(f Finding) error {
		if f.Evidence.Table != table || f.Evidence.Op != op {
			return fmt.Errorf("collapse blames table %q and op %q, want %s and %s: %s", f.Evidence.Table, f.Evidence.Op, table, op, f.Summary)
		}
		return nil
	})
}

// collapseOnTable checks a collapse that names the table (read statistics
// found it) and, if it names an op, the right one.
func collapseOnTable(table, op string) check {
	return wantKind(KindCollapse, Warning, func(f Finding) error {
		if f.Evidence.Table != table || f.Evidence.Op != "" && f.Evidence.Op != op {
			return fmt.Errorf("collapse blames table %q and op %q, want %s and %s (or none): %s", f.Evidence.Table, f.Evidence.Op, table, op, f.Summary)
		}
		return nil
	})
}

// The bar's models on a machine as loaded as the one the real runs in
// bench/accuracy met (load ≈ 20 on 2 cores).
var busy = demo.with("demo on a machine at load 20", func(m *model) { m.logJitter = 0.5 })

var longClean = demo.with("8-hour soak, 20 s windows", func(m *model) {
	m.windows, m.windowSec, m.dt = 1440, 20, 1
})

func TestAccuracyClean(t *testing.T) {
	models := append(slices.Clone(cleanModels), longClean)
	var runs, alarms int
	for _, m := range models {
		n := seeds(t, 1000)
		if m.windows > 500 {
			n = seeds(t, 40)
		}
		bad := 0
		for seed := seedOffsetFromEnv() + 1; seed <= seedOffsetFromEnv()+uint64(n); seed++ {
			res := Analyze(m.generate(seed), DefaultOptions())
			if v := res.Verdicts(); len(v) > 0 {
				bad++
				if bad <= 3 {
					t.Errorf("%s, seed %d: %d warning-or-worse findings on a clean run; first: %s: %s",
						m.name, seed, len(v), v[0].Kind, v[0].Summary)
				}
			}
		}
		runs += n
		alarms += bad
		t.Logf("%-55s %4d seeds, %d false alarms", m.name, n, bad)
	}
	t.Logf("clean models: %d warning-or-worse findings in %d runs (false-positive rate %.3f %%)",
		alarms, runs, 100*float64(alarms)/float64(runs))
}

// Without a database probe, a fall in throughput that the target's CPU does
// not explain may be a slow database, so a large one is a warning by design
// (CollapseOptions.MinUnexplainedDrop) — and a noisy neighbour taking ~45 %
// of the machine for the last quarter of a run produces one now and then.
// Everything else must stay quiet, and that warning must stay rare.
func TestAccuracyCleanWithoutDatabaseProbe(t *testing.T) {
	m := demo.with("node target, inspector every window, no database", func(m *model) {
		m.node, m.passive, m.forcedEvery, m.db = true, false, 0, false
		m.cacheMin, m.cacheMax = 2<<20, 8<<20 // compiled code and feedback vectors
		m.cacheTauMin, m.cacheTauMax = 0.03, 0.15
	})
	n := seeds(t, 1000)
	var collapses int
	for seed := seedOffsetFromEnv() + 1; seed <= seedOffsetFromEnv()+uint64(n); seed++ {
		for _, f := range Analyze(m.generate(seed), DefaultOptions()).Verdicts() {
			if f.Kind != KindCollapse || f.Evidence.Table != "" || !slices.Contains(f.Evidence.Missing, MissingDatabase) {
				t.Errorf("seed %d: %s %s: %s", seed, f.Severity, f.Kind, f.Summary)
				continue
			}
			collapses++
		}
	}
	rate := float64(collapses) / float64(n)
	t.Logf("%s: %d seeds, no leak/surge/limit alarms, %d unexplained-collapse warnings (%.2f %%)", m.name, n, collapses, 100*rate)
	if rate > 0.005 {
		t.Errorf("unexplained-collapse warnings on %.2f %% of clean runs without a database probe, want ≤ 0.5 %%", 100*rate)
	}
}

// Without the database probe a collapse can still be seen, without a table,
// on most runs; on the rest a noisy neighbour during the first part of the
// run hides the fall, and only the database statistics could have shown it.
func TestAccuracyCollapseWithoutDatabaseProbe(t *testing.T) {
	m := demo.with("demo, no index, no database probe", func(m *model) { m.noIndex = true; m.db = false })
	n := seeds(t, 1000)
	var seen, warned int
	for seed := seedOffsetFromEnv() + 1; seed <= seedOffsetFromEnv()+uint64(n); seed++ {
		for _, f := range Analyze(m.generate(seed), DefaultOptions()).Findings {
			if f.Kind != KindCollapse {
				continue
			}
			if f.Evidence.Table != "" || !slices.Contains(f.Evidence.Missing, MissingDatabase) {
				t.Fatalf("seed %d: want no table and %q in missing; got %+v", seed, MissingDatabase, f.Evidence)
			}
			seen++
			if f.Severity.Rank() >= Warning.Rank() {
				warned++
			}
		}
	}
	t.Logf("%s: %d seeds, collapse reported on %d (%d as warning)", m.name, n, seen, warned)
	if float64(seen) < 0.9*float64(n) {
		t.Errorf("collapse reported on %d of %d runs without a database probe, want ≥ 90 %%", seen, n)
	}
}

// check is what a model's runs must show, on every seed.
type check func(res Result) error

func wantKind(kind string, minSev Severity, extra func(Finding) error) check {
	return func(res Result) error {
		for _, f := range res.Findings {
			if f.Kind == kind && f.Severity.Rank() >= minSev.Rank() {
				if extra != nil {
					return extra(f)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s finding of severity ≥ %s; got %s", kind, minSev, describe(res))
	}
}

func describe(res Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		fmt.Fprintf(&b, "\n\t[%s %s inc %d] %s", f.Severity, f.Kind, f.Incarnation, f.Summary)
	}
	if b.Len() == 0 {
		return "nothing"
	}
	return b.String()
}

func TestAccuracyFaults(t *testing.T) {
	leak := demo.with("demo, DEMO_LEAK_BYTES=2048", func(m *model) { m.leakPerReq = 2048 })
	tests := []struct {
		m     model
		seeds int
		want  check
		// minRate < 1 allows misses, for a model whose noise can genuinely
		// erase the fault on a few seeds; the reason is given at the entry.
		minRate float64
	}{
		{leak, 1000, wantKind(KindLeak, Critical, nil), 1},
		{demo.with("demo, 64-byte leak", func(m *model) { m.leakPerReq = 64 }), 1000, wantKind(KindLeak, Critical, nil), 1},
		{leak.with("demo, 2 KiB leak behind a warming cache", func(m *model) {
			m.cacheMin, m.cacheMax, m.cacheTauMin, m.cacheTauMax = 10<<20, 60<<20, 0.03, 0.2
		}), 1000, wantKind(KindLeak, Critical, nil), 1},
		{leak.with("node target leaking 2 KiB per request", func(m *model) {
			m.node, m.passive, m.forcedEvery, m.db = true, false, 0, false
		}), 1000, wantKind(KindLeak, Critical, nil), 1},
		{demo.with("node target retaining a 2 KiB Buffer per request", func(m *model) {
			m.node, m.passive, m.forcedEvery, m.db = true, false, 0, false
			m.cacheMin, m.cacheMax, m.cacheTauMin, m.cacheTauMax = 2<<20, 8<<20, 0.03, 0.15
			m.offHeapPerReq = 2048
			m.leakPerReq = 100 // the Buffers' JavaScript objects
		}), 1000, wantOffHeap(whatExternal), 1},
		{busy.with("node target at load 20 retaining a 2 KiB Buffer per request", func(m *model) {
			m.node, m.passive, m.forcedEvery, m.db = true, false, 0, false
			m.offHeapPerReq, m.leakPerReq = 2048, 100
		}), 1000, wantOffHeap(whatExternal), 1},
		{demo.with("demo leaking 2 KiB of native memory per request", func(m *model) { m.offHeapPerReq = 2048 }), 1000,
			wantOffHeap(whatRSS), 1},
		{demo.with("node target, event-loop delay p99 rising by 120 ms", func(m *model) {
			m.node, m.passive, m.forcedEvery, m.db = true, false, 0, false
			m.loopDelayRise = 120
		}), 1000, wantKind(KindPauses, Warning, func(f Finding) error {
			if !strings.Contains(f.Summary, "event-loop delay p99 rose") || !strings.Contains(f.Summary, "latency followed") {
				return fmt.Errorf("pauses summary: %s", f.Summary)
			}
			return nil
		}), 1},
		{leak.with("demo leak, two incarnations", func(m *model) { m.incarnations = 2; m.windows = 20 }), 300,
			func(res Result) error {
				var got []int
				for _, f := range res.Findings {
					if f.Kind == KindLeak && f.Severity == Critical {
						got = append(got, f.Incarnation)
					}
				}
				if !slices.Equal(got, []int{0, 1}) {
					return fmt.Errorf("critical leaks in incarnations %v, want [0 1]; got %s", got, describe(res))
				}
				return nil
			}, 1},
		{demo.with("demo, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex = true }), 1000,
			collapseOnTable("items", "list"), 1},
		{demo.with("demo, no index, half the collapse speed", func(m *model) { m.noIndex = true; m.rowCostK = 8000 }), 1000,
			collapseOnTable("items", "list"), 1},
		{busy.with("demo at load 20, DEMO_LEAK_BYTES=2048", func(m *model) { m.leakPerReq = 2048 }), 1000,
			wantKind(KindLeak, Critical, nil), 1},
		{busy.with("demo at load 20, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex = true }), 1000,
			collapseOnTable("items", "list"), 1},
		// Without rows-read statistics only the op's own slowdown shows
		// the table: on one or two seeds in a thousand a noisy neighbour
		// in the first part of the run hides it (PostgreSQL's statistics
		// still find those: the models above).
		{demoSQLite.with("demo on SQLite, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex = true }), 1000,
			collapseOn("items", "list"), 0.995},
		{demoSQLite.with("demo on SQLite, no index, half the collapse speed", func(m *model) { m.noIndex = true; m.rowCostK = 8000 }), 1000,
			collapseOn("items", "list"), 0.995},
		{busy.with("demo on SQLite at load 20, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex, m.db, m.sqlite = true, false, true }), 1000,
			collapseOn("items", "list"), 0.995},
		// Windows where every op stalled are left out of the op trends
		// (CollapseOptions.MaxCommonSlowdown); with them in, list was named
		// on about half of the seeds. On the seeds still missed, list's rise
		// relative to the other ops stays under MinOpRise (seed 78: 1.38×,
		// the others queueing behind it) or nothing fell at all (seed 97).
		{demoSQLiteStarved.with("demo on SQLite, starved in a third of the windows, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex = true }), 1000,
			collapseOn("items", "list"), 0.95},
		{demo.with("demo, 5xx surge from 60 % of the run", func(m *model) {
			m.surgeAt, m.surgeRate, m.surgeClass = 0.6, 0.08, window.Status5xx
		}), 1000, wantKind(KindErrorSurge, Critical, func(f Finding) error {
			if f.Evidence.Notes["errors_5xx"] == 0 || !strings.Contains(f.Summary, "mostly 5xx") {
				return fmt.Errorf("surge does not name 5xx: %s", f.Summary)
			}
			return nil
		}), 1},
		// On about one seed in a thousand the machine's drift adds +50 % or
		// more over the top half of the ramp: throughput then really keeps
		// rising (elasticity ≈ 0.3) and "flat" would be wrong.
		{model{name: "ramp 1→64 VUs, saturating at ~12", windows: 40, windowSec: 3, vus: 64, rampTo: 64, perVU: 150, capacity: 1800,
			jitterMin: 0.1, jitterMax: 0.3, passive: true, forcedEvery: 5, db: true, cpu: true, rowCostK: 3000}, 1000,
			wantKind(KindThroughputLimit, Info, func(f Finding) error {
				// The curve reaches 90 % of its plateau at 14 VUs. A
				// noisy neighbour mid-ramp can make it look later, up to
				// the largest knee the detector considers (64/MinOverKnee).
				if k := f.Evidence.Notes["knee"]; k < 7 || k > 26 {
					return fmt.Errorf("knee at %v VUs, want 7–26: %s", k, f.Summary)
				}
				return nil
			}), 0.995},
	}
	for _, tt := range tests {
		n := seeds(t, tt.seeds)
		missed := 0
		sev := map[Severity]int{}
		minRate := tt.minRate
		if minRate == 0 {
			minRate = 1
		}
		allowed := int(math.Ceil(float64(n)*(1-minRate) - 1e-9))
		for seed := seedOffsetFromEnv() + 1; seed <= seedOffsetFromEnv()+uint64(n); seed++ {
			res := Analyze(tt.m.generate(seed), DefaultOptions())
			if err := tt.want(res); err != nil {
				missed++
				if missed > allowed && missed <= allowed+3 {
					t.Errorf("%s, seed %d: %v", tt.m.name, seed, err)
				}
			}
			sev[res.Worst()]++
		}
		t.Logf("%-55s %4d seeds, %d missed (worst severity: %d critical, %d warning)", tt.m.name, n, missed, sev[Critical], sev[Warning])
	}
}

// The accuracy bar again with the parse-mix scenario's warm-up of 30 s: a
// third of a 90-second run is excluded, so the collapse's steep start and the
// cache's growth fall outside the analysed windows.
func TestAccuracyBarWithScenarioWarmup(t *testing.T) {
	opts := Options{Warmup: 30 * time.Second}
	leak := demo.with("demo, DEMO_LEAK_BYTES=2048", func(m *model) { m.leakPerReq = 2048 })
	noIndex := demo.with("demo, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex = true })
	cache := demo.with("demo with a cache that fills and levels off", func(m *model) {
		m.cacheMin, m.cacheMax, m.cacheTauMin, m.cacheTauMax = 10<<20, 60<<20, 0.03, 0.2
	})
	tests := []struct {
		m    model
		want check // nil: no warning-or-worse finding
	}{
		{demo, nil},
		{cache, nil},
		{leak, wantKind(KindLeak, Critical, nil)},
		{noIndex, wantKind(KindCollapse, Warning, func(f Finding) error {
			if f.Evidence.Table != "items" {
				return fmt.Errorf("collapse blames %q, want items", f.Evidence.Table)
			}
			return nil
		})},
	}
	for _, tt := range tests {
		n := seeds(t, 500)
		bad := 0
		for seed := seedOffsetFromEnv() + 1; seed <= seedOffsetFromEnv()+uint64(n); seed++ {
			res := Analyze(tt.m.generate(seed), opts)
			var err error
			if tt.want != nil {
				err = tt.want(res)
			} else if v := res.Verdicts(); len(v) > 0 {
				err = fmt.Errorf("%s: %s", v[0].Kind, v[0].Summary)
			}
			if err != nil {
				bad++
				if bad <= 3 {
					t.Errorf("%s, seed %d: %v", tt.m.name, seed, err)
				}
			}
		}
		t.Logf("%-55s %4d seeds with 30 s warm-up, %d wrong", tt.m.name, n, bad)
	}
}

// With PostgreSQL statistics a collapse names the table on every seed (the
// faults test); it names the op that slowed, list, on nearly all: on the
// rest a noisy neighbour hides list's own slowdown, and the op is left out
// rather than guessed.
func TestAccuracyCollapseNamesTheOp(t *testing.T) {
	for _, m := range []model{
		demo.with("demo, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex = true }),
		busy.with("demo at load 20, DEMO_INDEX_BUCKET=false", func(m *model) { m.noIndex = true }),
	} {
		n := seeds(t, 1000)
		named := 0
		for seed := seedOffsetFromEnv() + 1; seed <= seedOffsetFromEnv()+uint64(n); seed++ {
			if f, ok := find(Analyze(m.generate(seed), DefaultOptions()), KindCollapse); ok && f.Evidence.Op == "list" {
				named++
				if !strings.Contains(f.Summary, "list: p50 ") {
					t.Errorf("%s, seed %d: summary does not give list's p50: %s", m.name, seed, f.Summary)
				}
			}
		}
		t.Logf("%-55s %4d seeds, list named on %d", m.name, n, named)
		if float64(named) < 0.95*float64(n) {
			t.Errorf("%s: list named on %d of %d seeds, want ≥ 95 %%", m.name, named, n)
		}
	}
}
