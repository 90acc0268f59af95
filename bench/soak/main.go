// Command soak measures longhaul over many hours (issue 10 §4): it runs
// `longhaul run` of the demo (scenarios/demo.yaml on the docker provider,
// 10 s windows, 16 VUs at full speed) for a long time — once clean and once
// with DEMO_LEAK_BYTES=256 — and records
//
//   - longhaul's own RSS (the `longhaul run` process: driver, embedded
//     Temporal server and worker, store) every 30 s, reported at 10 min and
//     at the end of the drive;
//   - the store's bytes per window (longhaul.db and its WAL over the windows);
//   - windows lost (gap windows, and windows missing from the expected count);
//   - the findings (clean: no warning-or-worse; leak: a leak);
//   - for each variant, `longhaul analyze --until 15m/30m/60m` (is the
//     verdict there yet?) and the first window count from which the leak
//     verdict holds, found with `longhaul analyze --windows N`.
//
// It writes a Markdown report to -out (bench/soak/RESULTS.md) and the raw
// figures to -work. Run it with bench/soak/run.sh, which builds longhaul
// and the images; two 2-hour soaks run concurrently by default (-parallel).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/longhaul-dev/longhaul/analysis"
)

type variant struct {
	name string
	env  []string
	want string
}

var variants = []variant{
	{"clean", nil, "no warning-or-worse finding"},
	{"leak", []string{"DEMO_LEAK_BYTES=256"}, "a leak finding"},
}

