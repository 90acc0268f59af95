package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// collapse looks for throughput falling (or p50 latency rising) over the
// steady-load windows, and for what explains it.
//
// Effect: the last quarter's median throughput is below the first quarter's
// by some fraction with a falling Mann–Kendall trend (p ≤ Alpha), or the
// median p50 is above it with a rising one. What it takes depends on the
// explanation found:
//
//   - A table that grew by MinRowGrowth and whose rows read per request
//     (seq_tup_read + idx_tup_fetch per driver request) grew by
//     MinReadIncrease, in step with its row count (Mann–Kendall, p ≤
//     ReadTrendAlpha)
//     and in proportion to it (elasticity ≥ MinReadElasticity: a query that
//     scans the table reads rows in proportion to its size, an indexed one
//     does not, whatever the length of the run). Clean runs have no such
//     table, so the effect needed is smaller: MinAttributedDrop/Rise with the
//     trend test gives critical; half of that without it gives warning ("not
//     yet a clear trend" — a noisy neighbour can mask the fall in a short
//     run); with no measurable effect, a growth of MinLatentReadIncrease rows
//     per request still gives a warning, a smaller one an info note.
//   - Else the target's CPU per request rose by MinCPURise, with
//     MinThroughputDrop/MinLatencyRise: warning, the target works harder —
//     if the rise lasts to the end of the run (the last eighth of the
//     readings too) with a rising trend (Mann–Kendall, p ≤ Alpha). One that
//     fell back is an info note: cores shared for a stretch with work the
//     host probe misses raise CPU per request as much, and pass.
//   - Else nothing explains it. With database statistics and CPU readings
//     both clearing the target: info, interference from other load on the
//     machine. With either probe missing: warning from
//     MinUnexplainedDrop/Rise (other tenants of a shared 2-core machine take
//     almost half of it at times), info below.
//
// Only windows whose load level is within SteadyTolerance of the median level
// count, so the rising part of a ramp is not read as a change in throughput.
// The third result reports that there were too few windows for a verdict.
func (a *analyzer) collapse(inc *incarnation) (f Finding, found, thin bool) {
	o := a.opts.Collapse
	var pos []int
	var rateWindows int
	levels := make([]float64, 0, len(inc.ws))
	for i, w := range inc.ws {
		if inc.full[i] && w.Requests > 0 {
			rateWindows++
			levels = append(levels, inc.level[i])
		}
	}
	if rateWindows < o.MinWindows {
		return Finding{}, false, true
	}
	mid := Median(levels)
	for i, w := range inc.ws {
		if inc.full[i] && w.Requests > 0 && math.Abs(inc.level[i]-mid) <= o.SteadyTolerance*mid {
			pos = append(pos, i)
		}
	}
	if len(pos) < o.MinWindows {
		return Finding{}, false, false // a ramp: the throughput-limit detector reads it
	}
	n := len(pos)
	q := quarter(n)
	var rps, p50 series
	for _, i := range pos {
		rps.add(inc.t[i], inc.rps[i], i)
		if l := inc.ws[i].LatencyMs.P50; l > 0 {
			p50.add(inc.t[i], l, i)
		}
	}
	r0, r1 := a.medianOf(rps.y[:q]), a.medianOf(rps.y[n-q:])
	mkR := a.mannKendall(rps.binned(a.opts.MaxPoints).y)
	drop := 1 - ratio(r1, r0)
	var l0, l1, rise float64
	mkL := MannKendallTest{PUp: 1, PDown: 1}
	if m := p50.len(); m >= o.MinWindows {
		lq := quarter(m)
		l0, l1 = a.medianOf(p50.y[:lq]), a.medianOf(p50.y[m-lq:])
		mkL = a.mannKendall(p50.binned(a.opts.MaxPoints).y)
		rise = ratio(l1, l0) - 1
	}
	fell := func(minDrop float64) bool { return drop >= minDrop && mkR.PDown <= o.Alpha }
	rose := func(minRise float64) bool { return rise >= minRise && mkL.PUp <= o.Alpha }
	// Whatever explains a collapse, the late windows say which resource
	// ran out as it happened (wall): added to every finding of a fall or a
	// rise, none to a note.
	defer func() {
		if found && f.Severity != Info {
			a.collapseWall(inc, pos[n-q:], rose(o.MinLatencyRise), &f)
		}
	}()
	// Throughput leads the summary when it fell clearly; latency when it
	// rose clearly instead; otherwise whichever moved by the larger factor.
	byThroughput := fell(o.MinAttributedDrop) ||
		!rose(o.MinAttributedRise) && drop > 0 && (l0 <= 0 || ratio(r0, r1) >= ratio(l1, l0))

	first, last := inc.span(pos[0], pos[n-1])
	ops := a.opTrends(inc, pos)
	ev := Evidence{FirstWindow: first, LastWindow: last, Ops: ops, Notes: map[string]float64{
		"rps_before": r0, "rps_after": r1,
	}}
	if g := grown(ops); len(g) > 0 {
		ev.Op = g[0].Op
	}
	// withOps puts what the ops did after the effect: "...; list: p50 1.4 →
	// 9.0 ms, ... (6.4×); create and get stayed flat".
	withOps := func(s string) string {
		if t := opsText(ops); t != "" {
			return s + "; " + t
		}
		return s
	}
	if l0 > 0 {
		ev.Notes["p50_ms_before"], ev.Notes["p50_ms_after"] = l0, l1
	}
	effect := func() string {
		if byThroughput {
			ev.Before, ev.After, ev.Unit, ev.PValue = r0, r1, "req/s", mkR.PDown
			return fmt.Sprintf("throughput fell %s (%s → %s req/s)", fallText(r0, r1), fmtCount(r0), fmtCount(r1))
		}
		ev.Before, ev.After, ev.Unit, ev.PValue = l0, l1, "ms", mkL.PUp
		return fmt.Sprintf("p50 latency rose %s (%s → %s)", fmtFactor(l1/l0), fmtMs(l0), fmtMs(l1))
	}

	if b, ok := a.blameTable(inc, pos, byThroughput); ok {
		ev.Table = b.name
		ev.Correlation = b.effectRho
		ev.Slope, ev.SlopeUnit = b.slope, b.slopeUnit
		ev.Notes["rows_before"], ev.Notes["rows_after"] = b.rows0, b.rows1
		ev.Notes["rows_read_per_request_before"], ev.Notes["rows_read_per_request_after"] = b.read0, b.read1
		ev.Notes["seq_share"] = b.seqShare
		ev.Notes["read_rows_correlation"] = b.readRho
		ev.Notes["read_rows_elasticity"] = b.elasticity
		_, rows := inc.terms()
		scans, verb, fix := "seq scans", "read", "a query on "+b.name+" is likely missing an index"
		if inc.docs {
			scans = "collection scans"
		}
		if b.seqShare < 0.5 {
			scans, verb, fix = "index scans", "fetched", "a query on "+b.name+" reads more "+rows+" as it grows (an unselective index or no LIMIT?)"
		}
		how := fmt.Sprintf("%s on %s %s %s %s per request at the end vs %s at the start — %s",
			scans, b.name, verb, fmtCount(b.read1), rows, fmtCount(b.read0), fix)
		grew := fmt.Sprintf("%s grew %s → %s %s", b.name, fmtCount(b.rows0), fmtCount(b.rows1), rows)
		switch {
		case fell(o.MinAttributedDrop) || rose(o.MinAttributedRise):
			return Finding{
				Kind: KindCollapse, Severity: Critical, Incarnation: inc.num, Evidence: ev,
				Summary: fmt.Sprintf("%s; %s", withOps(effect()+" as "+grew), how),
			}, true, false
		case drop >= o.MinAttributedDrop/2 || rise >= o.MinAttributedRise/2:
			return Finding{
				Kind: KindCollapse, Severity: Warning, Incarnation: inc.num, Evidence: ev,
				Summary: fmt.Sprintf("%s; %s", withOps(effect()+" as "+grew+" (not yet a clear trend)"), how),
			}, true, false
		}
		sev := Info
		if b.read1-b.read0 >= o.MinLatentReadIncrease {
			sev = Warning
		}
		ev.Before, ev.After, ev.Unit, ev.PValue = b.read0, b.read1, "rows read per request", 0
		return Finding{
			Kind: KindCollapse, Severity: sev, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("throughput has not fallen measurably (%s → %s req/s), but as %s, %s", fmtCount(r0), fmtCount(r1), grew, withOpsFirst(ops, how)),
		}, true, false
	}
	if f, ok := a.blameGrowth(inc, pos, ops, ev, fell, rose, drop, rise, effect); ok {
		return f, true, false
	}
	if !fell(o.MinThroughputDrop) && !rose(o.MinLatencyRise) {
		return Finding{}, false, false
	}

	// The database is cleared by rows-read statistics that blame no table,
	// or, for a SQLite file (no such statistics), by every op slowing alike:
	// a table that slows its queries as it grows singles out their ops.
	haveDB := inc.tables != nil || inc.sqlite != nil && len(ops) > 1 && len(grown(ops)) == 0
	if inc.tables == nil && inc.sqlite == nil {
		ev.Missing = append(ev.Missing, MissingDatabase)
	}
	cpu, cpuOK := a.cpuPerRequest(inc, pos)
	c0, c1 := cpu.before, cpu.after
	if cpuOK {
		ev.Notes["cpu_us_per_request_before"], ev.Notes["cpu_us_per_request_after"] = c0, c1
	} else {
		ev.Missing = append(ev.Missing, MissingCPU)
	}
	table, rows := inc.terms()
	noTable := fmt.Sprintf("no %s's %s read per request grew with its size", table, rows)
	switch {
	case inc.tables == nil && haveDB:
		noTable = fmt.Sprintf("no op slowed by itself, as one would with a %s of %s that it scans", table, inc.countsSource())
	case inc.sqlite != nil && inc.tables == nil:
		noTable = fmt.Sprintf("no op slowed in step with a %s of %s (%s)", table, inc.countsSource(), inc.noReads())
	case !haveDB:
		noTable = "no database statistics to trace it to a " + table
	}
	cpuRose := cpuOK && c1 >= (1+o.MinCPURise)*c0
	if cpuRose && (cpu.end < (1+o.MinCPURise)*c0 || cpu.pUp > o.Alpha) {
		// A rise that fell back by the end, or no steady trend: cores
		// shared for a stretch with work the host probe does not see
		// (short-lived compilers and test processes) inflate the target's
		// CPU per request as much, and pass. Work that grows with the run
		// is still there at its end.
		ev.Notes["cpu_us_per_request_end"] = cpu.end
		how := fmt.Sprintf("fell back to %s µs by the end", fmtCount(cpu.end))
		if cpu.end >= (1+o.MinCPURise)*c0 {
			how = fmt.Sprintf("without a steady trend (Mann–Kendall %s)", fmtP(cpu.pUp))
		}
		return Finding{
			Kind: KindCollapse, Severity: Info, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s: a passing slowdown — likely other work sharing these cores — not work that grows with the run",
				withOps(fmt.Sprintf("%s while the target's CPU per request rose %s (%s → %s µs), then %s", effect(), fmtFactor(c1/c0), fmtCount(c0), fmtCount(c1), how))),
		}, true, false
	}
	if cpuRose {
		if tb, ok := a.tableForCPU(inc, pos); ok {
			// A saturated target queues every request alike, so no op
			// stands out; its CPU per request still tracks the table.
			ev.Table = tb.name
			ev.Notes["rows_before"], ev.Notes["rows_after"] = tb.rows0, tb.rows1
			ev.Notes["cpu_rows_elasticity"] = tb.elasticity
			return Finding{
				Kind: KindCollapse, Severity: Warning, Incarnation: inc.num, Evidence: ev,
				Summary: fmt.Sprintf("%s in step with %s (%s → %s %s): a query likely scans %s as it grows — an index missing? (%s; when every op slowed alike the target is saturated, and its queue hides which op got slower)",
					withOps(fmt.Sprintf("%s while the target's CPU per request rose %s (%s → %s µs)", effect(), fmtFactor(c1/c0), fmtCount(c0), fmtCount(c1))),
					tb.name, fmtCount(tb.rows0), fmtCount(tb.rows1), rows, tb.name, inc.noReads()),
			}, true, false
		}
		return Finding{
			Kind: KindCollapse, Severity: Warning, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s; %s — the target does more work per request as the run goes on",
				withOps(fmt.Sprintf("%s while the target's CPU per request rose %s (%s → %s µs)", effect(), fmtFactor(c1/c0), fmtCount(c0), fmtCount(c1))), noTable),
		}, true, false
	}
	var ruledOut, suspects string
	switch {
	case haveDB && cpuOK:
		ruledOut = fmt.Sprintf("the target's CPU per request stayed at %s µs and %s", fmtCount(c1), noTable)
		suspects = "interference from other load on the machine, or the target waiting on something (locks, an external service)"
	case cpuOK:
		ruledOut = fmt.Sprintf("the target's CPU per request stayed at %s µs; %s", fmtCount(c1), noTable)
		suspects = "the database, or interference from other load on the machine — enable the database probe"
	case haveDB:
		ruledOut = noTable + ", and there are no CPU readings"
		suspects = "interference from other load on the machine, or the target itself — enable the process probe"
	default:
		ruledOut = "there are no database or CPU readings to explain it"
		suspects = "the target, its database, or interference from other load on the machine — enable the database and process probes"
	}
	// With both probes clearing the target, the fall is put down to the
	// machine, however large. With either missing, a large fall cannot be
	// dismissed.
	sev := Info
	if !(haveDB && cpuOK) && (fell(o.MinUnexplainedDrop) || rose(o.MinUnexplainedRise)) {
		sev = Warning
	}
	if share, rho, busy := a.machineBusy(inc, pos, rps.y); busy && sev == Warning {
		// The host probe saw the other tenants take the machine: the fall
		// is theirs, whatever probe is missing.
		sev = Info
		suspects = fmt.Sprintf("interference: other processes took %s of the machine (Spearman %.2f with the throughput)", fmtPct(share), rho)
	}
	return Finding{
		Kind: KindCollapse, Severity: sev, Incarnation: inc.num, Evidence: ev,
		Summary: fmt.Sprintf("%s but %s: likely %s", withOps(effect()), ruledOut, suspects),
	}, true, false
}

