package window

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestCombine: two busy fast windows, a gap and a slow quiet one. The combined
// p50 is the fast latency (averaging percentiles would not give it), counts
// and CPU are summed, per-request figures recomputed, gauges take the last
// reading and the heap the last forced-GC checkpoint; combining combined
// windows gives the same as combining the originals.
func TestCombine(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 10 * time.Second) }
	f := func(v float64) *float64 { return &v }
	n := func(v int64) *int64 { return &v }
	ws := []Window{
		{Index: 0, Start: at(0), End: at(1), Requests: 500, OK: 500, VUs: 4, InFlight: 3, Histogram: encoded(t, 1000, 500),
			Ops: map[string]OpStats{"get": {Requests: 500, OK: 500, Histogram: encoded(t, 1000, 500)}},
			Probes: Probes{CPUSeconds: f(1), RSSBytes: n(100), HeapBytes: n(50), HeapForcedGC: true,
				Database: &Database{RowsReadPerRequest: 2, Tables: []Table{{Name: "items", LiveRows: 10, SeqTuplesRead: 1000, RowsReadPerRequest: 2}}}}},
		{Index: 1, Start: at(1), End: at(2), Requests: 500, OK: 499, Errors: Errors{Status5xx: 1}, VUs: 8, InFlight: 7, Histogram: encoded(t, 1000, 500),
			Ops: map[string]OpStats{"get": {Requests: 500, OK: 499, Errors: Errors{Status5xx: 1}, Histogram: encoded(t, 1000, 500)}},
			Probes: Probes{CPUSeconds: f(3), RSSBytes: n(200), HeapBytes: n(70),
				Database: &Database{RowsReadPerRequest: 4, Tables: []Table{{Name: "items", LiveRows: 20, SeqTuplesRead: 2000, RowsReadPerRequest: 4}}}}},
		{Index: 2, Start: at(2), End: at(3), Gap: true},
		{Index: 3, Start: at(3), End: at(4), Requests: 10, OK: 10, VUs: 8, InFlight: 2, Histogram: encoded(t, 90_000, 10),
			Ops: map[string]OpStats{"list": {Requests: 10, OK: 10, Histogram: encoded(t, 90_000, 10)}}},
	}
	got, err := Combine(ws)
	if err != nil {
		t.Fatal(err)
	}
	if got.Index != 0 || !got.Start.Equal(at(0)) || !got.End.Equal(at(4)) || got.Gap {
		t.Errorf("span %d %v..%v gap %v, want 0 %v..%v no gap", got.Index, got.Start, got.End, got.Gap, at(0), at(4))
	}
	if got.Requests != 1010 || got.OK != 1009 || got.Errors.Status5xx != 1 || got.VUs != 8 || got.InFlight != 7 {
		t.Errorf("counts %d/%d/%+v vus %d inflight %d", got.Requests, got.OK, got.Errors, got.VUs, got.InFlight)
	}
	if want := 1010.0 / 30; got.RPS != want {
		t.Errorf("RPS %.3f, want %.3f (over the three measured windows)", got.RPS, want)
	}
	if got.LatencyMs.P50 < 0.99 || got.LatencyMs.P50 > 1.01 || got.LatencyMs.Max < 89 {
		t.Errorf("latency %+v, want p50 1 ms and max 90 ms", got.LatencyMs)
	}
	if got.Ops["get"].Requests != 1000 || got.Ops["list"].LatencyMs.P50 < 89 || len(got.Ops["get"].Histogram) == 0 {
		t.Errorf("ops %+v", got.Ops)
	}
	p := got.Probes
	if *p.CPUSeconds != 4 || *p.CPUMicrosPerRequest != 4e6/1000 {
		t.Errorf("cpu %v s, %v µs/request; want 4 s over the 1,000 requests of the windows that had it", *p.CPUSeconds, *p.CPUMicrosPerRequest)
	}
	if *p.RSSBytes != 200 || *p.HeapBytes != 50 || !p.HeapForcedGC {
		t.Errorf("rss %d heap %d forced %v, want the last RSS and the forced-GC heap", *p.RSSBytes, *p.HeapBytes, p.HeapForcedGC)
	}
	if d := p.Database; d == nil || d.RowsReadPerRequest != 3 || len(d.Tables) != 1 || d.Tables[0].LiveRows != 20 || d.Tables[0].SeqTuplesRead != 3000 || d.Tables[0].RowsReadPerRequest != 3 {
		t.Errorf("database %+v", p.Database)
	}

	a, err := Combine(ws[:2])
	if err != nil {
		t.Fatal(err)
	}
	b, err := Combine(ws[2:])
	if err != nil {
		t.Fatal(err)
	}
	again, err := Combine([]Window{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if again.Requests != got.Requests || again.LatencyMs != got.LatencyMs || again.Ops["get"].LatencyMs != got.Ops["get"].LatencyMs || *again.Probes.CPUMicrosPerRequest != *got.Probes.CPUMicrosPerRequest {
		t.Errorf("combining combined windows: %+v, want %+v", again.LatencyMs, got.LatencyMs)
	}

	gap, err := Combine(ws[2:3])
	if err != nil || !gap.Gap || gap.Histogram != nil {
		t.Errorf("Combine(gap) = %+v, %v; want a gap", gap, err)
	}
	if _, err := Combine(nil); err == nil {
		t.Error("Combine(nil) succeeded")
	}
}

// TestCountsCodec: the fast accumulator reads what EncodeHistogram writes and
// writes what DecodeHistogram reads, with the same counts.
func TestCountsCodec(t *testing.T) {
	h := NewHistogram()
	for us := int64(1); us <= 50_000_000; us = us*11/10 + 1 {
		Record(h, us)
		Record(h, us)
	}
	b, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	c := newCounts()
	if err := c.add(b); err != nil {
		t.Fatal(err)
	}
	if err := c.add(b); err != nil {
		t.Fatal(err)
	}
	if c.total != 2*h.TotalCount() {
		t.Fatalf("total %d, want %d", c.total, 2*h.TotalCount())
	}
	enc, err := c.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHistogram(enc)
	if err != nil {
		t.Fatal(err)
	}
	want := NewHistogram()
	want.Merge(h)
	want.Merge(h)
	if got.TotalCount() != want.TotalCount() || LatencyOf(got) != LatencyOf(want) || LatencyOf(c.histogram()) != LatencyOf(want) {
		t.Errorf("round trip: %+v, want %+v", LatencyOf(got), LatencyOf(want))
	}
	if err := newCounts().add([]byte("garbage!")); err == nil {
		t.Error("add accepted garbage")
	}
	empty, err := newCounts().encode()
	if err != nil {
		t.Fatal(err)
	}
	if e, err := DecodeHistogram(empty); err != nil || e.TotalCount() != 0 {
		t.Errorf("empty: %v %v", e, err)
	}
}

// TestCombineAllocGC: bytes allocated, GC cycles and GC CPU are summed over
// the windows that had them and the per-request figures recomputed from the
// sums (not averaged); the GC's CPU share only counts windows where the
// process CPU was read too; transactions likewise.
func TestCombineAllocGC(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := func(v int64) *int64 { return &v }
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	ws := []Window{
		{Index: 0, Start: t0, End: t0.Add(time.Second), Requests: 100, Probes: Probes{
			CPUSeconds: f(2), AllocBytes: n(100_000), AllocBytesPerRequest: f(1000), GCCycles: n(1), GCPer1kRequests: f(10),
			GCCPUSeconds: f(0.2), GCCPUShare: f(0.1),
			Database: &Database{Transactions: n(300), XactPerRequest: f(3)}}},
		{Index: 1, Start: t0.Add(time.Second), End: t0.Add(2 * time.Second), Requests: 300, Probes: Probes{
			AllocBytes: n(900_000), AllocBytesPerRequest: f(3000), GCCycles: n(3), GCPer1kRequests: f(10),
			GCCPUSeconds: f(0.5), // no process CPU: not in the share
			Database:     &Database{Transactions: n(300), XactPerRequest: f(1)}}},
		{Index: 2, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Requests: 600, Probes: Probes{
			CPUSeconds: f(2),          // no Go metrics page reading: not in the allocation sums
			Database:   &Database{}}}, // MySQL-like: no transactions counted
	}
	got, err := Combine(ws)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Probes
	if p.AllocBytes == nil || *p.AllocBytes != 1_000_000 || p.AllocBytesPerRequest == nil || *p.AllocBytesPerRequest != 2500 {
		t.Errorf("alloc %v bytes, %v per request; want 1e6 over 400 requests = 2500", deref(p.AllocBytes), deref(p.AllocBytesPerRequest))
	}
	if p.GCCycles == nil || *p.GCCycles != 4 || p.GCPer1kRequests == nil || *p.GCPer1kRequests != 10 {
		t.Errorf("gc %v cycles, %v per 1k requests; want 4 and 10", deref(p.GCCycles), deref(p.GCPer1kRequests))
	}
	if p.GCCPUSeconds == nil || *p.GCCPUSeconds != 0.7 || p.GCCPUShare == nil || *p.GCCPUShare != 0.1 {
		t.Errorf("gc cpu %v s, share %v; want 0.7 s and 0.2/2 = 0.1", deref(p.GCCPUSeconds), deref(p.GCCPUShare))
	}
	if d := p.Database; d == nil || d.Transactions == nil || *d.Transactions != 600 || d.XactPerRequest == nil || *d.XactPerRequest != 1.5 {
		t.Errorf("database %+v, want 600 transactions, 1.5 per request", p.Database)
	}

	none, err := Combine(ws[2:])
	if err != nil {
		t.Fatal(err)
	}
	if q := none.Probes; q.AllocBytes != nil || q.AllocBytesPerRequest != nil || q.GCCycles != nil || q.GCCPUShare != nil || q.Database.Transactions != nil || q.Database.XactPerRequest != nil {
		t.Errorf("windows without the readings combined into %+v %+v, want them unset", q, q.Database)
	}
	idle, err := Combine([]Window{{Index: 0, Start: t0, End: t0.Add(time.Second), Probes: Probes{AllocBytes: n(5000), GCCycles: n(0)}}})
	if err != nil {
		t.Fatal(err)
	}
	if q := idle.Probes; *q.AllocBytes != 5000 || q.AllocBytesPerRequest != nil || q.GCPer1kRequests != nil {
		t.Errorf("an idle window: %+v, want bytes without per-request figures", q)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestCombineThreads(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	ws := []Window{
		{Index: 0, Start: t0, End: t0.Add(time.Second), Requests: 100, Probes: Probes{
			HottestThread: "worker", HottestThreadCores: f(0.4), HottestThreadBusy: f(0.5), CoresAllowed: f(4),
			TargetBusyCores: f(1), DriverCores: f(0.2), DriverBusyCores: f(0.3)}},
		// Three seconds long: it weighs three times as much.
		{Index: 1, Start: t0.Add(time.Second), End: t0.Add(4 * time.Second), Requests: 300, Probes: Probes{
			HottestThread: "node", HottestThreadMain: true, HottestThreadCores: f(0.8), HottestThreadBusy: f(0.9), CoresAllowed: f(2),
			TargetBusyCores: f(2), DatabaseCores: f(0.6), DatabaseBusyCores: f(0.7)}},
		{Index: 2, Start: t0.Add(4 * time.Second), End: t0.Add(5 * time.Second), Gap: true},
	}
	got, err := Combine(ws)
	if err != nil {
		t.Fatal(err)
	}
	p := got.Probes
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"hottest thread cores", p.HottestThreadCores, (0.4 + 3*0.8) / 4},
		{"hottest thread busy", p.HottestThreadBusy, (0.5 + 3*0.9) / 4},
		{"target busy cores", p.TargetBusyCores, (1 + 3*2.0) / 4},
		{"database cores", p.DatabaseCores, 0.6}, // only the window that had it
		{"driver busy cores", p.DriverBusyCores, 0.3},
		{"cores allowed", p.CoresAllowed, 2}, // the last reading
	} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, deref(c.got), c.want)
		}
	}
	if p.HottestThread != "node" || !p.HottestThreadMain {
		t.Errorf("hottest thread %q (main %v), want node, the busiest, main", p.HottestThread, p.HottestThreadMain)
	}
	none, err := Combine(ws[2:])
	if err != nil {
		t.Fatal(err)
	}
	if q := none.Probes; q.HottestThreadCores != nil || q.HottestThread != "" || q.CoresAllowed != nil {
		t.Errorf("a gap combined into thread readings: %+v", q)
	}
}

