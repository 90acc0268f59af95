// Command compare measures what the driver costs next to wrk (and vegeta, for
// reference) on the same loopback target, and prints a Markdown report.
//
//	go run ./bench/driver/compare -rounds 6 -duration 10s > bench/driver/RESULTS.md
//
// It builds bench/driver/target and bench/driver/runner into a temporary
// directory, installs vegeta there too (go install, outside the module),
// starts the target pinned to one CPU and runs the load generators pinned to
// the other, 16 connections each. Each round runs wrk and longhaul as a pair,
// in alternating order (ABBA: wrk first in even rounds), then vegeta, so that
// drift on a shared machine hits both tools of a pair alike. Per run it
// records the requests the tool reports and the CPU time (user + system)
// of its process from the kernel's accounting (wait4 rusage); the report
// gives each tool's medians and the per-pair longhaul÷wrk ratios with their
// spread.
package main

import (
	"bytes"
	"encoding/json"
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
	"github.com/longhaul-dev/longhaul/bench/internal/loopbench"
)

// vegetaModule is installed into the temporary directory, never into the repo.
const vegetaModule = "github.com/tsenart/vegeta/v12@v12.13.0"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

type config struct {
	rounds    int
	duration  time.Duration
	conns     int
	genCPU    string
	targetCPU string
	vegeta    bool
	clients   bool
	netconn   bool
}

// measurement is one run of one tool.
type measurement struct {
	Tool     string
	Round    int
	Requests int64
	Seconds  float64 // the tool's own measuring time
	CPU      float64 // user + system seconds of the tool's process
}

func (m measurement) rps() float64             { return float64(m.Requests) / m.Seconds }
func (m measurement) cpuMicrosPerReq() float64 { return m.CPU * 1e6 / float64(m.Requests) }

func run(args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.IntVar(&cfg.rounds, "rounds", 6, "rounds (each: a wrk/longhaul pair, then vegeta)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each run")
	fs.IntVar(&cfg.conns, "conns", 16, "connections (VUs) per generator")
	fs.StringVar(&cfg.genCPU, "gen-cpu", "0", "CPU list the generators are pinned to (taskset -c)")
	fs.StringVar(&cfg.targetCPU, "target-cpu", "1", "CPU list the target is pinned to")
	fs.BoolVar(&cfg.vegeta, "vegeta", true, "also run vegeta for reference")
	fs.BoolVar(&cfg.clients, "clients", false, "also run bare fasthttp and net/http client loops (bench/driver/clientcmp)")
	fs.BoolVar(&cfg.netconn, "netconn", false, "also run the driver with LONGHAUL_DRIVER_NETCONN=1 (net.Conn I/O instead of raw syscalls)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	tmp, err := loopbench.Prepare(logf, "./bench/driver/target", "./bench/driver/runner")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cfg.clients {
		logf("building clientcmp")
		if out, err := exec.Command("go", "build", "-C", "bench/driver/clientcmp", "-o", filepath.Join(tmp, "clientcmp"), ".").CombinedOutput(); err != nil {
			return fmt.Errorf("build clientcmp: %v\n%s", err, out)
		}
	}
	vegeta := ""
	if cfg.vegeta {
		logf("installing %s", vegetaModule)
		cmd := exec.Command("go", "install", vegetaModule)
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			logf("vegeta not available, skipping it: %v\n%s", err, out)
		} else {
			vegeta = filepath.Join(tmp, "vegeta")
		}
	}

	addr, stopTarget, err := loopbench.StartTarget(filepath.Join(tmp, "target"), cfg.targetCPU)
	if err != nil {
		return err
	}
	defer stopTarget()
	url := "http://" + addr + "/"
	loadBefore := loopbench.LoadAvg()
	startedAt := time.Now()

	runner := filepath.Join(tmp, "runner")
	tools := map[string]func(d time.Duration) (measurement, error){
		"wrk":      func(d time.Duration) (measurement, error) { return runWrk(cfg, url, d) },
		"longhaul": func(d time.Duration) (measurement, error) { return runLonghaul(cfg, runner, url, d, nil) },
		"vegeta":   func(d time.Duration) (measurement, error) { return runVegeta(cfg, vegeta, tmp, url, d) },
		"longhaul-netconn": func(d time.Duration) (measurement, error) {
			return runLonghaul(cfg, runner, url, d, []string{"LONGHAUL_DRIVER_NETCONN=1"})
		},
		"fasthttp": func(d time.Duration) (measurement, error) { return runClient(cfg, tmp, "fasthttp", url, d) },
		"net/http": func(d time.Duration) (measurement, error) { return runClient(cfg, tmp, "nethttp", url, d) },
	}
	// After each wrk/longhaul pair, the reference tools, in rotating order.
	var extras []string
	if vegeta != "" {
		extras = append(extras, "vegeta")
	}
	if cfg.netconn {
		extras = append(extras, "longhaul-netconn")
	}
	if cfg.clients {
		extras = append(extras, "fasthttp", "net/http")
	}
	// Warm up the target and the page cache; not recorded.
	logf("warming up")
	for _, t := range []string{"wrk", "longhaul"} {
		if _, err := tools[t](2 * time.Second); err != nil {
			return fmt.Errorf("warm-up %s: %w", t, err)
		}
	}
	var ms []measurement
	for r := 1; r <= cfg.rounds; r++ {
		order := []string{"wrk", "longhaul"}
		if r%2 == 0 {
			order = []string{"longhaul", "wrk"}
		}
		for i := range extras {
			order = append(order, extras[(i+r)%len(extras)])
		}
		for _, t := range order {
			m, err := tools[t](cfg.duration)
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r, t, err)
			}
			m.Tool, m.Round = t, r
			logf("round %d %-8s %8.0f req/s %6.2f µs CPU/req", r, t, m.rps(), m.cpuMicrosPerReq())
			ms = append(ms, m)
		}
	}
	report(stdout, cfg, ms, startedAt, loadBefore, loopbench.LoadAvg(), append([]string{"wrk", "longhaul"}, extras...))
	return nil
}

