package interop

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

var e0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// exportWindows are four 10 s windows: a warm-up one, two with probes, a
// gap. Latencies scale with scale (a slower build is scale 2).
func exportWindows(t *testing.T, scale float64) []window.Window {
	t.Helper()
	mk := func(idx int, n int, ms float64, probes bool) window.Window {
		return mkWindow(idx, n, ms, scale, probes)
	}
	ws := []window.Window{mk(0, 200, 9, false), mk(1, 400, 2, true), mk(2, 380, 2.2, true)}
	ws = append(ws, window.Window{RunID: "r", Incarnation: 1, Index: 3, Start: ws[2].End, End: ws[2].End.Add(10 * time.Second), Gap: true})
	ws = append(ws, mk(4, 390, 2.1, true))
	return ws
}

// mkWindow is window idx (10 s long) with n requests of two ops around ms × scale.
func mkWindow(idx int, n int, ms, scale float64, probes bool) window.Window {
	{
		h, g, p := window.NewHistogram(), window.NewHistogram(), window.NewHistogram()
		for i := range n {
			us := int64(ms * scale * 1000 * (1 + float64(i%10)/10))
			window.Record(h, us)
			if i%4 == 0 {
				window.Record(p, us*3)
				window.Record(h, us*3)
			} else {
				window.Record(g, us)
			}
		}
		hb, _ := window.EncodeHistogram(h)
		gb, _ := window.EncodeHistogram(g)
		pb, _ := window.EncodeHistogram(p)
		get := window.OpStats{Requests: g.TotalCount(), OK: g.TotalCount(), RPS: float64(g.TotalCount()) / 10, LatencyMs: window.LatencyOf(g), Histogram: gb}
		post := window.OpStats{Requests: p.TotalCount(), OK: p.TotalCount() - 1, Errors: window.Errors{Status5xx: 1}, RPS: float64(p.TotalCount()) / 10, LatencyMs: window.LatencyOf(p), Histogram: pb}
		w := window.Window{
			RunID: "r", Incarnation: 1, Index: idx, Start: e0.Add(time.Duration(idx) * 10 * time.Second), End: e0.Add(time.Duration(idx+1) * 10 * time.Second),
			Requests: h.TotalCount(), OK: h.TotalCount() - 1, Errors: window.Errors{Status5xx: 1}, Dropped: int64(idx),
			RPS: float64(h.TotalCount()) / 10, VUs: 8, LatencyMs: window.LatencyOf(h), Histogram: hb,
			Ops: map[string]window.OpStats{"get items": get, "post": post},
		}
		if probes {
			cpu, cpuReq := 0.5*scale, 250*scale
			rss, heap := int64(52_000_000), int64(21_000_000+idx)
			w.Probes = window.Probes{CPUSeconds: &cpu, CPUMicrosPerRequest: &cpuReq, RSSBytes: &rss, HeapBytes: &heap,
				Database: &window.Database{RowsReadPerRequest: 3.5}}
			w.Custom = map[string]float64{"iterations": float64(n)}
		}
		return w
	}
}