// terms are the words the findings use for the database's tables and rows:
// a MongoDB database has collections of documents.
func (inc *incarnation) terms() (table, rows string) {
	if inc.docs {
		return "collection", "documents"
	}
	return "table", "rows"
}

// countsSource names where tables without read statistics came from.
func (inc *incarnation) countsSource() string {
	if inc.sqliteFile {
		return "the SQLite file"
	}
	return inc.countsFrom
}

// noReads says which read statistics are missing, and from where.
func (inc *incarnation) noReads() string {
	if inc.sqliteFile {
		return "no rows-read statistics from SQLite"
	}
	_, rows := inc.terms()
	return fmt.Sprintf("no %s-read statistics from %s", strings.TrimSuffix(rows, "s"), inc.countsFrom)
}

// withOpsFirst puts what the ops did before s.
func withOpsFirst(ops []OpTrend, s string) string {
	if t := opsText(ops); t != "" {
		return t + "; " + s
	}
	return s
}

// fallText describes a fall from r0 to r1: "35 %" or, from half down, "5.1×".
func fallText(r0, r1 float64) string {
	if r1 > 0 && r1 <= r0/2 {
		return fmtFactor(r0 / r1)
	}
	return fmtPct(1 - r1/r0)
}

type blame struct {
	name               string
	rows0, rows1       float64
	read0, read1       float64
	seqShare           float64
	readRho, effectRho float64
	elasticity         float64
	slope              float64
	slopeUnit          string
	increase           float64
}