type config struct {
	longhaul string
	scenario string
	work     string
	out      string
	duration time.Duration
	window   time.Duration
	memory   string
	parallel bool
	only     []string
	// reanalyze: skip the soaks; read the run ids from -work and redo the
	// measurements that need only the store.
	reanalyze bool
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var c config
	var only string
	fs.StringVar(&c.longhaul, "longhaul", "", "the longhaul binary (required)")
	fs.StringVar(&c.scenario, "scenario", "scenarios/demo.yaml", "the demo scenario, run on the docker provider")
	fs.StringVar(&c.work, "work", "/tmp/longhaul-soak", "directory for the data directories, outputs and samples")
	fs.StringVar(&c.out, "out", "bench/soak/RESULTS.md", "results file (\"\" for none)")
	fs.DurationVar(&c.duration, "duration", 2*time.Hour, "length of each soak")
	fs.DurationVar(&c.window, "window", 10*time.Second, "window length")
	fs.StringVar(&c.memory, "memory", "8g", "memory limit of the target container (the leak grows its heap by GBs)")
	fs.BoolVar(&c.parallel, "parallel", true, "run the variants at the same time (else one after the other)")
	fs.StringVar(&only, "variants", "clean,leak", "variants to run")
	fs.BoolVar(&c.reanalyze, "reanalyze", false, "do not soak: redo the store measurements of the runs recorded in -work")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.longhaul == "" {
		return errors.New("-longhaul is required")
	}
	c.only = strings.Split(only, ",")
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	var vs []variant
	for _, v := range variants {
		if slices.Contains(c.only, v.name) {
			vs = append(vs, v)
		}
	}
	results := make([]*result, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		do := func() {
			r, err := soak(c, v)
			if err != nil {
				r.Err = err.Error()
				logf("%s: %v", v.name, err)
			}
			results[i] = r
		}
		if c.parallel && !c.reanalyze {
			wg.Go(do)
		} else {
			do()
		}
	}
	wg.Wait()
	md := markdown(c, results)
	fmt.Print(md)
	if c.out != "" {
		return os.WriteFile(c.out, []byte(md), 0o644)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s soak: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// result is what one soak measured. It is also saved as JSON in the work
// directory, so -reanalyze can pick it up.
type result struct {
	Variant     string             `json:"variant"`
	RunID       string             `json:"run_id"`
	Status      string             `json:"status"`
	Started     time.Time          `json:"started"`
	Seconds     float64            `json:"seconds"`
	Samples     []rssSample        `json:"rss_samples"`
	Windows     int                `json:"windows"`
	Gaps        int                `json:"gaps"`
	Expected    int                `json:"expected_windows"`
	StoreBytes  int64              `json:"store_bytes"`
	Findings    []analysis.Finding `json:"findings"`
	Prefixes    []prefixResult     `json:"prefixes"`
	FirstLeakAt int                `json:"first_leak_windows"` // windows analysed when the leak verdict first held; 0 never
	LeakHeld    bool               `json:"leak_held_after"`    // ... and it held for every longer prefix tried
	Requests    int64              `json:"requests"`
	RPS         float64            `json:"rps"`
	Err         string             `json:"error,omitempty"`
}

type rssSample struct {
	AtS      float64 `json:"at_s"` // since longhaul run started
	RSSBytes int64   `json:"rss_bytes"`
	HWMBytes int64   `json:"hwm_bytes"`
}

type prefixResult struct {
	Until    string   `json:"until"`
	Windows  int      `json:"windows"`
	Verdicts []string `json:"verdicts"`
}

func soak(c config, v variant) (*result, error) {
	dir := filepath.Join(c.work, v.name)
	r := &result{Variant: v.name, Expected: int(c.duration / c.window)}
	if c.reanalyze {
		b, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err != nil {
			return r, err
		}
		if err := json.Unmarshal(b, r); err != nil {
			return r, err
		}
		return r, measureStore(c, dir, r)
	}
	if err := os.RemoveAll(dir); err != nil {
		return r, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	scen, err := dockerScenario(c, dir)
	if err != nil {
		return r, err
	}
	args := []string{"run", scen, "--format", "json", "--data", filepath.Join(dir, "data"),
		"--duration", c.duration.String(), "--window", c.window.String()}
	for _, kv := range v.env {
		args = append(args, "--target-env", kv)
	}
	stdout, err := os.Create(filepath.Join(dir, "run.ndjson"))
	if err != nil {
		return r, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "run.stderr"))
	if err != nil {
		return r, err
	}
	defer stderr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.duration+30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.longhaul, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	logf("%s: %s %s", v.name, c.longhaul, strings.Join(args, " "))
	r.Started = time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	var runErr error
wait:
	for {
		select {
		case runErr = <-done:
			break wait
		case <-tick.C:
			if s, ok := readRSS(cmd.Process.Pid); ok {
				s.AtS = time.Since(r.Started).Seconds()
				r.Samples = append(r.Samples, s)
				saveJSON(filepath.Join(dir, "result.json"), r)
			}
		}
	}
	r.Seconds = time.Since(r.Started).Seconds()
	logf("%s: longhaul run ended after %s: %v", v.name, time.Duration(r.Seconds*float64(time.Second)).Round(time.Second), runErr)
	rep, err := lastReport(filepath.Join(dir, "run.ndjson"))
	if err != nil {
		saveJSON(filepath.Join(dir, "result.json"), r)
		return r, fmt.Errorf("%v (longhaul run: %v)", err, runErr)
	}
	r.RunID, r.Status, r.Findings = rep.RunID, rep.Status, rep.Findings
	err = measureStore(c, dir, r)
	saveJSON(filepath.Join(dir, "result.json"), r)
	return r, err
}

// dockerScenario writes the demo scenario with the docker provider and the
// memory limit: the local-provider keys (build, command) go, since the
// written file lives outside the repository.
func dockerScenario(c config, dir string) (string, error) {
	b, err := os.ReadFile(c.scenario)
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", c.scenario, err)
	}
	root := doc.Content[0]
	env := mapping(root, "environment")
	set(env, "provider", "docker")
	target := mapping(env, "target")
	del(target, "build")
	del(target, "command")
	set(mapping(target, "resources"), "memory", c.memory)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "demo-docker.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

func mapping(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	return v
}

func set(m *yaml.Node, key, value string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Value: value}
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

func del(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// readRSS reads VmRSS and VmHWM of pid.
func readRSS(pid int) (rssSample, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return rssSample{}, false
	}
	var s rssSample
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.RSSBytes = kb << 10
		case "VmHWM:":
			s.HWMBytes = kb << 10
		}
	}
	return s, s.RSSBytes > 0
}

