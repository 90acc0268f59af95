// Command runner is the accuracy bench of issue 5 §3 through the CLI: it
// runs real soaks with `longhaul run --format json` on the docker and local
// providers, reads the findings from each run's report line, judges them
// against the bar and writes a table to stdout and bench/accuracy/RESULTS.md.
//
//	bench/accuracy/run.sh                      # builds what it needs, then runs this
//	go run ./bench/accuracy/runner -longhaul /tmp/longhaul
//
// Variants (each a scenario under bench/accuracy, per provider):
//
//	leak        demo target over PostgreSQL, DEMO_LEAK_BYTES=2048   → a leak finding
//	noindex     demo target, DEMO_INDEX_BUCKET=false               → a collapse naming items
//	clean       demo target as it is                               → no warning-or-worse finding
//	node-leak   examples/node-target, LEAK_BYTES=2048 (inspector)  → a leak finding
//	node-clean  examples/node-target as it is (inspector)          → no warning-or-worse finding
//
// Runs are interleaved: round 1 runs every variant on every provider, then
// round 2, and so on; within a round the order of variants rotates and the
// providers alternate, so the machine's drift is spread over all of them.
// A "finding" that meets the bar is one of severity warning or critical.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
)

// variant is one kind of soak and its bar.
type variant struct {
	name     string
	scenario string // file name under bench/accuracy, %s = provider
	env      []string
	want     string // what the bar asks, for the tables
	judge    func([]analysis.Finding) error
	// duration is the variant's soak length when -duration is not given.
	duration time.Duration
}

var variants = []variant{
	{"leak", "demo-%s.yaml", []string{"DEMO_LEAK_BYTES=2048"}, "leak", wantLeak, 90 * time.Second},
	{"noindex", "demo-%s.yaml", []string{"DEMO_INDEX_BUCKET=false"}, "collapse on items", wantCollapseItems, 90 * time.Second},
	{"clean", "demo-%s.yaml", nil, "no warning-or-worse", wantNothing, 90 * time.Second},
	{"node-leak", "node-%s.yaml", []string{"LEAK_BYTES=2048"}, "leak", wantLeak, 90 * time.Second},
	{"node-clean", "node-%s.yaml", nil, "no warning-or-worse", wantNothing, 90 * time.Second},
	{"node-offheap", "node-%s.yaml", []string{"LEAK_BUFFER_BYTES=2048"}, "leak outside the heap", wantOffHeapLeak, 90 * time.Second},
	// The SQLite twins run 3 minutes: at 300 requests/s the no-index list
	// scan only costs about 0.08 µs per row, so in 90 s (10k rows) list's
	// p50 goes from ~1.1 to ~1.9 ms, too little to stand out of a busy
	// machine's noise; in 3 minutes (20k rows) it more than doubles.
	{"sqlite-noindex", "sqlite-%s.yaml", []string{"DEMO_INDEX_BUCKET=false"}, "collapse on items, op list", wantCollapseItemsList, 3 * time.Minute},
	{"sqlite-clean", "sqlite-%s.yaml", nil, "no warning-or-worse", wantNothing, 3 * time.Minute},
	// The MySQL twins: the demo target over MariaDB (local) or mysql:8.4 /
	// the offline MariaDB image (docker), the performance schema probe.
	{"mysql-leak", "mysql-%s.yaml", []string{"DEMO_LEAK_BYTES=2048"}, "leak", wantLeak, 90 * time.Second},
	{"mysql-noindex", "mysql-%s.yaml", []string{"DEMO_INDEX_BUCKET=false"}, "collapse on items", wantCollapseItems, 90 * time.Second},
	{"mysql-clean", "mysql-%s.yaml", nil, "no warning-or-worse", wantNothing, 90 * time.Second},
	// The MongoDB twins: the demo target over mongod or FerretDB (local) or
	// mongo:7 (docker), the MongoDB probe.
	{"mongodb-leak", "mongodb-%s.yaml", []string{"DEMO_LEAK_BYTES=2048"}, "leak", wantLeak, 90 * time.Second},
	{"mongodb-noindex", "mongodb-%s.yaml", []string{"DEMO_INDEX_BUCKET=false"}, "collapse on items", wantCollapseItems, 90 * time.Second},
	{"mongodb-clean", "mongodb-%s.yaml", nil, "no warning-or-worse", wantNothing, 90 * time.Second},
}

func verdicts(fs []analysis.Finding) []analysis.Finding {
	var out []analysis.Finding
	for _, f := range fs {
		if f.Severity.Rank() >= analysis.Warning.Rank() {
			out = append(out, f)
		}
	}
	return out
}

