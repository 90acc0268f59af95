package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/window"
)

// Result is what Analyze found.
//
// Findings holds verdicts about the target (a leak, a collapse, an error
// surge) with severity warning or critical, and findings with severity info:
// the throughput limit a ramp found, data too thin for a verdict
// (insufficient_data), probe data that was missing (missing_evidence), or why
// something that looked like a problem is not one (a heap that levelled off, a
// fall in throughput that the target's own figures do not explain). Notes are
// findings rather than a separate list of warnings so that they are stored
// with the run and printed with the report like everything else, while an
// alert on "warning or worse" never fires on them: thin data says something
// about the run, not the target.
//
// Findings are ordered by incarnation, then most severe first. The zero
// Result (no windows) has no findings.
type Result struct {
	Findings []Finding `json:"findings"`
}

// Worst returns the highest severity among the findings, or "" if there are none.
func (r Result) Worst() Severity {
	var w Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > w.Rank() {
			w = f.Severity
		}
	}
	return w
}

// Verdicts returns the findings of severity warning or worse.
func (r Result) Verdicts() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity.Rank() >= Warning.Rank() {
			out = append(out, f)
		}
	}
	return out
}

// Analyze looks for a memory leak, a throughput collapse caused by data growth,
// an error surge and a throughput limit in a run's windows. Windows may come in
// any order and from several incarnations; each incarnation (a fresh
// environment after the previous one was lost) is analysed on its own, since
// its heap and tables start over. Gap and partial windows are skipped (a
// gap's events still count: a target or database that a resumed drive found
// stopped is a finding, even in an incarnation that has nothing but gaps);
// each incarnation's warm-up windows are excluded (Options.Warmup,
// Options.WarmupWindows).
//
// Analyze is a pure function of its input: no I/O, safe for concurrent use,
// and ws is not modified.
func Analyze(ws []window.Window, opts Options) Result {
	a := analyzer{opts: opts.withDefaults()}
	var out []Finding
	var lastMissing []string
	runStart := firstStart(ws)
	incs := a.split(ws)
	for k, inc := range incs {
		fs := append(inc.crashes(runStart, incs[k+1:]), inc.databaseStops(runStart)...)
		fs = append(fs, inc.storeBehind()...)
		if len(inc.all) == 0 {
			// Only gaps: what stopped is all there is to say (no
			// window to judge, nor to call too few).
			out = append(out, sortFindings(fs)...)
			continue
		}
		var thin []string // detectors skipped for lack of windows
		if f, ok := a.leak(inc); ok {
			fs = append(fs, f)
		}
		if f, ok := a.pauses(inc); ok {
			fs = append(fs, f)
		}
		if f, ok := a.unclosedConnections(inc); ok {
			fs = append(fs, f)
		}
		if f, ok := a.rateMissed(inc); ok {
			fs = append(fs, f)
		}
		f, ok, isThin := a.collapse(inc)
		if ok {
			fs = append(fs, f)
		}
		if isThin {
			thin = append(thin, KindCollapse)
		}
		f, ok, isThin = a.errorSurge(inc)
		if ok {
			fs = append(fs, f)
		}
		if isThin {
			thin = append(thin, KindErrorSurge)
		}
		f, ok, isThin = a.throughputLimit(inc)
		if ok {
			fs = append(fs, f)
		}
		if isThin {
			thin = append(thin, KindThroughputLimit)
		}
		if len(thin) > 0 {
			fs = append(fs, inc.thinFinding(thin, a.opts))
		}
		if f, ok := inc.missingFinding(); ok {
			// The same probes are usually missing in every incarnation:
			// say it once.
			if !slices.Equal(f.Evidence.Missing, lastMissing) {
				fs = append(fs, f)
			}
			lastMissing = f.Evidence.Missing
		} else {
			lastMissing = nil
		}
		out = append(out, sortFindings(fs)...)
	}
	return Result{Findings: out}
}

// sortFindings orders one incarnation's findings most severe first.
func sortFindings(fs []Finding) []Finding {
	slices.SortStableFunc(fs, func(x, y Finding) int {
		if c := cmp.Compare(y.Severity.Rank(), x.Severity.Rank()); c != 0 {
			return c
		}
		return cmp.Compare(kindOrder(x.Kind), kindOrder(y.Kind))
	})
	return fs
}