type report struct {
	Type     string             `json:"type"`
	RunID    string             `json:"run_id"`
	Status   string             `json:"status"`
	Windows  int                `json:"windows"`
	Findings []analysis.Finding `json:"findings"`
}

func lastReport(path string) (report, error) {
	f, err := os.Open(path)
	if err != nil {
		return report{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var rep report
	found := false
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.Contains(line, []byte(`"type":"report"`)) && json.Unmarshal(line, &rep) == nil {
			found = true
		}
	}
	if !found {
		return rep, errors.New("no report line in the output of longhaul run")
	}
	return rep, sc.Err()
}

// measureStore reads the stored run back: windows, gaps, store size, and
// the analysis of its first minutes.
func measureStore(c config, dir string, r *result) error {
	data := filepath.Join(dir, "data")
	out, err := longhaul(c, "report", r.RunID, "--data", data, "--format", "json")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	r.Windows, r.Gaps = 0, 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			Type     string  `json:"type"`
			Index    *int    `json:"index"`
			Gap      bool    `json:"gap"`
			Requests int64   `json:"requests"`
			RPS      float64 `json:"rps"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch {
		case line.Type == "summary":
			r.Requests, r.RPS = line.Requests, line.RPS
		case line.Index != nil:
			r.Windows++
			if line.Gap {
				r.Gaps++
			}
		}
	}
	r.StoreBytes = fileSize(filepath.Join(data, "longhaul.db")) + fileSize(filepath.Join(data, "longhaul.db-wal"))

	r.Prefixes = nil
	for _, until := range []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour} {
		if until > c.duration {
			continue
		}
		an, err := analyze(c, data, r.RunID, "--until", until.String())
		if err != nil {
			return err
		}
		r.Prefixes = append(r.Prefixes, prefixResult{Until: until.String(), Windows: an.Windows, Verdicts: verdicts(an.Findings)})
	}
	// The first prefix (in steps of a minute of windows) whose analysis
	// holds a leak verdict, and whether every longer prefix tried does too.
	r.FirstLeakAt, r.LeakHeld = 0, false
	step := max(int(time.Minute/c.window), 1)
	for n := step; n <= r.Windows; n += step {
		an, err := analyze(c, data, r.RunID, "--windows", strconv.Itoa(n))
		if err != nil {
			return err
		}
		leak := hasLeak(an.Findings)
		switch {
		case leak && r.FirstLeakAt == 0:
			r.FirstLeakAt, r.LeakHeld = n, true
		case !leak && r.FirstLeakAt > 0:
			r.LeakHeld = false
		}
		if r.Variant == "clean" && n >= 2*step*15 {
			break // a clean run has no verdict to wait for: 30 minutes of prefixes are enough
		}
		if r.FirstLeakAt > 0 && n >= r.FirstLeakAt+step*30 {
			break // held for 30 more minutes of windows
		}
	}
	return nil
}

type analysisObject struct {
	Windows  int                `json:"windows"`
	Findings []analysis.Finding `json:"findings"`
}

func analyze(c config, data, id string, args ...string) (analysisObject, error) {
	out, err := longhaul(c, append([]string{"analyze", id, "--data", data, "--format", "json"}, args...)...)
	if err != nil {
		return analysisObject{}, fmt.Errorf("analyze %s: %w", strings.Join(args, " "), err)
	}
	var an analysisObject
	if err := json.Unmarshal([]byte(out), &an); err != nil {
		return an, fmt.Errorf("analyze %s: %w", strings.Join(args, " "), err)
	}
	return an, nil
}

func longhaul(c config, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(c.longhaul, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("longhaul %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func verdicts(fs []analysis.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Severity.Rank() >= analysis.Warning.Rank() {
			out = append(out, string(f.Severity)+" "+f.Kind)
		}
	}
	return out
}

func hasLeak(fs []analysis.Finding) bool {
	for _, f := range fs {
		if f.Kind == analysis.KindLeak && f.Severity.Rank() >= analysis.Warning.Rank() {
			return true
		}
	}
	return false
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

func saveJSON(path string, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	_ = os.WriteFile(path, b, 0o644)
}

// sampleAt is the RSS sample closest to t seconds after the start.
func sampleAt(ss []rssSample, t float64) (rssSample, bool) {
	if len(ss) == 0 {
		return rssSample{}, false
	}
	best := ss[0]
	for _, s := range ss {
		if abs(s.AtS-t) < abs(best.AtS-t) {
			best = s
		}
	}
	return best, true
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func markdown(c config, rs []*result) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# Many hours, measured — results\n\n")
	fmt.Fprintf(&b, "Written by `bench/soak/run.sh` (`go run ./bench/soak`); see README.md.\n\n")
	fmt.Fprintf(&b, "- machine: %s, %d cores, shared with other work; Go %s\n", host, runtime.NumCPU(), runtime.Version())
	mode := "at the same time"
	if !c.parallel {
		mode = "one after the other"
	}
	fmt.Fprintf(&b, "- each soak: `longhaul run` of %s on the docker provider (target memory limit %s), %s in %s windows, 16 VUs at full speed; the variants ran %s\n\n",
		c.scenario, c.memory, c.duration, c.window, mode)
	b.WriteString("| variant | status | requests (req/s) | longhaul RSS at 10 min | at the end | peak | store bytes/window | windows (lost) | findings (warning or worse) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		if r == nil {
			continue
		}
		at10, _ := sampleAt(r.Samples, 600)
		var end rssSample
		if n := len(r.Samples); n > 0 {
			end = r.Samples[n-1]
		}
		perWindow := "-"
		if r.Windows > 0 {
			perWindow = strconv.FormatInt(r.StoreBytes/int64(r.Windows), 10)
		}
		lost := r.Gaps + max(r.Expected-r.Windows, 0)
		v := verdicts(r.Findings)
		vs := "none"
		if len(v) > 0 {
			vs = strings.Join(v, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s | %d (%.0f) | %s | %s (%.0f min) | %s | %s | %d of %d (%d) | %s |\n",
			r.Variant, r.Status, r.Requests, r.RPS, mb(at10.RSSBytes), mb(end.RSSBytes), end.AtS/60, mb(end.HWMBytes),
			perWindow, r.Windows, r.Expected, lost, vs)
	}
	b.WriteString("\n## The first minutes: `longhaul analyze --until`\n\n| variant | analysed | windows | verdicts |\n|---|---|---|---|\n")
	for _, r := range rs {
		if r == nil {
			continue
		}
		for _, p := range r.Prefixes {
			vs := "none"
			if len(p.Verdicts) > 0 {
				vs = strings.Join(p.Verdicts, ", ")
			}
			fmt.Fprintf(&b, "| %s | first %s | %d | %s |\n", r.Variant, p.Until, p.Windows, vs)
		}
	}
	b.WriteString("\n")
	for _, r := range rs {
		if r == nil {
			continue
		}
		switch {
		case r.FirstLeakAt > 0:
			held := "and held for every longer prefix tried"
			if !r.LeakHeld {
				held = "but not for every longer prefix"
			}
			fmt.Fprintf(&b, "- %s: the leak verdict first held with the first %d windows (%s of the run) %s.\n",
				r.Variant, r.FirstLeakAt, time.Duration(r.FirstLeakAt)*c.window, held)
		default:
			fmt.Fprintf(&b, "- %s: no leak verdict on any prefix tried.\n", r.Variant)
		}
		if r.Err != "" {
			fmt.Fprintf(&b, "- %s: error: %s\n", r.Variant, r.Err)
		}
	}
	for _, r := range rs {
		if r == nil {
			continue
		}
		for _, f := range r.Findings {
			if f.Severity.Rank() >= analysis.Warning.Rank() {
				fmt.Fprintf(&b, "\n%s, %s %s: %s\n", r.Variant, f.Severity, f.Kind, f.Summary)
			}
		}
	}
	return b.String()
}
