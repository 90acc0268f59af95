package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/longhaul-dev/longhaul/window"
)

// Columns is a set of the probe columns a window line can carry. A column
// is shown only when some window has its reading, so a run without probes
// prints the plain latency line.
type Columns uint16

// Probe columns, in the order they are printed.
const (
	// ColCPU is the target's CPU µs per request.
	ColCPU Columns = 1 << iota
	// ColAlloc is a Go target's bytes allocated per request, as "68.4k".
	ColAlloc
	// ColGCRate is a Go target's GC cycles per 1,000 requests.
	ColGCRate
	// ColRSS is the target's resident memory, MiB (the process probe's, else
	// a Node.js target's own process.memoryUsage().rss).
	ColRSS
	// ColHeap is the post-GC heap, MiB; a "*" marks a forced-GC checkpoint.
	ColHeap
	// ColExternal is a Node.js target's off-heap memory (external, which
	// holds Buffers and ArrayBuffers), MiB.
	ColExternal
	// ColLoop is a Node.js target's event-loop delay p99, ms.
	ColLoop
	// ColGC is a Go target's GC pause p99, ms.
	ColGC
	// ColRowsRead is PostgreSQL rows read per request (all user tables).
	ColRowsRead
	// ColXact is PostgreSQL transactions per request.
	ColXact
	// ColTable is the rows of the fastest-growing table (PostgreSQL live
	// rows or SQLite rows), as "items 25.1k" ("~" marks an estimate).
	ColTable
	// ColThread is the target's busiest thread and how busy it was (share
	// of the window running or waiting for a CPU; its CPU share where the
	// busy time was not read), as "node 0.99": near 1, one thread is the
	// wall.
	ColThread
)

type columnDef struct {
	col    Columns
	header string
	width  int
	cell   func(w window.Window, table string) string
}

var columnDefs = []columnDef{
	{ColCPU, "cpu µs", 6, func(w window.Window, _ string) string {
		if p := w.Probes.CPUMicrosPerRequest; p != nil {
			return compact(*p)
		}
		return ""
	}},
	{ColAlloc, "alloc/req", 9, func(w window.Window, _ string) string {
		if p := w.Probes.AllocBytesPerRequest; p != nil {
			return count(int64(math.Round(*p)))
		}
		return ""
	}},
	{ColGCRate, "gc/1k req", 9, func(w window.Window, _ string) string {
		if p := w.Probes.GCPer1kRequests; p != nil {
			return compact(*p)
		}
		return ""
	}},
	{ColRSS, "rss MiB", 7, func(w window.Window, _ string) string {
		if b, ok := rssBytes(w.Probes); ok {
			return mib(b)
		}
		return ""
	}},
	{ColHeap, "heap MiB", 8, func(w window.Window, _ string) string {
		p := w.Probes
		if p.HeapBytes == nil {
			return ""
		}
		s := mib(*p.HeapBytes)
		if p.HeapForcedGC {
			s += "*"
		}
		return s
	}},
	{ColExternal, "ext MiB", 7, func(w window.Window, _ string) string {
		if n := w.Probes.Node; n != nil {
			return mib(n.ExternalBytes)
		}
		return ""
	}},
	{ColLoop, "loop p99", 8, func(w window.Window, _ string) string {
		if d := w.Probes.EventLoopDelay; d != nil {
			return ms(d.P99Ms)
		}
		return ""
	}},
	{ColGC, "gc p99", 6, func(w window.Window, _ string) string {
		if d := w.Probes.GCPause; d != nil {
			return ms(d.P99Ms)
		}
		return ""
	}},
	{ColRowsRead, "rows/req", 8, func(w window.Window, _ string) string {
		if db := w.Probes.Database; db != nil {
			return compact(db.RowsReadPerRequest)
		}
		return ""
	}},
	{ColXact, "xact/req", 8, func(w window.Window, _ string) string {
		if db := w.Probes.Database; db != nil && db.XactPerRequest != nil {
			return compact(*db.XactPerRequest)
		}
		return ""
	}},
	{ColTable, "table rows", 13, func(w window.Window, table string) string {
		if table == "" {
			return ""
		}
		if r, ok := tableRows(w.Probes)[table]; ok {
			n := count(r.rows)
			if r.estimated {
				n = "~" + n
			}
			return shortName(table, 8) + " " + n
		}
		return ""
	}},
	{ColThread, "hot thread", 13, func(w window.Window, _ string) string {
		p := w.Probes
		v := p.HottestThreadBusy
		if v == nil {
			v = p.HottestThreadCores
		}
		if v == nil {
			return ""
		}
		return shortName(p.HottestThread, 8) + " " + strconv.FormatFloat(*v, 'f', 2, 64)
	}},
}

// maxProbeWidth is what a window line leaves its probe columns, so the line
// stays within 125 characters.
const maxProbeWidth = 125 - len(probeWindowHeader)

// optionalColumns are shown only as long as the line stays within
// maxProbeWidth, the first the most wanted: bytes allocated per request is
// the noise-robust figure a comparison decides on; GC cycles follow from
// it; transactions per request rarely move; the busiest thread matters on
// a ramp, and its readings are in the run's CSV export. The other columns are always
// shown.
var optionalColumns = []Columns{ColAlloc, ColGCRate, ColXact, ColThread}

// fit returns c less the optional columns that would make the line too
// wide, the least wanted left out first.
func fit(c Columns) Columns {
	width := func(c Columns) int {
		n := 0
		for _, d := range columnDefs {
			if c&d.col != 0 {
				n += 1 + d.width
			}
		}
		return n
	}
	for i := len(optionalColumns) - 1; i >= 0 && width(c) > maxProbeWidth; i-- {
		c &^= optionalColumns[i]
	}
	return c
}