func runWrk(cfg config, url string, d time.Duration) (measurement, error) {
	r, err := loopbench.Wrk(cfg.genCPU, cfg.conns, url, d)
	return measurement{Requests: r.Requests, Seconds: r.Seconds, CPU: r.CPUSeconds}, err
}

func runLonghaul(cfg config, runner, url string, d time.Duration, env []string) (measurement, error) {
	out, cpu, err := loopbench.RunPinned(cfg.genCPU, env, runner, "-target", url, "-vus", strconv.Itoa(cfg.conns), "-duration", d.String(), "-window", "1s")
	if err != nil {
		return measurement{}, err
	}
	s, err := loopbench.ReadRunnerSummary(out)
	if err != nil {
		return measurement{}, err
	}
	if s.Errors > 0 {
		return measurement{}, fmt.Errorf("longhaul saw %d errors", s.Errors)
	}
	return measurement{Requests: s.Requests, Seconds: s.Seconds, CPU: cpu}, nil
}

func runVegeta(cfg config, vegeta, tmp, url string, d time.Duration) (measurement, error) {
	results := filepath.Join(tmp, "vegeta.bin")
	targets := filepath.Join(tmp, "targets.txt")
	if err := os.WriteFile(targets, []byte("GET "+url+"\n"), 0o644); err != nil {
		return measurement{}, err
	}
	c := strconv.Itoa(cfg.conns)
	_, cpu, err := loopbench.RunPinned(cfg.genCPU, nil, vegeta, "attack", "-targets", targets, "-rate", "0", "-workers", c, "-max-workers", c,
		"-max-connections", c, "-duration", d.String(), "-output", results)
	if err != nil {
		return measurement{}, err
	}
	out, err := exec.Command(vegeta, "report", "-type", "json", results).Output()
	if err != nil {
		return measurement{}, fmt.Errorf("vegeta report: %w", err)
	}
	var rep struct {
		Requests    int64   `json:"requests"`
		Duration    int64   `json:"duration"`
		Wait        int64   `json:"wait"`
		Success     float64 `json:"success"`
		StatusCodes map[string]int64
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return measurement{}, fmt.Errorf("cannot read vegeta's report: %v", err)
	}
	if rep.Success < 1 {
		return measurement{}, fmt.Errorf("vegeta success ratio %.4f", rep.Success)
	}
	return measurement{Requests: rep.Requests, Seconds: float64(rep.Duration+rep.Wait) / 1e9, CPU: cpu}, nil
}

