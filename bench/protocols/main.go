// Command protocols measures what the driver's protocols cost, side by side
// in one run on one machine (absolute numbers drift with load; the ratios
// within a round do not):
//
//   - plain HTTP/1.1: longhaul's CPU per request against wrk's (the bar:
//     ≤ 1.1×, as bench/driver measures it);
//   - HTTPS (HTTP/1.1 over TLS, kept alive): longhaul against wrk with TLS
//     (the bar: ≤ 1.5×);
//   - HTTP/2 over TLS (longhaul only, for reference);
//   - WebSocket: CPU per message round trip (20 per session) against plain
//     HTTP's CPU per request;
//   - held sessions: -sessions sessions pinged every second for -hold, and
//     the driver's CPU in cores (the bar: ≤ 0.2 of a core for 500).
//
// The target (bench/protocols/target) is pinned to -target-cpu, the
// generators to -gen-cpu. Run from the repository root:
//
//	go run ./bench/protocols -rounds 3 -duration 10s -hold 150s > bench/protocols/RESULTS.md
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/bench/internal/loopbench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "protocols:", err)
		os.Exit(1)
	}
}

type config struct {
	rounds            int
	duration, hold    time.Duration
	conns, sessions   int
	genCPU, targetCPU string
}

// result is one measured run of one tool.
type result struct {
	tool     string
	round    int
	requests int64 // requests, or message round trips for websocket
	seconds  float64
	cpu      float64 // CPU seconds of the generator process
	extra    string
}

func (r result) cpuMicrosPer() float64 { return r.cpu * 1e6 / float64(r.requests) }

const wsScenario = `
name: ws-messages
ops:
  - name: chat
    websocket:
      path: /ws
      steps:
%s        - close: {}
`

const holdScenario = `
name: ws-hold
ops:
  - name: hold
    websocket: {path: /ws, hold: 1h, ping: 1s}
`