// firstStart is the earliest start of a window of ws that is not a gap.
func firstStart(ws []window.Window) time.Time {
	var t time.Time
	for i := range ws {
		if s := ws[i].Start; !ws[i].Gap && !s.IsZero() && (t.IsZero() || s.Before(t)) {
			t = s
		}
	}
	return t
}

func kindOrder(k string) int {
	switch k {
	case KindCrash, KindDatabaseStop:
		return -1
	case KindLeak:
		return 0
	case KindCollapse:
		return 1
	case KindErrorSurge:
		return 2
	case KindThroughputLimit:
		return 3
	case KindPauses:
		return 4
	case KindUnclosedConnections:
		return 5
	case KindRateMissed:
		return 6
	case KindInsufficientData:
		return 7
	case KindMissingEvidence:
		return 8
	}
	return 9
}

type analyzer struct {
	opts Options
	// Scratch buffers reused across detectors (Analyze is single-goroutine).
	pairBuf, sortBuf []float64
}

// incarnation is one incarnation's windows after gaps and warm-up are removed.
type incarnation struct {
	num      int
	external bool             // longhaul did not start the target (Options.ExternalTarget)
	all      []*window.Window // every window of the incarnation but gaps, warm-up included, by index
	// stoppedGaps are the gaps that say the target or its database
	// stopped: a drive resumed after its worker died found it stopped (no
	// window saw it happen). An incarnation may have nothing else (all
	// empty): its worker died in its first window.
	stoppedGaps []*window.Window
	// firstGap is the incarnation's first gap when it has no window (a
	// restarted target's: the slot lost while it restarted).
	firstGap *window.Window
	warmup   int                    // windows excluded as warm-up
	ws       []*window.Window       // analysed windows, by index
	t        []float64              // seconds from the first analysed window's start to each window's end
	full     []bool                 // window is at least half the usual length (rates are representative)
	rps      []float64              // requests per second
	level    []float64              // load level: ramp target if any, else VUs
	tables   map[string][]tableRead // per table, in window order (windows with the table only)
	// sqlite holds the rows of each table that has no read statistics
	// (only i and liveRows are set): the tables of a SQLite file
	// (sqliteFile), or the collections of a database server that counts
	// documents but not the documents it reads (FerretDB). countsFrom names
	// where they came from, for the findings.
	sqlite     map[string][]tableRead
	sqliteFile bool
	countsFrom string
	// docs: the database is MongoDB, whose tables are collections and whose
	// rows are documents, as the findings say.
	docs bool
}

type tableRead struct {
	i        int // position in incarnation.ws
	liveRows float64
	seq, idx float64 // tuples read by seq scans and fetched by index scans
	perReq   float64 // (seq+idx)/requests
}