func runClient(cfg config, tmp, client, url string, d time.Duration) (measurement, error) {
	out, cpu, err := loopbench.RunPinned(cfg.genCPU, nil, filepath.Join(tmp, "clientcmp"), "-client", client, "-target", url,
		"-c", strconv.Itoa(cfg.conns), "-duration", d.String())
	if err != nil {
		return measurement{}, err
	}
	var s struct {
		Requests int64   `json:"requests"`
		Errors   int64   `json:"errors"`
		Seconds  float64 `json:"seconds"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &s); err != nil {
		return measurement{}, fmt.Errorf("cannot read clientcmp's output: %v\n%s", err, out)
	}
	if s.Errors > 0 {
		return measurement{}, fmt.Errorf("%s saw %d errors", client, s.Errors)
	}
	return measurement{Requests: s.Requests, Seconds: s.Seconds, CPU: cpu}, nil
}

func report(w io.Writer, cfg config, ms []measurement, started time.Time, loadBefore, loadAfter string, tools []string) {
	fmt.Fprintf(w, "# Driver cost: longhaul vs wrk (and vegeta)\n\n")
	flags := ""
	if cfg.clients {
		flags += " -clients"
	}
	if cfg.netconn {
		flags += " -netconn"
	}
	fmt.Fprintf(w, "Generated by `go run ./bench/driver/compare -rounds %d -duration %s%s` on %s.\n\n",
		cfg.rounds, cfg.duration, flags, started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- Machine: %s, %d CPUs, Linux %s, %s\n", cpuModel(), runtime.NumCPU(), kernel(), runtime.Version())
	fmt.Fprintf(w, "- Target: bench/driver/target (Go net/http, 40-byte JSON body) pinned to CPU %s\n", cfg.targetCPU)
	fmt.Fprintf(w, "- Generators pinned to CPU %s, %d keep-alive connections each: `wrk -t1 -c%d`, "+
		"bench/driver/runner (driver.Run, closed model, %d VUs, 1 s windows), `vegeta attack -rate 0 -max-workers %d -max-connections %d`\n",
		cfg.genCPU, cfg.conns, cfg.conns, cfg.conns, cfg.conns, cfg.conns)
	if cfg.netconn {
		fmt.Fprintf(w, "- longhaul-netconn: the same runner with LONGHAUL_DRIVER_NETCONN=1 (the driver's client on net.Conn Read/Write instead of raw non-blocking syscalls)\n")
	}
	if cfg.clients {
		fmt.Fprintf(w, "- fasthttp, net/http: bench/driver/clientcmp, a bare closed loop (%d goroutines, one connection each, every request timed) on fasthttp's HostClient or net/http's Client; no scenario, no histograms, no windows\n", cfg.conns)
	}
	fmt.Fprintf(w, "- CPU = user + system time of the generator's process (wait4 rusage) ÷ the requests it reports\n")
	fmt.Fprintf(w, "- Load average before: %s; after: %s\n\n", loadBefore, loadAfter)

	fmt.Fprintf(w, "## Runs (in the order they ran)\n\n| round | tool | requests | req/s | CPU µs/request |\n|---:|---|---:|---:|---:|\n")
	for _, m := range ms {
		fmt.Fprintf(w, "| %d | %s | %d | %.0f | %.2f |\n", m.Round, m.Tool, m.Requests, m.rps(), m.cpuMicrosPerReq())
	}

	fmt.Fprintf(w, "\n## Per tool (median over rounds)\n\n| tool | req/s | CPU µs/request |\n|---|---:|---:|\n")
	byTool := map[string]map[int]measurement{}
	for _, m := range ms {
		if byTool[m.Tool] == nil {
			byTool[m.Tool] = map[int]measurement{}
		}
		byTool[m.Tool][m.Round] = m
	}
	for _, t := range tools {
		var rps, cpu []float64
		for _, m := range byTool[t] {
			rps = append(rps, m.rps())
			cpu = append(cpu, m.cpuMicrosPerReq())
		}
		fmt.Fprintf(w, "| %s | %.0f | %.2f |\n", t, analysis.Median(rps), analysis.Median(cpu))
	}

	fmt.Fprintf(w, "\n## longhaul ÷ wrk, per round (paired)\n\n| round | CPU/request ratio | req/s ratio |\n|---:|---:|---:|\n")
	var cpuR, rpsR []float64
	for r := 1; r <= cfg.rounds; r++ {
		a, b := byTool["longhaul"][r], byTool["wrk"][r]
		c, q := a.cpuMicrosPerReq()/b.cpuMicrosPerReq(), a.rps()/b.rps()
		cpuR, rpsR = append(cpuR, c), append(rpsR, q)
		fmt.Fprintf(w, "| %d | %.3f | %.3f |\n", r, c, q)
	}
	fmt.Fprintf(w, "\n**CPU per request: longhaul ÷ wrk = %.2f (median; range %.2f–%.2f over %d pairs). Goal ≤ 1.30: %s.**\n\n",
		analysis.Median(cpuR), slices.Min(cpuR), slices.Max(cpuR), len(cpuR), verdict(analysis.Median(cpuR) <= 1.3))
	fmt.Fprintf(w, "**Requests/s: longhaul ÷ wrk = %.2f (median; range %.2f–%.2f). Goal ≥ 0.90: %s.**\n",
		analysis.Median(rpsR), slices.Min(rpsR), slices.Max(rpsR), verdict(analysis.Median(rpsR) >= 0.9))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
