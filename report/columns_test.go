package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/window"
)

func ptr[T any](v T) *T { return &v }

// probedWindows are six windows of a run with the given probe readings
// added by fill (window index → probes), the fourth one lost.
func probedWindows(t *testing.T, fill func(i int, p *window.Probes)) []window.Window {
	t.Helper()
	base := fixedWindows(t)[0]
	var ws []window.Window
	for i := range 6 {
		w := base
		w.Index = i
		w.Start, w.End = t0.Add(tenSeconds(i)), t0.Add(tenSeconds(i+1))
		if i == 3 {
			ws = append(ws, window.Window{RunID: w.RunID, Index: i, Start: w.Start, End: w.End, Gap: true})
			continue
		}
		w.Probes = window.Probes{}
		fill(i, &w.Probes)
		ws = append(ws, w)
	}
	return ws
}

func tenSeconds(i int) time.Duration { return time.Duration(i) * 10 * time.Second }

// A Go target over PostgreSQL: CPU, RSS, passive heap with a forced-GC
// checkpoint every other window, GC pauses, rows read, two tables.
func goPostgresProbes(i int, p *window.Probes) {
	p.CPUMicrosPerRequest = ptr(212.4 + float64(i)*30)
	p.RSSBytes = ptr(int64(48<<20 + i*(3<<20)))
	p.HeapBytes = ptr(int64(12<<20 + i*(1<<20)))
	p.HeapForcedGC = i%2 == 1
	p.GCPause = &window.Pauses{P50Ms: 0.08, P99Ms: 0.35 + float64(i)*0.1, MaxMs: 0.9, Count: 40}
	p.Database = &window.Database{RowsReadPerRequest: 2200 + float64(i)*1400, Tables: []window.Table{
		{Name: "items", LiveRows: int64(2800 + i*4500)},
		{Name: "sessions", LiveRows: int64(16 + i*10)},
	}}
}

// A Node.js target read through the inspector: no process probe, so RSS is
// the target's own; external memory and event-loop delay.
func nodeProbes(i int, p *window.Probes) {
	p.HeapBytes, p.HeapForcedGC = ptr(int64(9<<20+i*(100<<10))), true
	p.Node = &window.NodeMemory{HeapUsedBytes: int64(9<<20 + i*(100<<10)), ExternalBytes: int64(2<<20 + i*(7<<20)),
		ArrayBuffersBytes: int64(1<<20 + i*(7<<20)), RSSBytes: int64(60<<20 + i*(8<<20))}
	p.EventLoopDelay = &window.Pauses{P50Ms: 10.1, P99Ms: 11.5 + float64(i), MaxMs: 80, Count: 1000}
}

// A Go target over SQLite: CPU, RSS, the SQLite file's tables; the heap
// probe starts answering only at window 2.
func sqliteProbes(i int, p *window.Probes) {
	p.CPUMicrosPerRequest = ptr(150.0)
	p.RSSBytes = ptr(int64(30 << 20))
	if i >= 2 {
		p.HeapBytes = ptr(int64(8 << 20))
	}
	p.SQLite = &window.SQLite{FileBytes: int64(1<<20 + i*(2<<20)), Tables: []window.SQLiteTable{
		{Name: "items", Rows: int64(2800 + i*90_000), Estimated: i > 3},
		{Name: "users", Rows: 16},
	}}
}

// A Go target without a database whose metrics page gives the allocation
// counters (from window 1 on: the first window has no previous reading).
func goAllocProbes(i int, p *window.Probes) {
	p.CPUMicrosPerRequest = ptr(180.0)
	p.RSSBytes = ptr(int64(40 << 20))
	p.HeapBytes = ptr(int64(10 << 20))
	p.GCPause = &window.Pauses{P50Ms: 0.08, P99Ms: 0.4, MaxMs: 0.9, Count: 12}
	if i >= 1 {
		p.AllocBytesPerRequest = ptr(2593.4 + float64(i)*16_000)
		p.GCPer1kRequests = ptr(0.5 + float64(i)*4)
	}
}

// goPostgresAllocProbes is goPostgresProbes with the allocation counters
// and transactions: the line has no room left for them.
func goPostgresAllocProbes(i int, p *window.Probes) {
	goPostgresProbes(i, p)
	p.AllocBytesPerRequest = ptr(68_443.0)
	p.GCPer1kRequests = ptr(20.0)
	p.Database.XactPerRequest = ptr(1.0)
}

// nodeThreadProbes is nodeProbes on a ramp read by the thread probe too:
// its main thread busy more and more of each window.
func nodeThreadProbes(i int, p *window.Probes) {
	nodeProbes(i, p)
	p.HottestThread, p.HottestThreadMain = "node", true
	p.HottestThreadCores, p.HottestThreadBusy = ptr(0.2+float64(i)*0.15), ptr(min(0.25+float64(i)*0.19, 1))
}

func TestProbeColumnsGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		fill func(int, *window.Probes)
	}{
		{"go-postgres", goPostgresProbes},
		{"node", nodeProbes},
		{"sqlite", sqliteProbes},
		{"go-alloc", goAllocProbes},
		{"go-postgres-alloc", goPostgresAllocProbes},
		{"node-threads", nodeThreadProbes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := probedWindows(t, tt.fill)
			// Live: columns as they appear.
			var live bytes.Buffer
			writeLive(t, NewText(&live, TextOptions{}), ws)
			golden.Check(t, "columns-"+tt.name+".txt.golden", live.Bytes())
			checkWidth(t, live.String())

			// Stored: the run report knows every column up front.
			rep, err := NewRunReport(fixedRun(), ws, nil)
			if err != nil {
				t.Fatal(err)
			}
			var stored bytes.Buffer
			if err := WriteRunText(&stored, rep); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "columns-"+tt.name+".run.txt.golden", stored.Bytes())
			checkWidth(t, stored.String())
			if n := strings.Count(stored.String(), "elapsed "); n != 1 {
				t.Errorf("stored report prints the window header %d times, want once", n)
			}
		})
	}
}

// checkWidth fails on a window line wider than 125 columns.
func checkWidth(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "op ") || strings.HasPrefix(l, "all ") || strings.HasPrefix(l, "summary:") {
			continue
		}
		if n := utf8.RuneCountInString(l); n > 125 {
			t.Errorf("line of %d columns (want ≤ ~120):\n%s", n, l)
		}
	}
}

func TestColumnsOf(t *testing.T) {
	ws := probedWindows(t, goPostgresProbes)
	want := ColCPU | ColRSS | ColHeap | ColGC | ColRowsRead | ColTable
	if got := ColumnsOf(ws); got != want {
		t.Errorf("ColumnsOf = %b, want %b", got, want)
	}
	if got, want := ColumnsOf(probedWindows(t, goPostgresAllocProbes)), want|ColAlloc|ColGCRate|ColXact; got != want {
		t.Errorf("ColumnsOf with allocation and transactions = %b, want %b", got, want)
	}
	if got := ColumnsOf(fixedWindows(t)); got != 0 {
		t.Errorf("ColumnsOf windows without probes = %b, want 0", got)
	}
	if got := FastestGrowingTable(ws); got != "items" {
		t.Errorf("FastestGrowingTable = %q, want items", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 9300: "9300", 25_100: "25.1k", 251_000: "251k", 2_510_000: "2.51M", 25_100_000: "25.1M", 251_000_000: "251M"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