func wantLeak(fs []analysis.Finding) error {
	for _, f := range verdicts(fs) {
		if f.Kind == analysis.KindLeak {
			return nil
		}
	}
	return errors.New("no leak finding")
}

func wantCollapseItems(fs []analysis.Finding) error {
	for _, f := range verdicts(fs) {
		if f.Kind == analysis.KindCollapse && f.Evidence.Table == "items" {
			return nil
		}
	}
	return errors.New("no collapse finding naming items")
}

func wantCollapseItemsList(fs []analysis.Finding) error {
	for _, f := range verdicts(fs) {
		if f.Kind == analysis.KindCollapse && f.Evidence.Table == "items" {
			if f.Evidence.Op != "list" {
				return fmt.Errorf("collapse naming items but op %q, want list", f.Evidence.Op)
			}
			return nil
		}
	}
	return errors.New("no collapse finding naming items")
}

func wantOffHeapLeak(fs []analysis.Finding) error {
	for _, f := range verdicts(fs) {
		if f.Kind == analysis.KindLeak {
			if f.Evidence.Notes["off_heap"] != 1 {
				return errors.New("a leak finding, but on the heap")
			}
			return nil
		}
	}
	return errors.New("no leak finding")
}

func wantNothing(fs []analysis.Finding) error {
	if v := verdicts(fs); len(v) > 0 {
		kinds := make([]string, len(v))
		for i, f := range v {
			kinds[i] = string(f.Severity) + " " + f.Kind
		}
		return fmt.Errorf("warning-or-worse findings: %s", strings.Join(kinds, ", "))
	}
	return nil
}

// report is the part of longhaul run's last JSON line the bench reads.
type report struct {
	Type          string             `json:"type"`
	RunID         string             `json:"run_id"`
	Status        string             `json:"status"`
	Reason        string             `json:"reason"`
	Windows       int                `json:"windows"`
	ProbeProblems []json.RawMessage  `json:"probe_problems"`
	Findings      []analysis.Finding `json:"findings"`
}

// result is one soak.
type result struct {
	Round    int
	Provider string
	Variant  string
	RunID    string
	Status   string
	Windows  int
	Findings []analysis.Finding
	Problems int
	Pass     bool
	Why      string // why it failed the bar
	Seconds  float64
	Load1    float64 // load average when it ended
}

type config struct {
	longhaul  string
	dir       string // bench/accuracy
	providers []string
	variants  []variant
	runs      int
	duration  time.Duration
	data      string
	out       string
	traces    string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("accuracy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var providers, names string
	fs.StringVar(&c.longhaul, "longhaul", "", "the longhaul binary (required)")
	fs.StringVar(&c.dir, "dir", "bench/accuracy", "directory of the bench's scenarios")
	fs.StringVar(&providers, "providers", "docker,local", "providers, comma-separated")
	fs.StringVar(&names, "variants", "leak,noindex,clean,node-leak,node-clean,node-offheap,sqlite-noindex,sqlite-clean", "variants, comma-separated")
	fs.IntVar(&c.runs, "runs", 5, "runs per provider and variant")
	fs.DurationVar(&c.duration, "duration", 0, "length of every soak (default: each variant's own, 90 s; 3 min for the SQLite twins)")
	fs.StringVar(&c.data, "data", "", "longhaul data directory (default: a new temporary one)")
	fs.StringVar(&c.out, "out", "bench/accuracy/RESULTS.md", "results file to write (\"\" for none)")
	fs.StringVar(&c.traces, "traces", "", "directory to keep each run's NDJSON output in (\"\" for none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.longhaul == "" {
		return errors.New("-longhaul is required")
	}
	c.providers = splitList(providers)
	for _, p := range c.providers {
		if p != "docker" && p != "local" {
			return fmt.Errorf("-providers: unknown provider %q", p)
		}
	}
	for _, n := range splitList(names) {
		i := slices.IndexFunc(variants, func(v variant) bool { return v.name == n })
		if i < 0 {
			return fmt.Errorf("-variants: unknown variant %q", n)
		}
		c.variants = append(c.variants, variants[i])
	}
	if c.runs < 1 {
		return errors.New("-runs must be ≥ 1")
	}
	if c.data == "" {
		d, err := os.MkdirTemp("", "longhaul-accuracy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.data = d
	}
	if c.traces != "" {
		if err := os.MkdirAll(c.traces, 0o755); err != nil {
			return err
		}
	}

	started := time.Now()
	startLoad := load1()
	var results []result
	total := c.runs * len(c.variants) * len(c.providers)
	for round := 1; round <= c.runs; round++ {
		for vi := range c.variants {
			v := c.variants[(vi+round-1)%len(c.variants)]
			for pi := range c.providers {
				p := c.providers[(pi+round-1)%len(c.providers)]
				r, err := soak(c, round, p, v)
				if err != nil {
					return err
				}
				results = append(results, r)
				verdict := "PASS"
				if !r.Pass {
					verdict = "FAIL: " + r.Why
				}
				fmt.Fprintf(stderr, "[%d/%d] round %d %-6s %-10s %-9s %3d windows  %5.0f s  load %.1f  %s  %s\n",
					len(results), total, round, p, v.name, r.Status, r.Windows, r.Seconds, r.Load1, findingList(r.Findings), verdict)
			}
		}
	}
	md := resultsMarkdown(c, results, started, startLoad)
	fmt.Fprint(stdout, md)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.out, err)
		}
	}
	return nil
}