func export(t *testing.T, ws []window.Window, f Format, opts ExportOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Export(&b, ws, f, opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestExportGolden(t *testing.T) {
	ws := exportWindows(t, 1)
	warm := ExportOptions{Warmup: 10 * time.Second}
	for _, tt := range []struct {
		file string
		f    Format
		opts ExportOptions
	}{
		{"export.csv.golden", FormatCSV, ExportOptions{}},
		{"export-op.csv.golden", FormatCSV, ExportOptions{Op: "post"}},
		{"export.ndjson.golden", FormatJSON, ExportOptions{}},
		{"export-op.ndjson.golden", FormatJSON, ExportOptions{Op: "get items"}},
		{"export.benchstat.golden", FormatBenchstat, warm},
		{"export-op.benchstat.golden", FormatBenchstat, ExportOptions{Op: "get items", Warmup: warm.Warmup}},
	} {
		t.Run(tt.file, func(t *testing.T) { golden.Check(t, tt.file, export(t, ws, tt.f, tt.opts)) })
	}
}

func TestExportCSVShape(t *testing.T) {
	rows, err := csv.NewReader(bytes.NewReader(export(t, exportWindows(t, 1), FormatCSV, ExportOptions{}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want a header and 5 windows", len(rows))
	}
	head := strings.Join(rows[0], ",")
	for _, col := range []string{"time", "index", "incarnation", "requests", "errors_5xx", "dropped", "rps", "p50_ms", "max_ms", "cpu_us_per_request", "heap_bytes", "custom:iterations"} {
		if !strings.Contains(","+head+",", ","+col+",") {
			t.Errorf("header lacks %s: %s", col, head)
		}
	}
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			t.Errorf("row %v has %d cells, header %d", r, len(r), len(rows[0]))
		}
	}
	if rows[1][25] != "" || rows[2][25] == "" {
		t.Errorf("cpu_us_per_request: %q in a window without probes, %q with: want empty, then a value", rows[1][25], rows[2][25])
	}
}

// TestBenchstatAcceptsExport runs benchstat (golang.org/x/perf, a tool
// dependency in go.mod) on two runs' exports: it must read every line,
// compare the units, and see that B's latencies doubled.
func TestBenchstatAcceptsExport(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to run benchstat with")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	opts := ExportOptions{Warmup: 10 * time.Second}
	run := func(scale float64) []window.Window {
		var ws []window.Window
		for i := range 9 { // a warm-up window and 8 samples
			w := mkWindow(i, 300+i*7, 2+float64(i%3)/10, scale, i > 0)
			if i > 0 {
				withAlloc(&w, 4000*scale*(1+float64(i%3)/50), 20*scale)
			}
			ws = append(ws, w)
		}
		return ws
	}
	if err := os.WriteFile(a, export(t, run(1), FormatBenchstat, opts), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, export(t, run(2), FormatBenchstat, opts), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "benchstat", a, b)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, out)
	}
	text := string(out)
	t.Logf("benchstat a.txt b.txt:\n%s", text)
	for _, want := range []string{"p50-ms", "p99-ms", "req/s", "cpu-µs/req", "alloc-B/req", "gc/1k-req", "Soak/op=all", "+100.00%"} {
		if !strings.Contains(text, want) {
			t.Errorf("benchstat output lacks %q", want)
		}
	}
	for _, bad := range []string{"parsing", "syntax error", "unknown"} {
		if strings.Contains(strings.ToLower(text), bad) {
			t.Errorf("benchstat complained (%q)", bad)
		}
	}
}

// withAlloc adds a Go target's allocation and GC readings to w, and a
// PostgreSQL transaction count.
func withAlloc(w *window.Window, perRequest, gcPer1k float64) {
	alloc, gcs := int64(perRequest*float64(w.Requests)), int64(gcPer1k*float64(w.Requests)/1000)
	gcCPU, share := 0.01, 0.02
	w.Probes.AllocBytes, w.Probes.AllocBytesPerRequest = &alloc, &perRequest
	w.Probes.GCCycles, w.Probes.GCPer1kRequests = &gcs, &gcPer1k
	w.Probes.GCCPUSeconds, w.Probes.GCCPUShare = &gcCPU, &share
	if w.Probes.Database != nil {
		x, per := w.Requests, 1.0
		w.Probes.Database.Transactions, w.Probes.Database.XactPerRequest = &x, &per
	}
}

