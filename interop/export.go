package interop

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// Format is an export format.
type Format string

// Export formats.
const (
	FormatCSV       Format = "csv"
	FormatJSON      Format = "json"
	FormatBenchstat Format = "benchstat"
)

// ParseFormat returns the Format named s.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatCSV, FormatJSON, FormatBenchstat:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q: use csv, json or benchstat", s)
}

// ExportOptions tune Export.
type ExportOptions struct {
	// Op exports one op's figures instead of the whole run's ("" for all).
	Op string
	// Warmup is the scenario's load.warmup: FormatBenchstat leaves out the
	// windows that start within it of their incarnation's first window.
	Warmup time.Duration
}

// Export writes a run's windows in format f:
//
//   - FormatCSV: a header, then one row per window: time (its start, RFC
//     3339 UTC), end, index, incarnation, gap, requests, ok, errors by
//     class, dropped, rps, p50_ms … max_ms, vus, the probe readings (empty
//     when there is none), the optional probe columns some window has a
//     reading of (csvOptional: a Go target's allocations and GC, database
//     transactions) and one custom:NAME column per custom series.
//   - FormatJSON: the windows as NDJSON, exactly as `longhaul drive
//     --format json` prints them (report.WindowJSON).
//   - FormatBenchstat: the Go benchmark format, one line per window after
//     warm-up that has requests (gaps and empty windows carry no sample),
//     named BenchmarkSoak/op=OP, with units p50-ms … max-ms, req/s,
//     errors/req and, when measured, cpu-µs/req, rss-B, heap-B, rows/req,
//     alloc-B/req, gc/1k-req.
//     Two runs' exports are compared with `benchstat a.txt b.txt`.
//
// With Op, the window's requests, errors, rates and latencies are the op's
// (a window where the op sent nothing has zeros); dropped starts, VUs and
// the probes stay the target's.
func Export(out io.Writer, ws []window.Window, f Format, opts ExportOptions) error {
	ws = sorted(ws)
	if opts.Op != "" {
		for i := range ws {
			ws[i] = opWindow(ws[i], opts.Op)
		}
	}
	switch f {
	case FormatCSV:
		return writeCSV(out, ws)
	case FormatJSON:
		j := report.NewJSON(out)
		for _, w := range ws {
			if err := j.Window(w); err != nil {
				return err
			}
		}
		return nil
	case FormatBenchstat:
		return writeBenchstat(out, benchName(opts.Op), samplesOf(ws, opts.Warmup))
	}
	return fmt.Errorf("unknown format %q: use csv, json or benchstat", f)
}

// opWindow is w with the whole run's figures replaced by op's.
func opWindow(w window.Window, op string) window.Window {
	o, ok := w.Ops[op]
	w.Requests, w.OK, w.Errors, w.Skipped, w.RPS, w.LatencyMs, w.Histogram = o.Requests, o.OK, o.Errors, o.Skipped, o.RPS, o.LatencyMs, o.Histogram
	w.Ops = map[string]window.OpStats{}
	if ok {
		w.Ops[op] = o
	}
	return w
}

var csvHeader = []string{
	"time", "end", "index", "incarnation", "gap", "requests", "ok",
	"errors_4xx", "errors_5xx", "errors_refused", "errors_reset", "errors_timeout", "errors_other", "errors_unexpected", "errors_interrupted",
	"dropped", "rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "vus",
	"cpu_seconds", "cpu_us_per_request", "rss_bytes", "heap_bytes", "rows_read_per_request",
}

