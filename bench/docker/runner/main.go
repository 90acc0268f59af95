// Command runner is the docker-route bench of issue 9 §4: the demo soak
// (scenarios/demo.yaml: the demo target over PostgreSQL, 16 closed-loop
// VUs) through `longhaul run --format json`, on
//
//	local             the local provider: processes and a private initdb cluster
//	docker-netns      docker, the driver and probes inside the target
//	                  container's network namespace (LONGHAUL_DOCKER_ROUTE=netns)
//	docker-published  docker, through the published 127.0.0.1 port and
//	                  docker-proxy, the route before issue 9
//	                  (LONGHAUL_DOCKER_ROUTE=published-port)
//	docker-nolimit    docker-netns with the target's CPU limit raised to
//	                  every core of the host (target.resources.cpus), as
//	                  the local provider's process has: separates the
//	                  container limit (1 CPU by default) from the rest
//
// in interleaved rounds (the order rotates every round, so each variant
// runs first, second and third equally often). Over the windows after the
// warm-up it measures req/s, the target's CPU µs per request (longhaul's
// own process probe: the container's cgroup or the process tree), and from
// /proc and the containers' cgroups the CPU of the database, of the
// longhaul process (driver + embedded Temporal + worker + store), and of
// everything else docker runs for the soak: docker-proxy and
// containerd-shim of the run's containers, dockerd and containerd; and
// what the rest of the machine did meanwhile (other engineers' builds).
//
//	bench/docker/run.sh                 # builds longhaul, takes the measurement lock, runs this
//	go run ./bench/docker/runner -longhaul /tmp/longhaul -rounds 3
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// variant is one way to run the soak.
type variant struct {
	name, provider, route string
	// allCPUs: the target container may use every core (target.resources.cpus).
	allCPUs bool
}

var allVariants = []variant{
	{"local", "local", "", false},
	{"docker-netns", "docker", "netns", false},
	{"docker-published", "docker", "published-port", false},
	{"docker-nolimit", "docker", "netns", true},
}

// withAllCPUs writes a copy of the scenario beside it (so its relative
// paths still hold) whose target may use every core, and returns its path.
func withAllCPUs(scenario string) (string, error) {
	b, err := os.ReadFile(scenario)
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(b), "\n")
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "    resources:") {
			return "", fmt.Errorf("%s already sets target.resources", scenario)
		}
		if at < 0 && strings.HasPrefix(l, "    image: ") {
			at = i
		}
	}
	if at < 0 {
		return "", fmt.Errorf("%s: no target image line to put resources after", scenario)
	}
	res := fmt.Sprintf("    resources: {cpus: %d}", runtime.NumCPU())
	lines = append(lines[:at+1], append([]string{res}, lines[at+1:]...)...)
	f, err := os.CreateTemp(filepath.Dir(scenario), ".bench-allcpus-*.yaml")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.WriteString(strings.Join(lines, "\n"))
	return f.Name(), err
}

// windowLine is what the bench reads of a window line.
type windowLine struct {
	Index    *int      `json:"index"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Requests int64     `json:"requests"`
	Errors   map[string]int64
	Gap      bool `json:"gap"`
	Probes   *struct {
		CPUSeconds *float64 `json:"cpu_seconds"`
	} `json:"probes"`
}

// reportLine is the last line of `longhaul run --format json`.
type reportLine struct {
	Type    string `json:"type"`
	RunID   string `json:"run_id"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Windows int    `json:"windows"`
}

// result is one soak's measurement over its measured span.
type result struct {
	Round    int
	Variant  string
	RunID    string
	Status   string
	Windows  int     // measured
	Span     float64 // seconds
	Requests int64
	Errors   int64
	RPS      float64
	// Per request, µs of CPU.
	TargetUs, DatabaseUs, DriverUs float64
	// Cores (CPU seconds per second of the span).
	Target, Database, Driver                     float64
	ProxyOurs, ShimOurs, Dockerd, Containerd     float64
	ProxyAll, ShimAll, MachineBusy, MachineCores float64
	Other                                        float64 // machine busy minus everything above (ours)
	Load1                                        float64
	Err                                          string
}