// ColumnsOf returns the probe columns with a reading in any of ws.
func ColumnsOf(ws []window.Window) Columns {
	var c Columns
	for _, w := range ws {
		c |= columnsOf(w)
	}
	return c
}

func columnsOf(w window.Window) Columns {
	if w.Gap {
		return 0
	}
	p := w.Probes
	var c Columns
	if p.CPUMicrosPerRequest != nil {
		c |= ColCPU
	}
	if p.AllocBytesPerRequest != nil {
		c |= ColAlloc
	}
	if p.GCPer1kRequests != nil {
		c |= ColGCRate
	}
	if _, ok := rssBytes(p); ok {
		c |= ColRSS
	}
	if p.HeapBytes != nil {
		c |= ColHeap
	}
	if p.Node != nil {
		c |= ColExternal
	}
	if p.EventLoopDelay != nil {
		c |= ColLoop
	}
	if p.GCPause != nil {
		c |= ColGC
	}
	if p.Database != nil {
		c |= ColRowsRead
		if p.Database.XactPerRequest != nil {
			c |= ColXact
		}
	}
	if len(tableRows(p)) > 0 {
		c |= ColTable
	}
	if p.HottestThreadCores != nil {
		c |= ColThread
	}
	return c
}

func rssBytes(p window.Probes) (int64, bool) {
	switch {
	case p.RSSBytes != nil:
		return *p.RSSBytes, true
	case p.Node != nil && p.Node.RSSBytes > 0:
		return p.Node.RSSBytes, true
	}
	return 0, false
}

type rowCount struct {
	rows      int64
	estimated bool
}

// tableRows maps each table of a window's database reading (PostgreSQL or
// SQLite) to its rows.
func tableRows(p window.Probes) map[string]rowCount {
	var out map[string]rowCount
	if db := p.Database; db != nil && len(db.Tables) > 0 {
		out = make(map[string]rowCount, len(db.Tables))
		for _, t := range db.Tables {
			out[t.Name] = rowCount{rows: t.LiveRows}
		}
	}
	if sq := p.SQLite; sq != nil && len(sq.Tables) > 0 {
		if out == nil {
			out = make(map[string]rowCount, len(sq.Tables))
		}
		for _, t := range sq.Tables {
			out[t.Name] = rowCount{rows: t.Rows, estimated: t.Estimated}
		}
	}
	return out
}

// tableGrowth finds the fastest-growing table: the one whose rows grew most
// since it was first seen (ties: more rows, then name). Feed it windows in
// order.
type tableGrowth struct {
	first map[string]int64
	last  map[string]int64
}

func (g *tableGrowth) add(w window.Window) {
	if w.Gap {
		return
	}
	rows := tableRows(w.Probes)
	if len(rows) == 0 {
		return
	}
	if g.first == nil {
		g.first, g.last = map[string]int64{}, map[string]int64{}
	}
	for name, r := range rows {
		if _, ok := g.first[name]; !ok {
			g.first[name] = r.rows
		}
		g.last[name] = r.rows
	}
}

func (g *tableGrowth) fastest() string {
	names := make([]string, 0, len(g.last))
	for n := range g.last {
		names = append(names, n)
	}
	slices.Sort(names)
	best, bestGrowth, bestRows := "", int64(math.MinInt64), int64(-1)
	for _, n := range names {
		growth, rows := g.last[n]-g.first[n], g.last[n]
		if growth > bestGrowth || growth == bestGrowth && rows > bestRows {
			best, bestGrowth, bestRows = n, growth, rows
		}
	}
	return best
}

// FastestGrowingTable is the table of ws whose rows grew most from the first
// window that lists it to the last ("" when no window lists a table).
func FastestGrowingTable(ws []window.Window) string {
	var g tableGrowth
	for _, w := range ws {
		g.add(w)
	}
	return g.fastest()
}

// probeHeader returns the header cells of the columns in c.
func probeHeader(c Columns) string {
	var b strings.Builder
	for _, d := range columnDefs {
		if c&d.col != 0 {
			fmt.Fprintf(&b, " %*s", d.width, d.header)
		}
	}
	return b.String()
}

// columnNames lists the headers of the columns in c: "alloc/req, gc/1k req".
func columnNames(c Columns) string {
	var names []string
	for _, d := range columnDefs {
		if c&d.col != 0 {
			names = append(names, d.header)
		}
	}
	return strings.Join(names, ", ")
}

// probeCells returns w's cells of the columns in c; a column without a
// reading in w is "-".
func probeCells(c Columns, w window.Window, table string) string {
	var b strings.Builder
	for _, d := range columnDefs {
		if c&d.col == 0 {
			continue
		}
		v := d.cell(w, table)
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(&b, " %*s", d.width, v)
	}
	return b.String()
}

// mib formats bytes as MiB: 0.95, 56.6, 1023.
func mib(b int64) string {
	v := float64(b) / (1 << 20)
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// compact formats a figure in about three significant digits: 0.42, 8.51,
// 212, 17335.
func compact(v float64) string {
	switch a := math.Abs(v); {
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// count formats a row count in at most five characters: 9300, 25.1k, 251k,
// 2.51M.
func count(n int64) string {
	v := float64(n)
	switch {
	case n < 10_000:
		return strconv.FormatInt(n, 10)
	case n < 100_000:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case n < 1_000_000:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case n < 10_000_000:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case n < 100_000_000:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	}
	return strconv.FormatFloat(v/1e6, 'f', 0, 64) + "M"
}

// shortName cuts a table name or a statement to n characters, marking the cut with "…".
func shortName(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