// blameTable finds the table whose rows read per request grew most, in step
// with its row count and with the effect, over the windows at pos.
func (a *analyzer) blameTable(inc *incarnation, pos []int, throughput bool) (blame, bool) {
	o := a.opts.Collapse
	names := make([]string, 0, len(inc.tables))
	for name := range inc.tables {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic choice between equal tables
	inPos := make(map[int]bool, len(pos))
	for _, p := range pos {
		inPos[p] = true
	}
	var best blame
	found := false
	for _, name := range names {
		var reads []tableRead
		for _, r := range inc.tables[name] {
			if inPos[r.i] {
				reads = append(reads, r)
			}
		}
		n := len(reads)
		if n < o.MinWindows {
			continue
		}
		q := quarter(n)
		per := make([]float64, n)
		rows := make([]float64, n)
		effect := make([]float64, n)
		for k, r := range reads {
			per[k], rows[k] = r.perReq, r.liveRows
			if throughput {
				effect[k] = inc.rps[r.i]
			} else {
				effect[k] = inc.ws[r.i].LatencyMs.P50
			}
		}
		read0, read1 := a.medianOf(per[:q]), a.medianOf(per[n-q:])
		rows0, rows1 := rows[0], rows[n-1]
		if !(rows1 >= (1+o.MinRowGrowth)*rows0) || rows0 < 0 || read1-read0 < o.MinReadIncrease {
			continue
		}
		// Reads rise with the row count: Mann–Kendall on the reads ordered
		// by rows (a fixed correlation threshold would fail a short run, where
		// the table grows little and the pg_stat flush jitter is large).
		byRows := make([]int, n)
		for k := range byRows {
			byRows[k] = k
		}
		slices.SortStableFunc(byRows, func(x, y int) int { return cmp.Compare(rows[x], rows[y]) })
		ordered := make([]float64, n)
		for k, j := range byRows {
			ordered[k] = per[j]
		}
		if a.mannKendall(series{y: ordered}.binned(a.opts.MaxPoints).y).PUp > o.ReadTrendAlpha {
			continue
		}
		readRho := Spearman(per, rows)
		// Elasticity of rows read per request to the row count: ≈ 1 when a
		// query scans the table, ≈ 0 when an index finds its rows.
		var logs series
		for k := range per {
			if per[k] > 0 && rows[k] > 0 {
				logs.add(math.Log(rows[k]), math.Log(per[k]), k)
			}
		}
		lb := logs.binned(a.opts.MaxPoints)
		el, ok := a.theilSen(lb.x, lb.y)
		if !ok || el.Slope < o.MinReadElasticity {
			continue
		}
		effectRho := Spearman(effect, rows)
		gain := read1 - read0
		if found && gain <= best.increase {
			continue
		}
		var seq, all float64
		for _, r := range reads[n-q:] {
			seq += r.seq
			all += r.seq + r.idx
		}
		b := blame{name: name, rows0: rows0, rows1: rows1, read0: read0, read1: read1, elasticity: el.Slope,
			seqShare: ratio(seq, all), readRho: readRho, effectRho: effectRho, increase: gain}
		if slope, ok := a.slopePer1kRows(rows, effect); ok {
			b.slope = slope
			b.slopeUnit = "req/s per 1k rows"
			if !throughput {
				b.slopeUnit = "ms per 1k rows"
			}
		}
		best, found = b, true
	}
	return best, found
}

// tableGrew reports whether rows, a table's row counts window by window,
// cover MinWindows and grew from the first to the last by MinRowGrowth and
// by at least MinTableRowIncrease rows; it returns the first and the last.
func (o CollapseOptions) tableGrew(rows []float64) (rows0, rows1 float64, grew bool) {
	n := len(rows)
	if n < o.MinWindows {
		return 0, 0, false
	}
	rows0, rows1 = rows[0], rows[n-1]
	return rows0, rows1, rows1 >= (1+o.MinRowGrowth)*rows0 && rows1-rows0 >= o.MinTableRowIncrease
}

// slopePer1kRows is the Theil–Sen slope of y against rows counted in
// thousands, over the series binned to MaxPoints.
func (a *analyzer) slopePer1kRows(rows, y []float64) (float64, bool) {
	rowsK := make([]float64, len(rows))
	for k := range rows {
		rowsK[k] = rows[k] / 1000
	}
	bs := series{x: rowsK, y: y}.binned(a.opts.MaxPoints)
	l, ok := a.theilSen(bs.x, bs.y)
	return l.Slope, ok
}

// cpuTrend is the target's CPU µs per request over the steady windows.
type cpuTrend struct {
	before, after float64 // medians of the first and the last quarter of the readings
	end           float64 // median of the last eighth (at least 3 readings): where it ended
	pUp           float64 // Mann–Kendall p-value of a rising trend
}

// cpuPerRequest returns the target's CPU per request over the windows at pos
// that have a CPU reading.
func (a *analyzer) cpuPerRequest(inc *incarnation, pos []int) (cpuTrend, bool) {
	var c series
	for _, i := range pos {
		w := inc.ws[i]
		switch p := w.Probes; {
		case p.CPUMicrosPerRequest != nil:
			c.add(inc.t[i], *p.CPUMicrosPerRequest, i)
		case p.CPUSeconds != nil && w.Requests > 0:
			c.add(inc.t[i], *p.CPUSeconds*1e6/float64(w.Requests), i)
		}
	}
	n := c.len()
	if n < a.opts.Collapse.MinWindows {
		return cpuTrend{}, false
	}
	q, e := quarter(n), min(n, max(3, (n+7)/8))
	return cpuTrend{
		before: a.medianOf(c.y[:q]), after: a.medianOf(c.y[n-q:]), end: a.medianOf(c.y[n-e:]),
		pUp: a.mannKendall(c.binned(a.opts.MaxPoints).y).PUp,
	}, true
}

// blameGrowth attributes a slowdown to a table without rows-read statistics
// (a SQLite file): an op grew with the run (OpTrend.Grew), by more than the
// others, and its p50 rose with the rows of a table that grew (elasticity ≥
// MinOpElasticity); of the tables that qualify, the one that gained most rows
// is named. Severity follows the PostgreSQL attribution: critical with the
// trend test, warning from half the effect, and warning too with no
// measurable effect on the whole run (the op's own trend is the evidence).
func (a *analyzer) blameGrowth(inc *incarnation, pos []int, ops []OpTrend, ev Evidence,
	fell, rose func(float64) bool, drop, rise float64, effect func() string) (Finding, bool) {
	o := a.opts.Collapse
	g := grown(ops)
	if len(inc.sqlite) == 0 || len(g) == 0 {
		return Finding{}, false
	}
	op := g[0]
	inPos := make(map[int]bool, len(pos))
	for _, p := range pos {
		inPos[p] = true
	}
	names := make([]string, 0, len(inc.sqlite))
	for name := range inc.sqlite {
		names = append(names, name)
	}
	slices.Sort(names)
	type candidate struct {
		name         string
		rows0, rows1 float64
		elasticity   float64
		slope        float64
	}
	var best *candidate
	for _, name := range names {
		// The op's p50 relative to the other ops' (OpTrend.Lead): the
		// machine's own speed-ups and slow-downs cancel out of it.
		var rows, p50, rel []float64
		for _, r := range inc.sqlite[name] {
			if !inPos[r.i] {
				continue
			}
			st, ok := inc.ws[r.i].Ops[op.Op]
			v, hasRel := op.rel[r.i]
			if !ok || !hasRel || st.Requests < int64(o.MinOpRequests) || st.LatencyMs.P50 <= 0 || r.liveRows <= 0 || v <= 0 {
				continue
			}
			rows = append(rows, r.liveRows)
			p50 = append(p50, st.LatencyMs.P50)
			rel = append(rel, v)
		}
		rows0, rows1, grew := o.tableGrew(rows)
		if !grew {
			continue
		}
		var logs series
		for k := range rows {
			logs.add(math.Log(rows[k]), math.Log(rel[k]), k)
		}
		lb := logs.binned(a.opts.MaxPoints)
		el, ok := a.theilSen(lb.x, lb.y)
		if !ok || el.Slope < o.MinOpElasticity {
			continue
		}
		c := candidate{name: name, rows0: rows0, rows1: rows1, elasticity: el.Slope}
		if slope, ok := a.slopePer1kRows(rows, p50); ok {
			c.slope = slope
		}
		if best == nil || c.rows1-c.rows0 > best.rows1-best.rows0 {
			best = &c
		}
	}
	if best == nil {
		return Finding{}, false
	}
	ev.Table = best.name
	ev.Slope, ev.SlopeUnit = best.slope, "ms per 1k rows ("+op.Op+" p50)"
	ev.Notes["rows_before"], ev.Notes["rows_after"] = best.rows0, best.rows1
	ev.Notes["op_rows_elasticity"] = best.elasticity
	_, rows := inc.terms()
	grew := fmt.Sprintf("%s grew %s → %s %s", best.name, fmtCount(best.rows0), fmtCount(best.rows1), rows)
	how := fmt.Sprintf("%s slowed in step with %s (%s): its query likely scans %s — an index missing?",
		op.Op, best.name, inc.noReads(), best.name)
	opsPart := opsText(ops)
	switch {
	case fell(o.MinAttributedDrop) || rose(o.MinAttributedRise):
		return Finding{Kind: KindCollapse, Severity: Critical, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s as %s; %s; %s", effect(), grew, opsPart, how)}, true
	case drop >= o.MinAttributedDrop/2 || rise >= o.MinAttributedRise/2:
		return Finding{Kind: KindCollapse, Severity: Warning, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s as %s (not yet a clear trend); %s; %s", effect(), grew, opsPart, how)}, true
	}
	// The op slowed by itself in step with the table although the whole
	// run's throughput did not fall measurably (a neighbour can hide it in
	// a short run): the mechanism is there, so it is a warning.
	sev := Warning
	ev.Before, ev.After, ev.Unit, ev.PValue = op.P50BeforeMs, op.P50AfterMs, "ms ("+op.Op+" p50)", op.PValue
	return Finding{Kind: KindCollapse, Severity: sev, Incarnation: inc.num, Evidence: ev,
		Summary: fmt.Sprintf("throughput has not fallen measurably, but as %s, %s; %s", grew, opsPart, how)}, true
}

type grownTable struct {
	name         string
	rows0, rows1 float64
	elasticity   float64
}

// tableForCPU finds, among the tables of a SQLite file, the one whose rows
// the target's CPU per request rose with (elasticity ≥ MinOpElasticity),
// that gained most rows (at least MinTableRowIncrease and MinRowGrowth).
func (a *analyzer) tableForCPU(inc *incarnation, pos []int) (grownTable, bool) {
	o := a.opts.Collapse
	if len(inc.sqlite) == 0 {
		return grownTable{}, false
	}
	cpu := map[int]float64{}
	for _, i := range pos {
		w := inc.ws[i]
		switch p := w.Probes; {
		case p.CPUMicrosPerRequest != nil && *p.CPUMicrosPerRequest > 0:
			cpu[i] = *p.CPUMicrosPerRequest
		case p.CPUSeconds != nil && *p.CPUSeconds > 0 && w.Requests > 0:
			cpu[i] = *p.CPUSeconds * 1e6 / float64(w.Requests)
		}
	}
	names := make([]string, 0, len(inc.sqlite))
	for name := range inc.sqlite {
		names = append(names, name)
	}
	slices.Sort(names)
	var best grownTable
	found := false
	for _, name := range names {
		var logs series
		var rows []float64
		for _, r := range inc.sqlite[name] {
			if c, ok := cpu[r.i]; ok && r.liveRows > 0 {
				logs.add(math.Log(r.liveRows), math.Log(c), r.i)
				rows = append(rows, r.liveRows)
			}
		}
		rows0, rows1, grew := o.tableGrew(rows)
		if !grew {
			continue
		}
		lb := logs.binned(a.opts.MaxPoints)
		el, ok := a.theilSen(lb.x, lb.y)
		if !ok || el.Slope < o.MinOpElasticity {
			continue
		}
		if !found || rows1-rows0 > best.rows1-best.rows0 {
			best, found = grownTable{name: name, rows0: rows0, rows1: rows1, elasticity: el.Slope}, true
		}
	}
	return best, found
}

// machineBusy reports whether other processes on the host (the host probe's
// foreign CPU share) took at least half of the machine over the windows at
// pos, or more of it as the throughput y fell (Spearman ≤ −0.5).
func (a *analyzer) machineBusy(inc *incarnation, pos []int, y []float64) (share, rho float64, busy bool) {
	var f, yy []float64
	for k, i := range pos {
		if v := inc.ws[i].Probes.HostForeignCPU; v != nil && k < len(y) {
			f = append(f, *v)
			yy = append(yy, y[k])
		}
	}
	if len(f) < a.opts.Collapse.MinWindows {
		return 0, 0, false
	}
	share, rho = a.medianOf(f), Spearman(yy, f)
	return share, rho, share >= 0.5 || !math.IsNaN(rho) && rho <= -0.5
}

// collapseWall adds to a collapse finding the resource that was saturated
// in its late windows (pos), from the thread readings: "; in the last
// quarter of the windows the database's processes were busy 0.95 cores,
// more than the target's 0.30: the database is the wall — …". Nothing
// without thread readings. A driver short of CPU there goes first, loudly,
// as on a throughput limit.
func (a *analyzer) collapseWall(inc *incarnation, pos []int, latencyRose bool, f *Finding) {
	wall, driver := a.wall(inc, pos, wallScope{on: "in the last quarter of the windows", latencyRose: latencyRose}, &f.Evidence)
	if wall != "" {
		f.Summary += "; " + wall
	}
	if driver != "" {
		f.Summary = driver + ". " + f.Summary
	}
}