// TestCombineStatements: statements summed over the windows that counted
// them, per request over their requests; the lists merged by query id.
func TestCombineStatements(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	ws := []Window{
		{Index: 0, Start: t0, End: t0.Add(time.Second), Requests: 100, Probes: Probes{Database: &Database{
			Statements: 300, StatementsPerRequest: 3, StatementsCounted: true,
			TopStatements: []Statement{{QueryID: 1, Query: "SELECT a", Calls: 200, Rows: 200}, {QueryID: 2, Query: "SELECT b", Calls: 100, Rows: 9000}}}}},
		{Index: 1, Start: t0.Add(time.Second), End: t0.Add(2 * time.Second), Requests: 100, Probes: Probes{Database: &Database{
			StatementsCounted: true}}}, // an idle database: 0 statements, counted
		{Index: 2, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Requests: 100, Probes: Probes{Database: &Database{
			StatementsUnavailable: "not loaded"}}},
	}
	got, err := Combine(ws[:2])
	if err != nil {
		t.Fatal(err)
	}
	d := got.Probes.Database
	want := []Statement{{QueryID: 1, Query: "SELECT a", Calls: 200, Rows: 200}, {QueryID: 2, Query: "SELECT b", Calls: 100, Rows: 9000}}
	if !d.StatementsCounted || d.Statements != 300 || d.StatementsPerRequest != 1.5 || !slices.Equal(d.TopStatements, want) {
		t.Errorf("combined %+v, want 300 statements, 1.5 per request, %+v", d, want)
	}
	if got, err := Combine(ws[2:]); err != nil || got.Probes.Database.StatementsCounted || got.Probes.Database.StatementsUnavailable != "not loaded" {
		t.Errorf("unavailable combined into %+v (%v)", got.Probes.Database, err)
	}
}