func run(args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("protocols", flag.ContinueOnError)
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds of the side-by-side runs")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each run")
	fs.DurationVar(&cfg.hold, "hold", 150*time.Second, "how long the held sessions run")
	fs.IntVar(&cfg.conns, "conns", 16, "connections (VUs) per generator")
	fs.IntVar(&cfg.sessions, "sessions", 500, "held WebSocket sessions")
	fs.StringVar(&cfg.genCPU, "gen-cpu", "0", "CPU list of the generators (taskset -c)")
	fs.StringVar(&cfg.targetCPU, "target-cpu", "1", "CPU list of the target")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	tmp, err := loopbench.Prepare(logf, "./bench/protocols/target", "./bench/driver/runner")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var steps strings.Builder
	for range 20 {
		steps.WriteString("        - send: {text: hello}\n        - expect: {regexp: \"^hello$\"}\n")
	}
	wsFile, holdFile := filepath.Join(tmp, "ws.yaml"), filepath.Join(tmp, "hold.yaml")
	if err := os.WriteFile(wsFile, fmt.Appendf(nil, wsScenario, steps.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(holdFile, []byte(holdScenario), 0o644); err != nil {
		return err
	}
	plain, stopPlain, err := loopbench.StartTarget(filepath.Join(tmp, "target"), cfg.targetCPU)
	if err != nil {
		return err
	}
	defer stopPlain()
	secure, stopSecure, err := loopbench.StartTarget(filepath.Join(tmp, "target"), cfg.targetCPU, "-tls")
	if err != nil {
		return err
	}
	defer stopSecure()

	runner := filepath.Join(tmp, "runner")
	tools := map[string]func(d time.Duration) (result, error){
		"wrk http":      func(d time.Duration) (result, error) { return runWrk(cfg, "http://"+plain+"/", d) },
		"longhaul http": func(d time.Duration) (result, error) { return runLonghaul(cfg, runner, "http://"+plain+"/", d) },
		"wrk https":     func(d time.Duration) (result, error) { return runWrk(cfg, "https://"+secure+"/", d) },
		"longhaul https": func(d time.Duration) (result, error) {
			return runLonghaul(cfg, runner, "https://"+secure+"/", d, "-insecure")
		},
		"longhaul h2": func(d time.Duration) (result, error) {
			return runLonghaul(cfg, runner, "https://"+secure+"/", d, "-insecure", "-protocol", "h2")
		},
		"longhaul websocket": func(d time.Duration) (result, error) {
			return runLonghaul(cfg, runner, "http://"+plain+"/", d, "-scenario", wsFile)
		},
	}
	loadBefore, started := loopbench.LoadAvg(), time.Now()
	logf("warming up")
	for _, t := range []string{"wrk http", "longhaul http", "wrk https", "longhaul https"} {
		if _, err := tools[t](2 * time.Second); err != nil {
			return fmt.Errorf("warm-up %s: %w", t, err)
		}
	}
	var rs []result
	for r := 1; r <= cfg.rounds; r++ {
		order := []string{"wrk http", "longhaul http", "wrk https", "longhaul https", "longhaul h2", "longhaul websocket"}
		if r%2 == 0 { // ABBA within each pair
			order = []string{"longhaul http", "wrk http", "longhaul https", "wrk https", "longhaul websocket", "longhaul h2"}
		}
		for _, t := range order {
			m, err := tools[t](cfg.duration)
			if err != nil {
				return fmt.Errorf("round %d %s: %w", r, t, err)
			}
			m.tool, m.round = t, r
			logf("round %d %-18s %9.0f /s %7.2f µs CPU each", r, t, float64(m.requests)/m.seconds, m.cpuMicrosPer())
			rs = append(rs, m)
		}
	}
	logf("holding %d sessions for %s", cfg.sessions, cfg.hold)
	hold, err := runHold(cfg, runner, "http://"+plain+"/", holdFile)
	if err != nil {
		return fmt.Errorf("held sessions: %w", err)
	}
	report(stdout, cfg, rs, hold, started, loadBefore, loopbench.LoadAvg())
	return nil
}

func runWrk(cfg config, url string, d time.Duration) (result, error) {
	r, err := loopbench.Wrk(cfg.genCPU, cfg.conns, url, d)
	return result{requests: r.Requests, seconds: r.Seconds, cpu: r.CPUSeconds}, err
}

func runRunner(cfg config, runner, url string, vus int, d time.Duration, args ...string) (loopbench.RunnerSummary, float64, error) {
	argv := append([]string{runner, "-target", url, "-vus", strconv.Itoa(vus), "-duration", d.String(), "-window", "1s", "-timeout", "5s"}, args...)
	out, cpu, err := loopbench.RunPinned(cfg.genCPU, nil, argv...)
	if err != nil {
		return loopbench.RunnerSummary{}, 0, err
	}
	s, err := loopbench.ReadRunnerSummary(out)
	return s, cpu, err
}

func runLonghaul(cfg config, runner, url string, d time.Duration, args ...string) (result, error) {
	s, cpu, err := runRunner(cfg, runner, url, cfg.conns, d, args...)
	if err != nil {
		return result{}, err
	}
	if s.Errors > s.Requests/1000 {
		return result{}, fmt.Errorf("longhaul saw %d errors in %d requests", s.Errors, s.Requests)
	}
	r := result{requests: s.Requests, seconds: s.Seconds, cpu: cpu}
	if s.MessagesOut > 0 { // websocket: per message round trip
		r.requests = s.MessagesOut
	}
	if s.Handshakes > 0 {
		r.extra = fmt.Sprintf("%d TLS handshakes", s.Handshakes)
	}
	return r, nil
}

type holdResult struct {
	loopbench.RunnerSummary
	cpu float64
}

func runHold(cfg config, runner, url, file string) (holdResult, error) {
	s, cpu, err := runRunner(cfg, runner, url, cfg.sessions, cfg.hold, "-scenario", file)
	return holdResult{s, cpu}, err
}

func report(w io.Writer, cfg config, rs []result, hold holdResult, started time.Time, loadBefore, loadAfter string) {
	fmt.Fprintf(w, "# bench/protocols — %s\n\n", started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "`go run ./bench/protocols -rounds %d -duration %s -hold %s -sessions %d -conns %d` (generators on CPU %s, target on CPU %s); load average before %s, after %s.\n\n",
		cfg.rounds, cfg.duration, cfg.hold, cfg.sessions, cfg.conns, cfg.genCPU, cfg.targetCPU, loadBefore, loadAfter)
	fmt.Fprintf(w, "| round | tool | per second | CPU µs each | note |\n|---|---|---|---|---|\n")
	by := map[string]map[int]result{}
	for _, r := range rs {
		if by[r.tool] == nil {
			by[r.tool] = map[int]result{}
		}
		by[r.tool][r.round] = r
		fmt.Fprintf(w, "| %d | %s | %.0f | %.2f | %s |\n", r.round, r.tool, float64(r.requests)/r.seconds, r.cpuMicrosPer(), r.extra)
	}
	ratios := func(a, b string) []float64 {
		var xs []float64
		for round, ra := range by[a] {
			if rb, ok := by[b][round]; ok {
				xs = append(xs, ra.cpuMicrosPer()/rb.cpuMicrosPer())
			}
		}
		sort.Float64s(xs)
		return xs
	}
	fmt.Fprintf(w, "\n| ratio of CPU per request (per round, sorted) | median | bar |\n|---|---|---|\n")
	for _, c := range []struct{ a, b, bar string }{
		{"longhaul http", "wrk http", "≤ 1.1"},
		{"longhaul https", "wrk https", "≤ 1.5"},
		{"longhaul h2", "wrk https", "—"},
		{"longhaul https", "longhaul http", "— (TLS's own cost)"},
		{"longhaul websocket", "longhaul http", "— (per message round trip)"},
	} {
		xs := ratios(c.a, c.b)
		fmt.Fprintf(w, "| %s / %s: %s | %.2f | %s |\n", c.a, c.b, fmtList(xs), analysis.Median(xs), c.bar)
	}
	cores := hold.cpu / hold.Seconds
	fmt.Fprintf(w, "\nHeld sessions: %d sessions (at most %d open at a window's close) pinged every 1 s for %.0f s: %d pings, %d pong timeouts, ping p99 %.2f ms; longhaul's CPU %.1f s = **%.3f of a core** (bar ≤ 0.2), RSS %.0f MiB.\n",
		cfg.sessions, hold.SessionsOpenMax, hold.Seconds, hold.Pings, hold.PongTimeouts, hold.PingP99Ms, hold.cpu, cores, float64(hold.RSSBytes)/(1<<20))
}

func fmtList(xs []float64) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.2f", x)
	}
	return b.String()
}