// csvOptional are probe columns written only when some window has a
// reading of them, after the fixed ones: the export of a run without them
// keeps the fixed header.
var csvOptional = []struct {
	name string
	cell func(p window.Probes) string
}{
	{"alloc_bytes", func(p window.Probes) string { return optI(p.AllocBytes) }},
	{"alloc_bytes_per_request", func(p window.Probes) string { return optF(p.AllocBytesPerRequest) }},
	{"gc_cycles", func(p window.Probes) string { return optI(p.GCCycles) }},
	{"gc_per_1k_requests", func(p window.Probes) string { return optF(p.GCPer1kRequests) }},
	{"gc_cpu_seconds", func(p window.Probes) string { return optF(p.GCCPUSeconds) }},
	{"gc_cpu_share", func(p window.Probes) string { return optF(p.GCCPUShare) }},
	{"transactions", func(p window.Probes) string {
		if p.Database == nil {
			return ""
		}
		return optI(p.Database.Transactions)
	}},
	{"xact_per_request", func(p window.Probes) string {
		if p.Database == nil {
			return ""
		}
		return optF(p.Database.XactPerRequest)
	}},
	// Where the CPU went, thread by thread (probes.ThreadCPU).
	{"hottest_thread", func(p window.Probes) string { return p.HottestThread }},
	{"hottest_thread_cores", func(p window.Probes) string { return optF(p.HottestThreadCores) }},
	{"hottest_thread_busy", func(p window.Probes) string { return optF(p.HottestThreadBusy) }},
	{"target_busy_cores", func(p window.Probes) string { return optF(p.TargetBusyCores) }},
	{"cores_allowed", func(p window.Probes) string { return optF(p.CoresAllowed) }},
	{"database_cores", func(p window.Probes) string { return optF(p.DatabaseCores) }},
	{"database_busy_cores", func(p window.Probes) string { return optF(p.DatabaseBusyCores) }},
	{"driver_cores", func(p window.Probes) string { return optF(p.DriverCores) }},
	{"driver_busy_cores", func(p window.Probes) string { return optF(p.DriverBusyCores) }},
}

