package window

import (
	"fmt"
	"slices"
)

// Combine merges consecutive windows into one window that spans them all, as
// a chart downsamples a long run: counts are summed, percentiles come from the
// merged HDR histograms (overall and per op, which Combine also carries, so a
// combined window can be combined again exactly), never from averaging.
//
// The result takes RunID, Incarnation and Index from the first window of ws,
// Start from the earliest and End from the latest. RPS is requests over the
// summed durations of the windows with measurements. Gauges read at window
// close take the last reading: VUs, Target, RSS, a table's live rows; the heap
// takes the last forced-GC checkpoint when there is one (it is the leak
// evidence), else the last reading. InFlight is the largest. CPU seconds,
// bytes allocated, GC cycles and CPU, and database deltas are summed and the
// per-request figures (and the GC's CPU share) recomputed from the sums over
// the windows that had the reading. The thread probe's figures (cores and
// busy cores of the target's busiest thread, the target, its database and
// the driver) are averaged over the windows that had them, weighted by
// their length, and the busiest thread is named after the window where it
// was busiest; CoresAllowed is the last reading. A result made only of gap
// windows is a gap. ws must be non-empty.
func Combine(ws []Window) (Window, error) {
	if len(ws) == 0 {
		return Window{}, fmt.Errorf("combine: no windows")
	}
	out := Window{RunID: ws[0].RunID, Incarnation: ws[0].Incarnation, Index: ws[0].Index, Start: ws[0].Start, End: ws[0].End, Gap: true}
	all := newCounts()
	ops := map[string]*counts{}
	var (
		busySecs               float64
		cpu                    probeSum
		alloc, gcs, xact       countSum
		stmts                  countSum
		topStmts               StatementSums
		gcCPU, gcShare         probeSum // gcShare: the GC's CPU over the process's, where both were read
		gcShareCPU             float64
		db                     *Database
		dbRequests             int64
		dbRead                 float64
		tables                 map[string]*tableSum
		heap, forcedHeap       *int64
		failures               []ProbeFailure
		sawProbeFailures, some bool
		protocols              protocolSums
		threads                threadMeans
	)
	for _, w := range ws {
		if w.Start.Before(out.Start) {
			out.Start = w.Start
		}
		if w.End.After(out.End) {
			out.End = w.End
		}
		if w.Gap {
			continue
		}
		out.Gap, some = false, true
		busySecs += w.Duration().Seconds()
		out.Requests += w.Requests
		out.OK += w.OK
		out.Errors.AddAll(w.Errors)
		out.Dropped += w.Dropped
		out.Skipped += w.Skipped
		out.ConnectFailures += w.ConnectFailures
		out.VUs = w.VUs
		out.InFlight = max(out.InFlight, w.InFlight)
		out.Target = w.Target
		if err := all.add(w.Histogram); err != nil {
			return out, fmt.Errorf("combine window %d: %w", w.Index, err)
		}
		out.Ops = addOpCounts(out.Ops, w.Ops)
		for name, o := range w.Ops {
			if ops[name] == nil {
				ops[name] = newCounts()
			}
			if err := ops[name].add(o.Histogram); err != nil {
				return out, fmt.Errorf("combine window %d op %s: %w", w.Index, name, err)
			}
		}

		p := w.Probes
		threads.add(p, w.Duration().Seconds())
		if p.CPUSeconds != nil {
			cpu.add(*p.CPUSeconds, w.Requests)
		}
		if p.AllocBytes != nil {
			alloc.add(*p.AllocBytes, w.Requests)
		}
		if p.GCCycles != nil {
			gcs.add(*p.GCCycles, w.Requests)
		}
		if p.GCCPUSeconds != nil {
			gcCPU.add(*p.GCCPUSeconds, w.Requests)
			if p.CPUSeconds != nil {
				gcShare.add(*p.GCCPUSeconds, 0)
				gcShareCPU += *p.CPUSeconds
			}
		}
		if p.RSSBytes != nil {
			out.Probes.RSSBytes = ptr(*p.RSSBytes)
		}
		if p.HeapBytes != nil {
			heap = ptr(*p.HeapBytes)
			if p.HeapForcedGC {
				forcedHeap = heap
			}
		}
		if d := p.Database; d != nil {
			if db == nil {
				db, tables, topStmts = &Database{}, map[string]*tableSum{}, StatementSums{}
			}
			db.TuplesReturned += d.TuplesReturned
			db.Commits += d.Commits
			db.KeysExamined += d.KeysExamined
			db.ScanAndOrder += d.ScanAndOrder
			db.Kind, db.Absent = d.Kind, d.Absent
			if d.Transactions != nil {
				xact.add(*d.Transactions, w.Requests)
			}
			dbRequests += w.Requests
			dbRead += d.RowsReadPerRequest * float64(w.Requests)
			if d.StatementsCounted || d.Statements > 0 {
				stmts.add(d.Statements, w.Requests)
				db.StatementsCounted = db.StatementsCounted || d.StatementsCounted
			}
			if d.StatementsUnavailable != "" {
				db.StatementsUnavailable = d.StatementsUnavailable
			}
			topStmts.Add(d.TopStatements)
			for _, t := range d.Tables {
				ts := tables[t.Name]
				if ts == nil {
					ts = &tableSum{Table: Table{Name: t.Name}}
					tables[t.Name] = ts
				}
				ts.LiveRows = t.LiveRows
				ts.SeqScans += t.SeqScans
				ts.SeqTuplesRead += t.SeqTuplesRead
				ts.IndexScans += t.IndexScans
				ts.IndexTuplesFetched += t.IndexTuplesFetched
				ts.requests += w.Requests
			}
		}
		if err := protocols.add(w); err != nil {
			return out, fmt.Errorf("combine window %d: %w", w.Index, err)
		}
		sawProbeFailures = sawProbeFailures || len(w.ProbeFailures) > 0
		failures = w.ProbeFailures
	}
	if !some {
		return out, nil
	}
	if busySecs > 0 {
		out.RPS = float64(out.Reached()) / busySecs
		for name, o := range out.Ops {
			o.RPS = float64(o.Requests) / busySecs
			out.Ops[name] = o
		}
	}
	out.LatencyMs = LatencyOf(all.histogram())
	var err error
	if out.Histogram, err = all.encode(); err != nil {
		return out, err
	}
	for name, o := range out.Ops {
		o.LatencyMs = LatencyOf(ops[name].histogram())
		if o.Histogram, err = ops[name].encode(); err != nil {
			return out, err
		}
		out.Ops[name] = o
	}
	if err := protocols.fill(&out); err != nil {
		return out, err
	}
	if cpu.n > 0 {
		out.Probes.CPUSeconds = ptr(cpu.secs)
		if cpu.requests > 0 {
			out.Probes.CPUMicrosPerRequest = ptr(cpu.secs * 1e6 / float64(cpu.requests))
		}
	}
	if alloc.n > 0 {
		out.Probes.AllocBytes = ptr(alloc.sum)
		out.Probes.AllocBytesPerRequest = alloc.per(1)
	}
	if gcs.n > 0 {
		out.Probes.GCCycles = ptr(gcs.sum)
		out.Probes.GCPer1kRequests = gcs.per(1000)
	}
	if gcCPU.n > 0 {
		out.Probes.GCCPUSeconds = ptr(gcCPU.secs)
	}
	if gcShare.n > 0 && gcShareCPU > 0 {
		out.Probes.GCCPUShare = ptr(gcShare.secs / gcShareCPU)
	}
	if forcedHeap != nil {
		out.Probes.HeapBytes, out.Probes.HeapForcedGC = forcedHeap, true
	} else {
		out.Probes.HeapBytes = heap
	}
	if db != nil {
		if dbRequests > 0 {
			db.RowsReadPerRequest = dbRead / float64(dbRequests)
			db.KeysExaminedPerRequest = float64(db.KeysExamined) / float64(dbRequests)
		}
		if xact.n > 0 {
			db.Transactions, db.XactPerRequest = ptr(xact.sum), xact.per(1)
		}
		if stmts.n > 0 {
			db.Statements = stmts.sum
			if per := stmts.per(1); per != nil {
				db.StatementsPerRequest = *per
			}
		}
		if len(topStmts) > 0 {
			db.TopStatements = TopStatements(topStmts.List(), MaxTopStatements)
		}
		for _, ts := range tables {
			t := ts.Table
			if ts.requests > 0 {
				t.RowsReadPerRequest = float64(t.SeqTuplesRead+t.IndexTuplesFetched) / float64(ts.requests)
			}
			db.Tables = append(db.Tables, t)
		}
		slices.SortFunc(db.Tables, func(a, b Table) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		out.Probes.Database = db
	}
	threads.fill(&out.Probes)
	if sawProbeFailures {
		out.ProbeFailures = failures // the state at the span's close, like a window's
	}
	return out, nil
}

type probeSum struct {
	secs     float64
	requests int64
	n        int
}

func (s *probeSum) add(secs float64, requests int64) {
	s.secs += secs
	s.requests += requests
	s.n++
}

// countSum sums a counter's deltas and the requests of the windows that had
// them.
type countSum struct {
	sum, requests int64
	n             int
}

func (s *countSum) add(v, requests int64) {
	s.sum += v
	s.requests += requests
	s.n++
}

// per is the sum per request times scale; nil without requests.
func (s *countSum) per(scale float64) *float64 {
	if s.requests <= 0 {
		return nil
	}
	return ptr(float64(s.sum) * scale / float64(s.requests))
}

type tableSum struct {
	Table
	requests int64
}

func ptr[T any](v T) *T { return &v }

// threadMeans averages the thread probe's figures over windows, weighted by
// their length.
type threadMeans struct {
	sums, secs [7]float64
	best       float64 // the busiest thread's figure in the window that named it
	name       string
	main       bool
	allowed    *float64
}

func (m *threadMeans) fields(p *Probes) [7]**float64 {
	return [7]**float64{&p.HottestThreadCores, &p.HottestThreadBusy, &p.TargetBusyCores, &p.DatabaseCores,
		&p.DatabaseBusyCores, &p.DriverCores, &p.DriverBusyCores}
}

func (m *threadMeans) add(p Probes, secs float64) {
	if secs <= 0 {
		return
	}
	for i, f := range m.fields(&p) {
		if *f != nil {
			m.sums[i] += **f * secs
			m.secs[i] += secs
		}
	}
	if p.CoresAllowed != nil {
		m.allowed = ptr(*p.CoresAllowed)
	}
	v := p.HottestThreadBusy
	if v == nil {
		v = p.HottestThreadCores
	}
	if v != nil && (m.name == "" || *v > m.best) {
		m.best, m.name, m.main = *v, p.HottestThread, p.HottestThreadMain
	}
}

func (m *threadMeans) fill(p *Probes) {
	for i, f := range m.fields(p) {
		if m.secs[i] > 0 {
			*f = ptr(m.sums[i] / m.secs[i])
		}
	}
	p.CoresAllowed = m.allowed
	if m.name != "" {
		p.HottestThread, p.HottestThreadMain = m.name, m.main
	}
}