// soak runs one `longhaul run` and judges its report.
func soak(c config, round int, provider string, v variant) (result, error) {
	r := result{Round: round, Provider: provider, Variant: v.name}
	scen := filepath.Join(c.dir, fmt.Sprintf(v.scenario, provider))
	d := v.duration
	if c.duration > 0 {
		d = c.duration
	}
	args := []string{"run", scen, "--format", "json", "--data", c.data, "--duration", d.String()}
	for _, kv := range v.env {
		args = append(args, "--target-env", kv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.longhaul, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r.Seconds = time.Since(start).Seconds()
	r.Load1 = load1()
	if c.traces != "" {
		name := fmt.Sprintf("%s-%s-%d.ndjson", provider, v.name, round)
		_ = os.WriteFile(filepath.Join(c.traces, name), stdout.Bytes(), 0o644)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		return r, fmt.Errorf("longhaul %s: bad input (exit 2):\n%s", strings.Join(args, " "), tail(stderr.String(), 10))
	}
	rep, perr := lastReport(stdout.Bytes())
	if perr != nil {
		r.Status = "no-report"
		r.Why = fmt.Sprintf("%v (exit %v); stderr: %s", perr, err, tail(stderr.String(), 3))
		return r, nil
	}
	r.RunID, r.Status, r.Windows, r.Findings, r.Problems = rep.RunID, rep.Status, rep.Windows, rep.Findings, len(rep.ProbeProblems)
	if rep.Status != "completed" {
		r.Why = "run " + rep.Status + ": " + rep.Reason
		return r, nil
	}
	if jerr := v.judge(rep.Findings); jerr != nil {
		r.Why = jerr.Error()
		return r, nil
	}
	r.Pass = true
	return r, nil
}

// lastReport decodes the {"type":"report"} line of longhaul run --format json.
func lastReport(out []byte) (report, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var rep report
	found := false
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"type":"report"`)) {
			continue
		}
		if err := json.Unmarshal(line, &rep); err == nil && rep.Type == "report" {
			found = true
		}
	}
	if err := sc.Err(); err != nil {
		return rep, err
	}
	if !found {
		return rep, errors.New("no report line in the output")
	}
	return rep, nil
}

// resultsMarkdown renders RESULTS.md.
func resultsMarkdown(c config, rs []result, started time.Time, startLoad float64) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# Accuracy bench through the CLI — results\n\n")
	fmt.Fprintf(&b, "Written by `bench/accuracy/run.sh` (`go run ./bench/accuracy/runner`); see README.md.\n\n")
	fmt.Fprintf(&b, "- date: %s → %s (%s)\n", started.UTC().Format("2006-01-02 15:04"), time.Now().UTC().Format("15:04 MST"), time.Since(started).Round(time.Minute))
	fmt.Fprintf(&b, "- machine: %s, %d cores (%s), %s; load average %.1f at the start, %s over the runs (shared with other work)\n",
		host, runtime.NumCPU(), runtime.GOARCH, memTotal(), startLoad, loadRange(rs))
	fmt.Fprintf(&b, "- each run: `longhaul run bench/accuracy/<scenario> --format json --duration %s` (3 s windows, warm-up 6 s), findings read from the report line\n", durations(c))
	fmt.Fprintf(&b, "- %d runs per provider and variant, interleaved (round by round, variant order rotating, providers alternating)\n\n", c.runs)

	b.WriteString("## Bar met\n\n| variant | want |")
	for _, p := range c.providers {
		b.WriteString(" " + p + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(c.providers)) + "\n")
	for _, v := range c.variants {
		fmt.Fprintf(&b, "| %s | %s |", v.name, v.want)
		for _, p := range c.providers {
			pass, n := 0, 0
			for _, r := range rs {
				if r.Provider == p && r.Variant == v.name {
					n++
					if r.Pass {
						pass++
					}
				}
			}
			fmt.Fprintf(&b, " %d/%d |", pass, n)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Runs\n\n")
	b.WriteString("| round | provider | variant | status | windows | findings | evidence | verdict | s | load |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		verdict := "pass"
		if !r.Pass {
			verdict = "**FAIL**: " + r.Why
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %d | %s | %s | %s | %.0f | %.1f |\n",
			r.Round, r.Provider, r.Variant, r.Status, r.Windows, findingList(r.Findings), evidenceOf(r.Findings), verdict, r.Seconds, r.Load1)
	}
	return b.String()
}

// findingList is "critical leak (items), info missing_evidence" or "none",
// most severe first.
func findingList(fs []analysis.Finding) string {
	if len(fs) == 0 {
		return "none"
	}
	sorted := slices.Clone(fs)
	slices.SortStableFunc(sorted, func(a, b analysis.Finding) int { return b.Severity.Rank() - a.Severity.Rank() })
	parts := make([]string, len(sorted))
	for i, f := range sorted {
		parts[i] = string(f.Severity) + " " + f.Kind
		if f.Evidence.Table != "" {
			parts[i] += " (" + f.Evidence.Table + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// evidenceOf is the headline figures of the run's leak or collapse finding.
func evidenceOf(fs []analysis.Finding) string {
	for _, f := range fs {
		e := f.Evidence
		switch f.Kind {
		case analysis.KindLeak:
			what := "heap"
			if e.Notes["off_heap"] == 1 {
				what = strings.SplitN(f.Summary, " grew", 2)[0] + fmt.Sprintf(" (heap %s → %s)", mib(e.Notes["heap_before"]), mib(e.Notes["heap_after"]))
				what = strings.Replace(what, " (external: Buffers, ArrayBuffers)", "", 1)
			}
			return fmt.Sprintf("%s %s → %s, %s/1k req, p=%.2g", what, mib(e.Before), mib(e.After), mib(e.PerKRequests), e.PValue)
		case analysis.KindCollapse:
			s := fmt.Sprintf("%.0f → %.0f req/s", e.Notes["rps_before"], e.Notes["rps_after"])
			if e.Table != "" {
				if _, ok := e.Notes["rows_read_per_request_before"]; ok {
					s += fmt.Sprintf(", %s rows read/req %.0f → %.0f", e.Table, e.Notes["rows_read_per_request_before"], e.Notes["rows_read_per_request_after"])
				} else {
					s += ", table " + e.Table
				}
			}
			for _, op := range e.Ops {
				if op.Op == e.Op && e.Op != "" {
					s += fmt.Sprintf(", %s p50 %.1f → %.1f ms", op.Op, op.P50BeforeMs, op.P50AfterMs)
				}
			}
			return s
		}
	}
	return ""
}

// durations is "1m30s" or "1m30s (sqlite-noindex, sqlite-clean: 3m0s)".
func durations(c config) string {
	if c.duration > 0 {
		return c.duration.String()
	}
	byLen := map[time.Duration][]string{}
	var lens []time.Duration
	for _, v := range c.variants {
		if _, ok := byLen[v.duration]; !ok {
			lens = append(lens, v.duration)
		}
		byLen[v.duration] = append(byLen[v.duration], v.name)
	}
	slices.Sort(lens)
	s := lens[0].String()
	if len(lens) == 1 {
		return s
	}
	var rest []string
	for _, d := range lens[1:] {
		rest = append(rest, strings.Join(byLen[d], ", ")+": "+d.String())
	}
	return s + " (" + strings.Join(rest, "; ") + ")"
}

func mib(v float64) string { return strconv.FormatFloat(v/(1<<20), 'f', 2, 64) + " MiB" }

func loadRange(rs []result) string {
	if len(rs) == 0 {
		return "-"
	}
	lo, hi := rs[0].Load1, rs[0].Load1
	for _, r := range rs {
		lo, hi = min(lo, r.Load1), max(hi, r.Load1)
	}
	return fmt.Sprintf("%.1f–%.1f", lo, hi)
}

func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return fmt.Sprintf("%.0f GiB RAM", kb/(1<<20))
		}
	}
	return "memory unknown"
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