// TestExportAllocColumns: a run with the Go runtime's readings and
// transactions gets their CSV columns (empty where a window has none) and
// benchstat units; the fixed columns stay where they were.
func TestExportAllocColumns(t *testing.T) {
	ws := exportWindows(t, 1)
	for i := range ws {
		if ws[i].Probes.CPUSeconds != nil {
			withAlloc(&ws[i], 4096, 12.5)
		}
	}
	rows, err := csv.NewReader(bytes.NewReader(export(t, ws, FormatCSV, ExportOptions{}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := rows[0]
	if got := strings.Join(head[len(csvHeader):], ","); got != "alloc_bytes,alloc_bytes_per_request,gc_cycles,gc_per_1k_requests,gc_cpu_seconds,gc_cpu_share,transactions,xact_per_request,custom:iterations" {
		t.Errorf("columns after the fixed ones: %s", got)
	}
	col := func(name string) int { return slices.Index(head, name) }
	if rows[1][col("alloc_bytes_per_request")] != "" || rows[2][col("alloc_bytes_per_request")] != "4096" || rows[2][col("gc_per_1k_requests")] != "12.5" || rows[2][col("xact_per_request")] != "1" {
		t.Errorf("rows: %v / %v", rows[1], rows[2])
	}
	bench := string(export(t, ws, FormatBenchstat, ExportOptions{Warmup: 10 * time.Second}))
	for _, want := range []string{"Unit alloc-B/req better=lower\n", "Unit gc/1k-req better=lower\n", " 4096 alloc-B/req 12.5 gc/1k-req\n"} {
		if !strings.Contains(bench, want) {
			t.Errorf("benchstat export lacks %q:\n%s", want, bench)
		}
	}
	s, ok, err := RoundSample(ws, 10*time.Second, "")
	if err != nil || !ok || s.AllocBytesPerRequest == nil || *s.AllocBytesPerRequest != 4096 || *s.GCPer1kRequests != 12.5 {
		t.Errorf("RoundSample = %+v, %v, %v; want 4096 B and 12.5 GC cycles per request", s, ok, err)
	}
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"csv", "json", "benchstat"} {
		if f, err := ParseFormat(s); err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) accepted it")
	}
}

func TestRoundSample(t *testing.T) {
	s, ok, err := RoundSample(exportWindows(t, 1), 10*time.Second, "")
	if err != nil || !ok {
		t.Fatalf("RoundSample: %v, %v", ok, err)
	}
	if s.Requests != 1463 || s.CPUMicrosPerRequest == nil || *s.CPUMicrosPerRequest != 250 || *s.HeapBytes != 21_000_004 {
		t.Errorf("sample %+v", s)
	}
	if _, ok, _ := RoundSample(nil, 0, ""); ok {
		t.Error("a round without windows gave a sample")
	}
}

// TestExportRounds: one benchstat line per completed, not superseded round
// of the side asked for, each the round's windows after warm-up merged.
func TestExportRounds(t *testing.T) {
	c := store.Comparison{ID: "c1", Warmup: 10 * time.Second, Rounds: []store.Round{
		{Index: 0, Side: store.SideA, RunID: "a1", Status: store.Completed},
		{Index: 1, Side: store.SideB, RunID: "b1", Status: store.Completed},
		{Index: 2, Side: store.SideB, RunID: "b2", Status: store.Completed},
		{Index: 3, Side: store.SideA, RunID: "a2", Status: store.Completed},
		{Index: 4, Side: store.SideA, RunID: "a3", Status: store.Completed, Superseded: true},
		{Index: 5, Side: store.SideA, RunID: "a4", Status: store.Failed},
	}}
	windows := func(_ context.Context, runID string) ([]window.Window, error) {
		scale := 1.0
		if strings.HasPrefix(runID, "b") {
			scale = 2
		}
		return exportWindows(t, scale), nil
	}
	for side, want := range map[store.Side]string{store.SideA: "BenchmarkSoak/op=all 1463 3.301 p50-ms", store.SideB: "BenchmarkSoak/op=all 1463 6.603 p50-ms"} {
		var b bytes.Buffer
		n, err := ExportRounds(context.Background(), &b, c, side, "", windows)
		if err != nil || n != 2 {
			t.Fatalf("side %s: %d lines, %v; want 2", side, n, err)
		}
		if got := strings.Count(b.String(), want); got != 2 {
			t.Errorf("side %s: %d lines starting %q:\n%s", side, got, want, b.String())
		}
	}
}

// TestExportThreadColumns: the thread probe's readings get their CSV
// columns, the thread's name as text.
func TestExportThreadColumns(t *testing.T) {
	ws := exportWindows(t, 1)
	cores, busy, allowed := 0.42, 0.99, 2.0
	ws[1].Probes.HottestThread, ws[1].Probes.HottestThreadCores, ws[1].Probes.HottestThreadBusy, ws[1].Probes.CoresAllowed = "node", &cores, &busy, &allowed
	rows, err := csv.NewReader(bytes.NewReader(export(t, ws, FormatCSV, ExportOptions{}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := rows[0]
	for _, c := range []struct{ col, want string }{{"hottest_thread", "node"}, {"hottest_thread_cores", "0.42"}, {"hottest_thread_busy", "0.99"}, {"cores_allowed", "2"}} {
		i := slices.Index(head, c.col)
		if i < 0 || rows[2][i] != c.want || rows[1][i] != "" {
			t.Errorf("column %s at %d: want %q in the second window only; rows %v / %v", c.col, i, c.want, rows[1], rows[2])
		}
	}
	if slices.Contains(head, "driver_cores") {
		t.Errorf("a column without readings: %v", head)
	}
}
