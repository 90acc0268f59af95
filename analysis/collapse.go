package analysis

import (
	"fmt"
	"math"
	"slices"
)

// collapse looks for throughput falling (or p50 latency rising) over the
// steady-load windows, and for the table that explains it.
//
// Effect: the last quarter's median throughput is at least MinThroughputDrop
// below the first quarter's with a falling Mann–Kendall trend (p ≤ Alpha), or
// the median p50 is MinLatencyRise above it with a rising one.
//
// Cause, in order:
//   - a table whose rows read per request (seq_tup_read + idx_tup_fetch per
//     driver request) grew MinReadGrowth× and by MinReadIncrease rows, in step
//     with its row count (Spearman ≥ MinCorrelation), while throughput fell
//     (or latency rose) in step with that row count: critical, naming it;
//   - else the target's CPU per request rose by MinCPURise: warning;
//   - else, with CPU data showing no such rise, the target is not doing more
//     work per request: an info note blaming interference (on a shared
//     machine other processes take CPU away; that is not the target's fault);
//   - else (no CPU data): warning, noting the missing evidence.
//
// Only windows whose load level is within SteadyTolerance of the median level
// count, so the rising part of a ramp is not read as a change in throughput.
// The third result reports that there were too few windows for a verdict.
func (a *analyzer) collapse(inc *incarnation) (Finding, bool, bool) {
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
	throughputFell := drop >= o.MinThroughputDrop && mkR.PDown <= o.Alpha

	var l0, l1 float64
	latencyRose := false
	var mkL MannKendallTest
	if m := p50.len(); m >= o.MinWindows {
		lq := quarter(m)
		l0, l1 = a.medianOf(p50.y[:lq]), a.medianOf(p50.y[m-lq:])
		mkL = a.mannKendall(p50.binned(a.opts.MaxPoints).y)
		latencyRose = ratio(l1, l0)-1 >= o.MinLatencyRise && mkL.PUp <= o.Alpha
	}
	if !throughputFell && !latencyRose {
		return Finding{}, false, false
	}

	first, last := inc.span(pos[0], pos[n-1])
	ev := Evidence{FirstWindow: first, LastWindow: last, Notes: map[string]float64{
		"rps_before": r0, "rps_after": r1,
	}}
	if l0 > 0 {
		ev.Notes["p50_ms_before"], ev.Notes["p50_ms_after"] = l0, l1
	}
	var effect string
	if throughputFell {
		ev.Before, ev.After, ev.Unit, ev.PValue = r0, r1, "req/s", mkR.PDown
		effect = fmt.Sprintf("throughput fell %s (%s → %s req/s)", fallText(r0, r1), fmtCount(r0), fmtCount(r1))
	} else {
		ev.Before, ev.After, ev.Unit, ev.PValue = l0, l1, "ms", mkL.PUp
		effect = fmt.Sprintf("p50 latency rose %s (%s → %s)", fmtFactor(l1/l0), fmtMs(l0), fmtMs(l1))
	}

	if b, ok := a.blameTable(inc, pos, throughputFell); ok {
		ev.Table = b.name
		ev.Correlation = b.effectRho
		ev.Slope, ev.SlopeUnit = b.slope, b.slopeUnit
		ev.Notes["rows_before"], ev.Notes["rows_after"] = b.rows0, b.rows1
		ev.Notes["rows_read_per_request_before"], ev.Notes["rows_read_per_request_after"] = b.read0, b.read1
		ev.Notes["seq_share"] = b.seqShare
		ev.Notes["read_rows_correlation"] = b.readRho
		how := fmt.Sprintf("seq scans on %s read %s rows per request at the end vs %s at the start — a query on %s is likely missing an index",
			b.name, fmtCount(b.read1), fmtCount(b.read0), b.name)
		if b.seqShare < 0.5 {
			how = fmt.Sprintf("index scans on %s fetched %s rows per request at the end vs %s at the start — a query on %s reads more rows as it grows (an unselective index or no LIMIT?)",
				b.name, fmtCount(b.read1), fmtCount(b.read0), b.name)
		}
		return Finding{
			Kind: KindCollapse, Severity: Critical, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s as %s grew %s → %s rows; %s", effect, b.name, fmtCount(b.rows0), fmtCount(b.rows1), how),
		}, true, false
	}

	if inc.tables == nil {
		ev.Missing = append(ev.Missing, MissingDatabase)
	}
	c0, c1, cpuOK := a.cpuPerRequest(inc, pos)
	if cpuOK {
		ev.Notes["cpu_us_per_request_before"], ev.Notes["cpu_us_per_request_after"] = c0, c1
	} else {
		ev.Missing = append(ev.Missing, MissingCPU)
	}
	noTable := "no table's rows read per request grew with its size"
	if inc.tables == nil {
		noTable = "no database statistics to trace it to a table"
	}
	switch {
	case cpuOK && c1 >= (1+o.MinCPURise)*c0:
		return Finding{
			Kind: KindCollapse, Severity: Warning, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s while the target's CPU per request rose %s (%s → %s µs); %s — the target does more work per request as the run goes on",
				effect, fmtFactor(c1/c0), fmtCount(c0), fmtCount(c1), noTable),
		}, true, false
	case cpuOK:
		return Finding{
			Kind: KindCollapse, Severity: Info, Incarnation: inc.num, Evidence: ev,
			Summary: fmt.Sprintf("%s but the target's CPU per request stayed at %s µs and %s: likely interference from other load on the machine, not the target",
				effect, fmtCount(c1), noTable),
		}, true, false
	}
	return Finding{
		Kind: KindCollapse, Severity: Warning, Incarnation: inc.num, Evidence: ev,
		Summary: fmt.Sprintf("%s; %s and no CPU readings to rule out interference from other load on the machine", effect, noTable),
	}, true, false
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
		if !(rows1 > rows0) || read1-read0 < o.MinReadIncrease || read1 < o.MinReadGrowth*read0 {
			continue
		}
		readRho := Spearman(per, rows)
		effectRho := Spearman(effect, rows)
		if !(readRho >= o.MinCorrelation) {
			continue
		}
		if throughput && !(effectRho <= -o.MinCorrelation) || !throughput && !(effectRho >= o.MinCorrelation) {
			continue
		}
		gain := read1 - read0
		if found && gain <= best.increase {
			continue
		}
		var seq, all float64
		for _, r := range reads[n-q:] {
			seq += r.seq
			all += r.seq + r.idx
		}
		b := blame{name: name, rows0: rows0, rows1: rows1, read0: read0, read1: read1,
			seqShare: ratio(seq, all), readRho: readRho, effectRho: effectRho, increase: gain}
		rowsK := make([]float64, n)
		for k := range rows {
			rowsK[k] = rows[k] / 1000
		}
		if l, ok := a.theilSen(rowsK, effect); ok {
			b.slope = l.Slope
			b.slopeUnit = "req/s per 1k rows"
			if !throughput {
				b.slopeUnit = "ms per 1k rows"
			}
		}
		best, found = b, true
	}
	return best, found
}

// cpuPerRequest returns the median CPU µs per request of the first and last
// quarter of the windows at pos that have a CPU reading.
func (a *analyzer) cpuPerRequest(inc *incarnation, pos []int) (before, after float64, ok bool) {
	var c []float64
	for _, i := range pos {
		w := inc.ws[i]
		switch p := w.Probes; {
		case p.CPUMicrosPerRequest != nil:
			c = append(c, *p.CPUMicrosPerRequest)
		case p.CPUSeconds != nil && w.Requests > 0:
			c = append(c, *p.CPUSeconds*1e6/float64(w.Requests))
		}
	}
	if len(c) < a.opts.Collapse.MinWindows {
		return 0, 0, false
	}
	q := quarter(len(c))
	return a.medianOf(c[:q]), a.medianOf(c[len(c)-q:]), true
}