// split groups ws by incarnation, drops gaps and warm-up, and derives the
// per-window series the detectors share.
func (a *analyzer) split(ws []window.Window) []*incarnation {
	byInc := map[int][]*window.Window{}
	// Gaps that say the target or its database stopped. An incarnation
	// whose worker died in its very first window has no other window: it
	// is analysed all the same, for those events.
	stopped := map[int][]*window.Window{}
	firstGap := map[int]*window.Window{}
	for i := range ws {
		w := &ws[i]
		if g := firstGap[w.Incarnation]; w.Gap && (g == nil || w.Index < g.Index) {
			firstGap[w.Incarnation] = w
		}
		if w.Gap && (hasEvent(w, window.EventTargetExit) || hasEvent(w, window.EventDatabaseExit)) {
			stopped[w.Incarnation] = append(stopped[w.Incarnation], w)
			if _, ok := byInc[w.Incarnation]; !ok {
				byInc[w.Incarnation] = nil
			}
		}
		if w.Gap || w.Partial {
			continue // a partial window's rates and tail are not comparable
		}
		byInc[w.Incarnation] = append(byInc[w.Incarnation], w)
	}
	nums := make([]int, 0, len(byInc))
	for n := range byInc {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	out := make([]*incarnation, 0, len(nums))
	for _, n := range nums {
		list := byInc[n]
		slices.SortStableFunc(list, func(x, y *window.Window) int { return cmp.Compare(x.Index, y.Index) })
		// A window written twice (a retried activity) keeps its last copy.
		dedup := list[:0]
		for _, w := range list {
			if k := len(dedup); k > 0 && dedup[k-1].Index == w.Index {
				dedup[k-1] = w
				continue
			}
			dedup = append(dedup, w)
		}
		list = dedup
		inc := a.newIncarnation(n, list)
		inc.stoppedGaps = stopped[n]
		if len(list) == 0 {
			inc.firstGap = firstGap[n]
		}
		out = append(out, inc)
	}
	return out
}

func hasEvent(w *window.Window, kind string) bool {
	for _, ev := range w.Events {
		if ev.Kind == kind {
			return true
		}
	}
	return false
}

func (a *analyzer) newIncarnation(num int, list []*window.Window) *incarnation {
	inc := &incarnation{num: num, all: list, external: a.opts.ExternalTarget}
	skip := max(a.opts.WarmupWindows, 0)
	if a.opts.Warmup > 0 && len(list) > 0 && !list[0].Start.IsZero() {
		end := list[0].Start.Add(a.opts.Warmup)
		k := 0
		for k < len(list) && list[k].Start.Before(end) {
			k++
		}
		skip = max(skip, k)
	}
	skip = min(skip, len(list))
	inc.warmup = skip
	inc.ws = list[skip:]
	n := len(inc.ws)
	if n == 0 {
		return inc
	}

	durs := make([]float64, 0, n)
	for _, w := range inc.ws {
		if d := w.Duration().Seconds(); d > 0 {
			durs = append(durs, d)
		}
	}
	usual := 1.0
	if len(durs) > 0 {
		usual = Median(durs)
	}
	inc.t = make([]float64, n)
	inc.full = make([]bool, n)
	inc.rps = make([]float64, n)
	inc.level = make([]float64, n)
	t0 := inc.ws[0].Start
	useTargets := false
	for _, w := range inc.ws {
		if w.Target > 0 {
			useTargets = true
			break
		}
	}
	for i, w := range inc.ws {
		d := w.Duration().Seconds()
		if !t0.IsZero() && !w.End.IsZero() {
			inc.t[i] = w.End.Sub(t0).Seconds()
		} else {
			inc.t[i] = float64(w.Index-inc.ws[0].Index+1) * usual
		}
		inc.full[i] = d <= 0 || d >= usual/2
		switch {
		case d > 0:
			inc.rps[i] = float64(w.Requests) / d
		default:
			inc.rps[i] = w.RPS
		}
		if useTargets {
			inc.level[i] = w.Target
		} else {
			inc.level[i] = float64(w.VUs)
		}
		if db := w.Probes.Database; db != nil && slices.Contains(db.Absent, window.AbsentDocumentsExamined) {
			inc.docs = inc.docs || db.Kind == window.DatabaseMongoDB
			if inc.sqlite == nil {
				inc.sqlite = map[string][]tableRead{}
				inc.countsFrom = "the database server"
			}
			for _, tb := range db.Tables {
				inc.sqlite[tb.Name] = append(inc.sqlite[tb.Name], tableRead{i: i, liveRows: float64(tb.LiveRows)})
			}
		} else if db != nil {
			inc.docs = inc.docs || db.Kind == window.DatabaseMongoDB
			if inc.tables == nil {
				inc.tables = map[string][]tableRead{}
			}
			for _, tb := range db.Tables {
				r := tableRead{i: i, liveRows: float64(tb.LiveRows), seq: float64(tb.SeqTuplesRead), idx: float64(tb.IndexTuplesFetched)}
				switch {
				case w.Requests > 0:
					r.perReq = (r.seq + r.idx) / float64(w.Requests)
				default:
					r.perReq = tb.RowsReadPerRequest
				}
				inc.tables[tb.Name] = append(inc.tables[tb.Name], r)
			}
		}
		if sq := w.Probes.SQLite; sq != nil {
			if inc.sqlite == nil {
				inc.sqlite = map[string][]tableRead{}
			}
			inc.sqliteFile, inc.countsFrom = true, "SQLite"
			for _, tb := range sq.Tables {
				inc.sqlite[tb.Name] = append(inc.sqlite[tb.Name], tableRead{i: i, liveRows: float64(tb.Rows)})
			}
		}
	}
	return inc
}

// span returns the window indexes of the analysed windows at positions i and j.
func (inc *incarnation) span(i, j int) (first, last int) {
	return inc.ws[i].Index, inc.ws[j].Index
}

// thinFinding says which detectors had too few windows.
func (inc *incarnation) thinFinding(kinds []string, o Options) Finding {
	need := max(o.Collapse.MinWindows, o.ErrorSurge.MinWindows, o.ThroughputLimit.MinWindows)
	f := Finding{
		Kind:        KindInsufficientData,
		Severity:    Info,
		Incarnation: inc.num,
		Summary: fmt.Sprintf("only %d windows after warm-up (need %d): no verdict on %s",
			len(inc.ws), need, strings.Join(kinds, ", ")),
		Evidence: Evidence{Notes: map[string]float64{"windows": float64(len(inc.ws)), "warmup_windows": float64(inc.warmup)}},
	}
	if len(inc.ws) > 0 {
		f.Evidence.FirstWindow, f.Evidence.LastWindow = inc.span(0, len(inc.ws)-1)
	}
	return f
}

// Names of probe data in Evidence.Missing.
const (
	MissingHeap     = "heap_bytes"
	MissingDatabase = "database"
	MissingCPU      = "cpu_seconds"
	// MissingStatements: a PostgreSQL database whose statements were not
	// counted (pg_stat_statements absent), as the probe found it.
	MissingStatements = "statements"
)

// missingFinding names the probe data absent from every analysed window and,
// when the windows recorded a probe that failed (window.ProbeFailures), the
// failure: a probe that was on but failing needs fixing, not enabling.
func (inc *incarnation) missingFinding() (Finding, bool) {
	if len(inc.ws) == 0 {
		return Finding{}, false
	}
	var heap, db, cpu, stmts bool
	var stmtsMissing string       // why the database probe could not count statements
	failed := map[string]string{} // probe → its last error
	var absent []string           // readings the database does not offer
	for _, w := range inc.ws {
		heap = heap || w.Probes.HeapBytes != nil
		db = db || w.Probes.Database != nil || w.Probes.SQLite != nil
		if d := w.Probes.Database; d != nil && len(d.Absent) > 0 {
			absent = d.Absent
		}
		cpu = cpu || w.Probes.CPUSeconds != nil || w.Probes.CPUMicrosPerRequest != nil
		if d := w.Probes.Database; d != nil {
			stmts = stmts || d.StatementsCounted
			if d.StatementsUnavailable != "" {
				stmtsMissing = d.StatementsUnavailable
			}
		}
		for _, f := range w.ProbeFailures {
			failed[f.Probe] = f.Error
		}
	}
	var missing, what []string
	enable := false // some missing data had no failing probe: enable one
	fix := false    // some missing data had a failing probe
	add := func(name, text string, probes ...string) {
		missing = append(missing, name)
		for _, p := range probes {
			if e, ok := failed[p]; ok {
				what = append(what, fmt.Sprintf("%s, the %s probe failed: %s)", strings.TrimSuffix(text, ")"), p, shorten(e, 120)))
				fix = true
				return
			}
		}
		what = append(what, text)
		enable = true
	}
	if !heap {
		add(MissingHeap, "post-GC heap (no leak verdict is possible)", "heap.gc_hook", "heap.inspector", "heap.metric")
	}
	if !db {
		add(MissingDatabase, "database statistics (a collapse cannot be traced to a table)", "database")
	}
	if !cpu {
		add(MissingCPU, "target CPU time (a slowdown cannot be told from interference)", "process")
	}
	// Readings the database server does not offer are no probe to enable
	// or fix: said after the advice, in a sentence of their own.
	var offers string
	if len(absent) > 0 {
		missing = append(missing, absent...)
		offers = "the database server does not offer " + strings.ReplaceAll(strings.Join(absent, ", "), "_", " ")
		if slices.Contains(absent, window.AbsentDocumentsExamined) {
			table, _ := inc.terms()
			offers += fmt.Sprintf(", so a collapse is traced to a %s by the op that slowed as it grew, not by what the queries read", table)
		}
	}
	if !stmts && stmtsMissing != "" {
		// Not a probe to enable: the database lacks the extension, and
		// the text says what to do about it.
		missing = append(missing, MissingStatements)
		what = append(what, "statements per request ("+stmtsMissing+")")
	}
	if len(missing) == 0 {
		return Finding{}, false
	}
	first, last := inc.span(0, len(inc.ws)-1)
	if len(what) == 0 {
		return Finding{
			Kind: KindMissingEvidence, Severity: Info, Incarnation: inc.num,
			Summary:  strings.ToUpper(offers[:1]) + offers[1:],
			Evidence: Evidence{FirstWindow: first, LastWindow: last, Missing: missing},
		}, true
	}
	advice := ""
	if fix {
		advice = " — fix the failing probes"
	}
	if enable {
		advice = " — enable the matching probes in the scenario"
		if inc.external {
			advice = " — longhaul did not start this target (environment.target.url), so it cannot read its process or its database's statistics: let longhaul start it (target.command or target.image, docs/environments.md) to see them; probes.heap.metric reads a Go API's post-GC heap from its /metrics"
		}
		if len(failed) > 0 {
			advice += " and fix the failing ones"
		}
	}
	if offers != "" {
		advice += "; " + offers
	}
	return Finding{
		Kind:        KindMissingEvidence,
		Severity:    Info,
		Incarnation: inc.num,
		Summary:     "no probe data for " + strings.Join(what, "; ") + advice,
		Evidence:    Evidence{FirstWindow: first, LastWindow: last, Missing: missing},
	}, true
}

// shorten cuts s to at most n bytes (at a rune boundary), marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// series is a time series of readings, with the window positions they came from.
type series struct {
	x, y []float64
	pos  []int // positions in incarnation.ws
}

func (s *series) add(x, y float64, pos int) {
	s.x = append(s.x, x)
	s.y = append(s.y, y)
	s.pos = append(s.pos, pos)
}

func (s series) len() int { return len(s.y) }

// binned returns s cut into at most maxPoints consecutive bins, each replaced
// by the median of its x and y (and the position of its first point). Short
// series are returned as they are. A series may carry y alone (x and pos
// nil); so does its binned copy.
func (s series) binned(maxPoints int) series {
	n := s.len()
	if n <= maxPoints {
		return s
	}
	hasX, hasPos := len(s.x) == n, len(s.pos) == n
	var out series
	buf := make([]float64, 0, n/maxPoints+2)
	for b := 0; b < maxPoints; b++ {
		lo, hi := b*n/maxPoints, (b+1)*n/maxPoints
		buf = append(buf[:0], s.y[lo:hi]...)
		out.y = append(out.y, medianInPlace(buf))
		if hasX {
			buf = append(buf[:0], s.x[lo:hi]...)
			out.x = append(out.x, medianInPlace(buf))
		}
		if hasPos {
			out.pos = append(out.pos, s.pos[lo])
		}
	}
	return out
}

// quarter returns the number of points in a first or last quarter of n (≥ 1).
func quarter(n int) int { return max(1, (n+3)/4) }

// medianOf returns the median of ys without modifying ys.
func (a *analyzer) medianOf(ys []float64) float64 {
	a.sortBuf = append(a.sortBuf[:0], ys...)
	return medianInPlace(a.sortBuf)
}

func (a *analyzer) theilSen(x, y []float64) (Line, bool) { return theilSen(x, y, &a.pairBuf) }

// mannKendall is the plain test, for effects whose shape is a step or a curve
// (a surge, a hyperbolic collapse): detrending those linearly, as Hamed–Rao
// does, leaves long runs of residuals that read as autocorrelation and would
// drown a real trend. Effect-size gates sit next to it in every detector.
func (a *analyzer) mannKendall(y []float64) MannKendallTest { return mannKendall(y, &a.sortBuf) }

// mannKendallHR is the test corrected for serial correlation, for a trend
// expected to be linear (a leak grows with the requests served), where the
// residuals around Sen's line are the wander of the readings.
func (a *analyzer) mannKendallHR(y []float64) MannKendallTest {
	return mannKendallHamedRao(y, &a.sortBuf, &a.pairBuf)
}

// ratio returns x/y, or NaN when y is 0.
func ratio(x, y float64) float64 {
	if y == 0 {
		return math.NaN()
	}
	return x / y
}