func writeCSV(out io.Writer, ws []window.Window) error {
	var optional []int // indexes in csvOptional
	for i, c := range csvOptional {
		if slices.ContainsFunc(ws, func(w window.Window) bool { return c.cell(w.Probes) != "" }) {
			optional = append(optional, i)
		}
	}
	var custom []string
	for _, w := range ws {
		for k := range w.Custom {
			if !slices.Contains(custom, k) {
				custom = append(custom, k)
			}
		}
	}
	slices.Sort(custom)
	cw := csv.NewWriter(out)
	head := slices.Clone(csvHeader)
	for _, i := range optional {
		head = append(head, csvOptional[i].name)
	}
	for _, c := range custom {
		head = append(head, "custom:"+c)
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	fl := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	row := make([]string, 0, len(head))
	for _, w := range ws {
		e, l, p := w.Errors, w.LatencyMs, w.Probes
		gap := "0"
		if w.Gap {
			gap = "1"
		}
		row = append(row[:0],
			w.Start.UTC().Format(time.RFC3339Nano), w.End.UTC().Format(time.RFC3339Nano), strconv.Itoa(w.Index), strconv.Itoa(w.Incarnation), gap,
			i(w.Requests), i(w.OK),
			i(e.Status4xx), i(e.Status5xx), i(e.Refused), i(e.Reset), i(e.Timeout), i(e.Other), i(e.Unexpected), i(e.Interrupted),
			i(w.Dropped), fl(round3(w.RPS)), fl(l.P50), fl(l.P90), fl(l.P95), fl(l.P99), fl(l.P999), fl(l.Max), strconv.Itoa(w.VUs),
			optF(p.CPUSeconds), optF(p.CPUMicrosPerRequest), optI(p.RSSBytes), optI(p.HeapBytes), "",
		)
		if p.Database != nil {
			row[len(row)-1] = fl(p.Database.RowsReadPerRequest)
		}
		for _, i := range optional {
			row = append(row, csvOptional[i].cell(p))
		}
		for _, c := range custom {
			if v, ok := w.Custom[c]; ok {
				row = append(row, fl(v))
			} else {
				row = append(row, "")
			}
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

func optF(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func optI(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Sample is one benchmark line: a window, or a comparison round.
type Sample struct {
	Requests                          int64
	RPS, ErrorRate                    float64
	LatencyMs                         window.Latency
	CPUMicrosPerRequest, RowsReadPerR *float64
	RSSBytes, HeapBytes               *int64
	// AllocBytesPerRequest and GCPer1kRequests are a Go target's (nil when
	// not measured).
	AllocBytesPerRequest, GCPer1kRequests *float64
}

// afterWarmup keeps, in order, the windows of ws that are not gaps and do
// not start within their incarnation's warm-up, which runs from the
// incarnation's first window that is not a gap.
func afterWarmup(ws []window.Window, warmup time.Duration) []window.Window {
	var out []window.Window
	var inc int
	var warmEnd time.Time
	begun := false
	for _, w := range ws {
		if w.Gap {
			continue
		}
		if !begun || w.Incarnation != inc {
			inc, begun, warmEnd = w.Incarnation, true, w.Start.Add(warmup)
		}
		if warmup > 0 && w.Start.Before(warmEnd) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// samplesOf turns the windows after warm-up that have requests into samples.
func samplesOf(ws []window.Window, warmup time.Duration) []Sample {
	var out []Sample
	for _, w := range afterWarmup(ws, warmup) {
		if w.Requests == 0 {
			continue
		}
		s := Sample{Requests: w.Requests, RPS: w.RPS, LatencyMs: w.LatencyMs,
			ErrorRate:           float64(w.Errors.Total()) / float64(w.Requests),
			CPUMicrosPerRequest: w.Probes.CPUMicrosPerRequest, RSSBytes: w.Probes.RSSBytes, HeapBytes: w.Probes.HeapBytes,
			AllocBytesPerRequest: w.Probes.AllocBytesPerRequest, GCPer1kRequests: w.Probes.GCPer1kRequests}
		if d := w.Probes.Database; d != nil {
			v := d.RowsReadPerRequest
			s.RowsReadPerR = &v
		}
		out = append(out, s)
	}
	return out
}

// benchName is the benchmark's name: BenchmarkSoak/op=NAME, with the
// characters a benchmark name cannot hold (space, tab) replaced by "_".
func benchName(op string) string {
	if op == "" {
		op = "all"
	}
	return "BenchmarkSoak/op=" + strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' {
			return '_'
		}
		return r
	}, op)
}

// units tells benchstat which way is better for each unit.
const unitLines = `Unit p50-ms better=lower
Unit p90-ms better=lower
Unit p95-ms better=lower
Unit p99-ms better=lower
Unit p999-ms better=lower
Unit max-ms better=lower
Unit req/s better=higher
Unit errors/req better=lower
Unit cpu-µs/req better=lower
Unit rss-B better=lower
Unit heap-B better=lower
Unit rows/req better=lower
`

// WriteBenchstat writes samples as Go benchmark lines named name (which
// must start with "Benchmark"), after the unit metadata lines.
func WriteBenchstat(out io.Writer, name string, samples []Sample) error {
	return writeBenchstat(out, name, samples)
}

func writeBenchstat(out io.Writer, name string, samples []Sample) error {
	b := bufio.NewWriter(out)
	b.WriteString(unitLines)
	// The units of the Go runtime's figures only when a sample has them, so
	// other runs' exports keep their lines.
	if slices.ContainsFunc(samples, func(s Sample) bool { return s.AllocBytesPerRequest != nil }) {
		b.WriteString("Unit alloc-B/req better=lower\n")
	}
	if slices.ContainsFunc(samples, func(s Sample) bool { return s.GCPer1kRequests != nil }) {
		b.WriteString("Unit gc/1k-req better=lower\n")
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, s := range samples {
		l := s.LatencyMs
		fmt.Fprintf(b, "%s %d %s p50-ms %s p90-ms %s p95-ms %s p99-ms %s p999-ms %s max-ms %s req/s %s errors/req",
			name, max(s.Requests, 1), g(l.P50), g(l.P90), g(l.P95), g(l.P99), g(l.P999), g(l.Max), g(s.RPS), g(s.ErrorRate))
		if s.CPUMicrosPerRequest != nil {
			fmt.Fprintf(b, " %s cpu-µs/req", g(*s.CPUMicrosPerRequest))
		}
		if s.RSSBytes != nil {
			fmt.Fprintf(b, " %d rss-B", *s.RSSBytes)
		}
		if s.HeapBytes != nil {
			fmt.Fprintf(b, " %d heap-B", *s.HeapBytes)
		}
		if s.RowsReadPerR != nil {
			fmt.Fprintf(b, " %s rows/req", g(*s.RowsReadPerR))
		}
		if s.AllocBytesPerRequest != nil {
			fmt.Fprintf(b, " %s alloc-B/req", g(*s.AllocBytesPerRequest))
		}
		if s.GCPer1kRequests != nil {
			fmt.Fprintf(b, " %s gc/1k-req", g(*s.GCPer1kRequests))
		}
		b.WriteByte('\n')
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write benchstat: %w", err)
	}
	return nil
}

// RoundSample is one comparison round as a benchmark sample: its windows
// after warm-up merged (percentiles from the merged histograms), CPU,
// bytes allocated and GC cycles per request as totals over requests, RSS
// and heap at their highest.
func RoundSample(ws []window.Window, warmup time.Duration, op string) (Sample, bool, error) {
	kept := sorted(ws)
	if op != "" {
		for i := range kept {
			kept[i] = opWindow(kept[i], op)
		}
	}
	filtered := afterWarmup(kept, warmup)
	sum, err := window.Merge(filtered)
	if err != nil {
		return Sample{}, false, err
	}
	if sum.Requests == 0 {
		return Sample{}, false, nil
	}
	s := Sample{Requests: sum.Requests, RPS: sum.RPS, LatencyMs: sum.LatencyMs, ErrorRate: float64(sum.Errors.Total()) / float64(sum.Requests)}
	var cpu, alloc, gcs float64
	var cpuN, allocN, gcN int64
	for _, w := range filtered {
		p := w.Probes
		if p.CPUMicrosPerRequest != nil && w.Requests > 0 {
			cpu += *p.CPUMicrosPerRequest * float64(w.Requests)
			cpuN += w.Requests
		}
		if p.AllocBytesPerRequest != nil && w.Requests > 0 {
			alloc += *p.AllocBytesPerRequest * float64(w.Requests)
			allocN += w.Requests
		}
		if p.GCPer1kRequests != nil && w.Requests > 0 {
			gcs += *p.GCPer1kRequests * float64(w.Requests)
			gcN += w.Requests
		}
		if p.RSSBytes != nil && (s.RSSBytes == nil || *p.RSSBytes > *s.RSSBytes) {
			v := *p.RSSBytes
			s.RSSBytes = &v
		}
		if p.HeapBytes != nil && (s.HeapBytes == nil || *p.HeapBytes > *s.HeapBytes) {
			v := *p.HeapBytes
			s.HeapBytes = &v
		}
	}
	if cpuN > 0 {
		v := cpu / float64(cpuN)
		s.CPUMicrosPerRequest = &v
	}
	if allocN > 0 {
		v := alloc / float64(allocN)
		s.AllocBytesPerRequest = &v
	}
	if gcN > 0 {
		v := gcs / float64(gcN)
		s.GCPer1kRequests = &v
	}
	return s, true, nil
}

func sorted(ws []window.Window) []window.Window {
	ws = slices.Clone(ws)
	slices.SortStableFunc(ws, func(a, b window.Window) int {
		return cmp.Or(cmp.Compare(a.Incarnation, b.Incarnation), cmp.Compare(a.Index, b.Index))
	})
	return ws
}

// BenchName is the benchmark name Export uses for op ("" for all ops).
func BenchName(op string) string { return benchName(op) }

// ExportRounds writes one benchmark line per round of side of comparison c
// (rounds that completed and were not superseded by a rerun), each the
// round's windows after c.Warmup merged (RoundSample); windows reads a
// round's windows. Export A and B to two files and `benchstat a.txt b.txt`
// compares the builds round by round. It returns the number of lines.
func ExportRounds(ctx context.Context, out io.Writer, c store.Comparison, side store.Side, op string,
	windows func(ctx context.Context, runID string) ([]window.Window, error)) (int, error) {
	var samples []Sample
	for _, r := range c.Rounds {
		if r.Side != side || r.Superseded || r.RunID == "" || r.Status != store.Completed {
			continue
		}
		ws, err := windows(ctx, r.RunID)
		if err != nil {
			return 0, fmt.Errorf("round %d (run %s): %w", r.Index, r.RunID, err)
		}
		s, ok, err := RoundSample(ws, c.Warmup, op)
		if err != nil {
			return 0, fmt.Errorf("round %d (run %s): %w", r.Index, r.RunID, err)
		}
		if ok {
			samples = append(samples, s)
		}
	}
	return len(samples), writeBenchstat(out, benchName(op), samples)
}