type config struct {
	longhaul, scenario, out string
	rounds                  int
	duration, window        time.Duration
	warmup                  time.Duration
	variants                []variant
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "docker bench:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("docker-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var names string
	fs.StringVar(&c.longhaul, "longhaul", "", "the longhaul binary (required)")
	fs.StringVar(&c.scenario, "scenario", "scenarios/demo.yaml", "the soak")
	fs.StringVar(&c.out, "out", "bench/docker/RESULTS.md", "results file (\"\" for none)")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds (each runs every variant once)")
	fs.DurationVar(&c.duration, "duration", 80*time.Second, "length of each soak")
	fs.DurationVar(&c.window, "window", 5*time.Second, "window length")
	fs.DurationVar(&c.warmup, "warmup", 20*time.Second, "windows starting within this of the first are not measured")
	fs.StringVar(&names, "variants", "local,docker-netns,docker-published", "variants, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.longhaul == "" {
		return errors.New("-longhaul is required")
	}
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(allVariants, func(v variant) bool { return v.name == strings.TrimSpace(n) })
		if i < 0 {
			return fmt.Errorf("-variants: unknown variant %q", n)
		}
		c.variants = append(c.variants, allVariants[i])
	}
	if c.rounds < 1 || c.duration <= c.warmup+2*c.window {
		return errors.New("need ≥ 1 round and a duration longer than the warm-up plus two windows")
	}

	started := time.Now()
	startLoad := load1()
	var results []result
	for round := 1; round <= c.rounds; round++ {
		order := slices.Clone(c.variants)
		k := (round - 1) % len(order)
		order = append(order[k:], order[:k]...)
		for _, v := range order {
			fmt.Fprintf(stderr, "%s round %d/%d: %s ...\n", time.Now().Format("15:04:05"), round, c.rounds, v.name)
			r := soak(c, v, round, stderr)
			results = append(results, r)
			fmt.Fprintf(stderr, "%s round %d: %s: %s\n", time.Now().Format("15:04:05"), round, v.name, oneLine(r))
		}
	}
	md := markdown(c, results, started, startLoad)
	fmt.Fprint(stdout, md)
	if c.out != "" {
		return os.WriteFile(c.out, []byte(md), 0o644)
	}
	return nil
}

func oneLine(r result) string {
	if r.Err != "" {
		return "FAILED: " + r.Err
	}
	return fmt.Sprintf("%.0f req/s, target %.0f µs/req, proxy %.3f cores, shim %.3f, dockerd %.3f, containerd %.3f, other %.2f, load %.1f",
		r.RPS, r.TargetUs, r.ProxyOurs, r.ShimOurs, r.Dockerd, r.Containerd, r.Other, r.Load1)
}

// soak runs one variant once and measures it.
func soak(c config, v variant, round int, stderr io.Writer) result {
	res := result{Round: round, Variant: v.name}
	data, err := os.MkdirTemp("", "longhaul-docker-bench-")
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer os.RemoveAll(data)
	mark := strconv.FormatUint(rand.Uint64(), 36)
	scenario := c.scenario
	if v.allCPUs {
		if scenario, err = withAllCPUs(c.scenario); err != nil {
			res.Err = err.Error()
			return res
		}
		defer os.Remove(scenario)
	}
	cmd := exec.Command(c.longhaul, "run", scenario, "--provider", v.provider, "--format", "json",
		"--duration", c.duration.String(), "--window", c.window.String(), "--data", data,
		"--target-env", "BENCH_MARK="+mark)
	cmd.Env = append(os.Environ(), "LONGHAUL_DOCKER_ROUTE="+v.route)
	out, err := cmd.StdoutPipe()
	if err != nil {
		res.Err = err.Error()
		return res
	}
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		res.Err = err.Error()
		return res
	}
	tr := startTracker(v.provider, mark, cmd.Process.Pid, data, 500*time.Millisecond)
	var ws []windowLine
	var rep reportLine
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var w windowLine
		if json.Unmarshal(line, &w) == nil && w.Index != nil {
			ws = append(ws, w)
			continue
		}
		_ = json.Unmarshal(line, &rep)
	}
	werr := cmd.Wait()
	samples := tr.finish()
	res.RunID, res.Status, res.Load1 = rep.RunID, rep.Status, load1()
	if werr != nil || rep.Status != "completed" {
		res.Err = fmt.Sprintf("longhaul run: %v, status %q %s; stderr: %s", werr, rep.Status, rep.Reason, lastLines(errBuf.String(), 5))
		return res
	}
	measure(&res, c, ws, samples)
	return res
}

