// Command runner drives a loopback target with the driver package and
// reports its own cost: the smallest wrapper around driver.Run, used by
// bench/driver/compare and for memory soaks.
//
//	go run ./bench/driver/runner -target http://127.0.0.1:8099/ -vus 16 -duration 10s
//	go run ./bench/driver/runner -target http://127.0.0.1:8099/ -duration 30m -window 10s -windows
//
// Without -scenario it sends GET / (weight 1). The last line of its output is
// one JSON object: requests, seconds, rps, the process's user and system CPU
// seconds and cpu_us_per_request, and rss_bytes at the end. With -windows it
// also prints one JSON line per window with the RSS and Go heap at its close,
// which is how a flat-memory soak is checked.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/bench/internal/loopbench"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

const defaultScenario = `
name: bench
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /}
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:8099/", "loopback base URL")
	scenarioFile := fs.String("scenario", "", "scenario file (default: GET /)")
	vus := fs.Int("vus", 16, "closed-model virtual users (connections)")
	duration := fs.Duration("duration", 10*time.Second, "how long to drive")
	windowLen := fs.Duration("window", time.Second, "window length")
	timeout := fs.Duration("timeout", 10*time.Second, "request timeout")
	perWindow := fs.Bool("windows", false, "print one JSON line per window (RSS, heap)")
	protocol := fs.String("protocol", "", "h1, h2 or h2c (default: the scenario's environment.protocol)")
	insecure := fs.Bool("insecure", false, "https: accept the target's certificate unverified (a benchmark's self-signed one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	var s *scenarios.Scenario
	if *scenarioFile != "" {
		s, err = scenarios.LoadFile(*scenarioFile)
	} else {
		s, err = scenarios.Parse([]byte(defaultScenario), "")
	}
	if err != nil {
		return err
	}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{})
	if err != nil {
		return err
	}
	load := s.Load
	load.VUs, load.Rate, load.MaxVUs, load.Stages = *vus, 0, 0, nil
	load.Duration = scenarios.Duration(*duration)
	load.Window = scenarios.Duration(*windowLen)
	load.Timeout = scenarios.Duration(*timeout)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := driver.CheckTarget(ctx, u); err != nil {
		return err
	}
	if *protocol == "" {
		*protocol = s.Environment.Protocol
	}
	var tlsOpts *scenarios.TLS
	if *insecure {
		tlsOpts = &scenarios.TLS{InsecureSkipVerify: true}
	}
	// Keep running totals, not the windows: a long soak must not grow here.
	var requests, errs int64
	var wsSum loopbench.RunnerSummary
	pings := window.NewHistogram()
	var first time.Time
	latency := window.NewHistogram()
	enc := json.NewEncoder(stdout)
	res, err := driver.Run(ctx, driver.Options{Target: u, Plan: plan, Load: load, Protocol: *protocol, TLS: tlsOpts}, func(w window.Window) error {
		if first.IsZero() {
			first = w.Start
		}
		if t := w.TLS; t != nil {
			wsSum.Handshakes += t.Handshakes
		}
		if ws := w.WebSocket; ws != nil {
			wsSum.MessagesIn += ws.MessagesIn
			wsSum.MessagesOut += ws.MessagesOut
			wsSum.Pings += ws.Pings
			wsSum.PongTimeouts += ws.PongTimeouts
			wsSum.SessionsOpenMax = max(wsSum.SessionsOpenMax, ws.SessionsOpen)
			if h, err := window.DecodeHistogram(ws.PingHistogram); err == nil {
				pings.Merge(h)
			}
		}
		requests += w.Requests
		errs += w.Errors.Total()
		h, err := window.DecodeHistogram(w.Histogram)
		if err != nil {
			return err
		}
		latency.Merge(h)
		if *perWindow {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return enc.Encode(loopbench.RunnerWindow{
				Index: w.Index, ElapsedS: w.End.Sub(first).Seconds(), Requests: w.Requests, RPS: w.RPS,
				Errors: w.Errors.Total(), RSSBytes: rssBytes(), HeapBytes: ms.HeapInuse,
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return fmt.Errorf("getrusage: %w", err)
	}
	lat := window.LatencyOf(latency)
	sum := wsSum
	sum.PingP99Ms = window.LatencyOf(pings).P99
	sum = loopbench.RunnerSummary{
		Requests:    requests,
		Errors:      errs,
		Seconds:     res.End.Sub(res.Start).Seconds(),
		UserSeconds: time.Duration(ru.Utime.Nano()).Seconds(),
		SysSeconds:  time.Duration(ru.Stime.Nano()).Seconds(),
		RSSBytes:    rssBytes(),
		P50Ms:       lat.P50,
		P99Ms:       lat.P99,

		MessagesIn: sum.MessagesIn, MessagesOut: sum.MessagesOut, Pings: sum.Pings, PongTimeouts: sum.PongTimeouts,
		SessionsOpenMax: sum.SessionsOpenMax, PingP99Ms: sum.PingP99Ms, Handshakes: sum.Handshakes,
	}
	if sum.Seconds > 0 {
		sum.RPS = float64(sum.Requests) / sum.Seconds
	}
	if sum.Requests > 0 {
		sum.CPUMicrosPerReq = (sum.UserSeconds + sum.SysSeconds) * 1e6 / float64(sum.Requests)
	}
	if sum.Requests == 0 {
		return errors.New("no requests were sent")
	}
	return enc.Encode(sum)
}

// rssBytes reads the process's resident set size from /proc/self/statm.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(os.Getpagesize())
}