// measure fills res from the windows after the warm-up (the last, partial,
// window excluded) and the counters interpolated at their bounds.
func measure(res *result, c config, ws []windowLine, samples []counters) {
	if len(ws) == 0 {
		res.Err = "no windows"
		return
	}
	first := ws[0].Start
	var m []windowLine
	for _, w := range ws {
		if w.Gap || w.Start.Sub(first) < c.warmup || w.End.Sub(w.Start) < c.window*9/10 {
			continue
		}
		m = append(m, w)
	}
	if len(m) < 2 {
		res.Err = fmt.Sprintf("only %d windows after the warm-up", len(m))
		return
	}
	t0, t1 := m[0].Start, m[len(m)-1].End
	a, ok0 := at(samples, t0)
	b, ok1 := at(samples, t1)
	if !ok0 || !ok1 {
		res.Err = "the CPU samples do not cover the measured span"
		return
	}
	span := t1.Sub(t0).Seconds()
	var cpu float64
	var probed int64
	for _, w := range m {
		res.Requests += w.Requests
		for _, n := range w.Errors {
			res.Errors += n
		}
		if w.Probes != nil && w.Probes.CPUSeconds != nil {
			cpu += *w.Probes.CPUSeconds
			probed += w.Requests
		}
	}
	res.Windows, res.Span = len(m), span
	res.RPS = float64(res.Requests) / span
	if probed > 0 {
		res.TargetUs = cpu * 1e6 / float64(probed)
	}
	d := func(f func(counters) float64) float64 { return (f(b) - f(a)) / span }
	res.Target = cpu / span
	res.Database = d(func(c counters) float64 { return c.database })
	res.Driver = d(func(c counters) float64 { return c.driver })
	res.ProxyOurs = d(func(c counters) float64 { return c.proxyOurs })
	res.ShimOurs = d(func(c counters) float64 { return c.shimOurs })
	res.Dockerd = d(func(c counters) float64 { return c.dockerd })
	res.Containerd = d(func(c counters) float64 { return c.containerd })
	res.ProxyAll = d(func(c counters) float64 { return c.proxyAll })
	res.ShimAll = d(func(c counters) float64 { return c.shimAll })
	res.MachineBusy = d(func(c counters) float64 { return c.machineBusy })
	res.MachineCores = d(func(c counters) float64 { return c.machineTotal })
	if res.Requests > 0 {
		perReq := span * 1e6 / float64(res.Requests)
		res.DatabaseUs = res.Database * perReq
		res.DriverUs = res.Driver * perReq
	}
	res.Other = res.MachineBusy - res.Target - res.Database - res.Driver - res.ProxyOurs - res.ShimOurs - res.Dockerd - res.Containerd
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minMax(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}

// markdown renders the results: every soak, the medians per variant, and
// the per-round ratios against local.
func markdown(c config, rs []result, started time.Time, startLoad float64) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# Docker route bench (issue 9 §4)\n\n")
	fmt.Fprintf(&b, "`bench/docker/run.sh` (runner: `bench/docker/runner`), %s on %s, %d CPUs, Go %s.\n",
		started.UTC().Format("2006-01-02 15:04 MST"), host, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(&b, "Scenario %s, %d rounds × %d variants, interleaved (the order rotates each round); each soak %s in %s windows,\n",
		filepath.Base(c.scenario), c.rounds, len(c.variants), c.duration, c.window)
	fmt.Fprintf(&b, "measured over the full windows after the first %s. Load average %.1f at the start, %.1f at the end.\n\n", c.warmup, startLoad, load1())
	b.WriteString("Columns: req/s; CPU µs per request of the target (longhaul's process probe), the database and the longhaul\n")
	b.WriteString("process (driver + embedded Temporal + worker); then cores (CPU-seconds per second) of the docker plumbing of\n")
	b.WriteString("this run — docker-proxy and containerd-shim of its containers — and of dockerd and containerd (shared with\n")
	b.WriteString("whatever else uses docker on the machine); \"other\" is the machine's remaining busy CPU (other engineers' work).\n\n")
	b.WriteString("| round | variant | req/s | errors | target µs/req | db µs/req | driver µs/req | docker-proxy | shim | dockerd | containerd | other | load |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		if r.Err != "" {
			fmt.Fprintf(&b, "| %d | %s | failed: %s |\n", r.Round, r.Variant, strings.ReplaceAll(r.Err, "|", "/"))
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %.0f | %d | %.0f | %.0f | %.0f | %.3f | %.3f | %.3f | %.3f | %.2f | %.1f |\n",
			r.Round, r.Variant, r.RPS, r.Errors, r.TargetUs, r.DatabaseUs, r.DriverUs,
			r.ProxyOurs, r.ShimOurs, r.Dockerd, r.Containerd, r.Other, r.Load1)
	}

	b.WriteString("\n## Medians per variant (range)\n\n")
	b.WriteString("| variant | req/s | target µs/req | docker-proxy cores | shim cores | dockerd cores | containerd cores |\n|---|---|---|---|---|---|---|\n")
	for _, v := range c.variants {
		var rps, tus, px, sh, dd, cd []float64
		for _, r := range rs {
			if r.Variant != v.name || r.Err != "" {
				continue
			}
			rps, tus = append(rps, r.RPS), append(tus, r.TargetUs)
			px, sh, dd, cd = append(px, r.ProxyOurs), append(sh, r.ShimOurs), append(dd, r.Dockerd), append(cd, r.Containerd)
		}
		cell := func(xs []float64, f string) string {
			lo, hi := minMax(xs)
			return fmt.Sprintf(f+" ("+f+"–"+f+")", median(xs), lo, hi)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", v.name, cell(rps, "%.0f"), cell(tus, "%.0f"),
			cell(px, "%.3f"), cell(sh, "%.3f"), cell(dd, "%.3f"), cell(cd, "%.3f"))
	}

	b.WriteString("\n## Per round, against local (the same round)\n\n")
	b.WriteString("| round | variant | req/s ÷ local | target µs/req ÷ local |\n|---|---|---|---|\n")
	for round := 1; round <= c.rounds; round++ {
		var local *result
		for i := range rs {
			if rs[i].Round == round && rs[i].Variant == "local" && rs[i].Err == "" {
				local = &rs[i]
			}
		}
		if local == nil {
			continue
		}
		for _, r := range rs {
			if r.Round != round || r.Variant == "local" || r.Err != "" {
				continue
			}
			fmt.Fprintf(&b, "| %d | %s | %.2f | %.2f |\n", round, r.Variant, r.RPS/local.RPS, r.TargetUs/local.TargetUs)
		}
	}
	return b.String()
}
