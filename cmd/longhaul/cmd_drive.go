package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// driveFlags are the flags of longhaul drive.
type driveFlags struct {
	scenario    string
	target      string
	duration    time.Duration
	window      time.Duration
	vus         int
	rate        float64
	maxVUs      int
	format      string
	metricsAddr string
	storeFlags
}

func (a *app) driveCmd() *cobra.Command {
	var f driveFlags
	cmd := &cobra.Command{
		Use:   "drive --scenario FILE --target URL",
		Short: "Drive a scenario's load at a running target; print one line per window and a summary",
		Long: `Drive sends the scenario's load to a target that is already running (a
loopback URL), prints one line per window as it closes and a summary at the
end, and stores every window as a run of kind "drive".

Flags override the scenario's load section. --vus N selects the closed model
(N virtual users); --rate R selects the open model (R iterations/s, at most
--max-vus in flight). --duration 0 drives until interrupted. Ctrl-C stops
gracefully: in-flight requests finish, the last window and the summary are
still printed and stored.`,
		Example: `  longhaul drive --scenario scenarios/hello.yaml --target http://127.0.0.1:8080 --duration 1m --vus 16
  longhaul drive --scenario mix.yaml --target http://127.0.0.1:8080 --rate 500 --max-vus 200 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.drive(cmd.Context(), f, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.scenario, "scenario", "", "scenario file (YAML; see scenarios/README.md)")
	fs.StringVar(&f.target, "target", "", "base URL of the target, a loopback address (default: the scenario's environment.target.url)")
	fs.DurationVar(&f.duration, "duration", 0, "how long to drive; 0 means until interrupted (default: the scenario's)")
	fs.DurationVar(&f.window, "window", 0, "length of one result window (default: the scenario's)")
	fs.IntVar(&f.vus, "vus", 0, "closed model: number of virtual users")
	fs.Float64Var(&f.rate, "rate", 0, "open model: iterations started per second")
	fs.IntVar(&f.maxVUs, "max-vus", 0, "open model: most iterations in flight; a start beyond it is dropped")
	fs.StringVar(&f.format, "format", "text", "output: text (aligned lines) or json (NDJSON, one object per window, then a summary)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve live metrics at http://ADDR/metrics (Prometheus text format)")
	f.storeFlags.register(fs)
	return cmd
}

// drive is longhaul drive. changed reports whether a flag was given.
func (a *app) drive(ctx context.Context, f driveFlags, changed func(string) bool) error {
	format, err := report.ParseFormat(f.format)
	if err != nil {
		return badInputf("--format: %v", err)
	}
	if f.scenario == "" {
		return badInputf("--scenario FILE is required")
	}
	s, err := scenarios.LoadFile(f.scenario)
	if err != nil {
		return a.scenarioErrors(err)
	}
	source, err := os.ReadFile(f.scenario)
	if err != nil {
		return badInputf("read %s: %v", f.scenario, err)
	}
	load, err := applyLoadFlags(s.Load, f, changed)
	if err != nil {
		return badInput{err}
	}
	target := f.target
	if target == "" {
		target = s.Environment.Target.URL
	}
	if target == "" {
		return badInputf("--target URL is required (the scenario has no environment.target.url)")
	}
	u, err := url.Parse(target)
	if err != nil {
		return badInputf("--target %q: %v", target, err)
	}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{LookupEnv: a.lookupEnv})
	if err != nil {
		return a.scenarioErrors(err)
	}
	if err := driver.CheckTarget(ctx, u); err != nil {
		if errors.Is(err, driver.ErrUnreachable) {
			return badInputf("%v (is the target running?)", err)
		}
		return badInput{err}
	}

	var live *metrics.Set
	if f.metricsAddr != "" {
		live = metrics.NewSet()
		stopMetrics, err := serveMetrics(f.metricsAddr, live)
		if err != nil {
			return badInput{err}
		}
		defer stopMetrics()
	}

	st, where, err := a.openStore(ctx, f.storeFlags)
	if err != nil {
		return err
	}
	defer st.Close()

	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("new run id: %w", err)
	}
	// Writes after a Ctrl-C must still land: they use a context that the
	// interrupt does not cancel.
	storeCtx := context.WithoutCancel(ctx)
	now := time.Now()
	run := store.Run{
		ID: id.String(), Name: s.Name, Kind: "drive", Status: store.Running,
		Scenario: string(source), TargetURL: u.Redacted(), Incarnations: 1,
		CreatedAt: now, StartedAt: now,
	}
	if err := st.PutRun(storeCtx, run); err != nil {
		return fmt.Errorf("record the run in %s: %w", where, err)
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	watchDone := make(chan struct{})
	defer close(watchDone)
	interrupted := a.watchInterrupts(watchDone, stopRun, load.Timeout.D())

	var progress *report.Progress
	if format == report.Text {
		progress = report.NewProgress(a.stderr, now, load.Duration.D())
	}
	out, err := report.NewWindowWriter(format, a.stdout, report.TextOptions{Progress: progress})
	if err != nil {
		return badInput{err}
	}
	progressCtx, stopProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() { defer close(progressDone); progress.Run(progressCtx, 500*time.Millisecond) }()

	var (
		totals   report.Totals
		stored   int
		storeErr error
		printErr error
	)
	// The sink prints first, so a window is never lost from the output; a
	// store failure stops the run gracefully (the windows still in flight
	// are printed) rather than dropping the rest.
	sink := func(w window.Window) error {
		if err := out.Window(w); err != nil && printErr == nil {
			printErr = err
		}
		if err := totals.Add(w); err != nil {
			fmt.Fprintf(a.stderr, "longhaul: summary: %v\n", err)
		}
		if storeErr != nil {
			return nil
		}
		if err := st.PutWindow(storeCtx, w); err != nil {
			storeErr = err
			fmt.Fprintf(a.stderr, "longhaul: %v; stopping the run\n", err)
			stopRun()
			return nil
		}
		stored++
		return nil
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, runErr := driver.Run(runCtx, driver.Options{
		Target: u, Plan: plan, Load: load, RunID: run.ID, Metrics: live, Logger: logger,
		Protocol: s.Environment.Protocol, TLS: s.Environment.DriverTLS(""),
	}, sink)
	stopProgress()
	<-progressDone

	if err := out.Summary(totals.Summary()); err != nil && printErr == nil {
		printErr = err
	}

	status, reason := store.Completed, ""
	switch {
	case runErr != nil:
		status, reason = store.Failed, runErr.Error()
	case storeErr != nil:
		status, reason = store.Failed, "store: "+storeErr.Error()
	case interrupted() || ctx.Err() != nil:
		status, reason = store.Cancelled, "interrupted"
	case res.Stopped:
		status, reason = store.Cancelled, "stopped before its duration"
	}
	if err := st.SetStatus(storeCtx, run.ID, status, reason, time.Now()); err != nil {
		fmt.Fprintf(a.stderr, "longhaul: %v\n", err)
	}
	fmt.Fprintf(a.stderr, "run %s %s: %d windows stored in %s\n", run.ID, status, stored, where)

	switch {
	case runErr != nil && errors.Is(runErr, driver.ErrInvalid):
		return badInput{runErr}
	case runErr != nil:
		return fmt.Errorf("drive: %w", runErr)
	case printErr != nil:
		return fmt.Errorf("write output: %w", printErr)
	case status != store.Completed:
		return errSilent{exitFailed}
	}
	return nil
}

// applyLoadFlags returns l with the flags that were given applied, checking
// them against each other and the scenario.
func applyLoadFlags(l scenarios.Load, f driveFlags, changed func(string) bool) (scenarios.Load, error) {
	if changed("vus") && (changed("rate") || changed("max-vus")) {
		return l, errors.New("--vus (closed model) and --rate/--max-vus (open model) exclude each other; give one")
	}
	if changed("duration") {
		if f.duration < 0 {
			return l, fmt.Errorf("--duration must be ≥ 0 (0: until interrupted), got %s", f.duration)
		}
		l.Duration = scenarios.Duration(f.duration)
	}
	if changed("window") {
		if f.window <= 0 {
			return l, fmt.Errorf("--window must be > 0, got %s", f.window)
		}
		l.Window = scenarios.Duration(f.window)
	}
	if changed("vus") {
		if f.vus < 1 {
			return l, fmt.Errorf("--vus must be ≥ 1, got %d", f.vus)
		}
		l.VUs, l.Rate, l.MaxVUs, l.Stages = f.vus, 0, 0, nil
	}
	if changed("rate") {
		if !(f.rate > 0) || math.IsInf(f.rate, 0) {
			return l, fmt.Errorf("--rate must be a positive number of iterations per second, got %v", f.rate)
		}
		l.Rate, l.VUs, l.Stages = f.rate, 0, nil
		if l.MaxVUs == 0 {
			l.MaxVUs = scenarios.DefaultMaxVUs
		}
	}
	if changed("max-vus") {
		if f.maxVUs < 1 {
			return l, fmt.Errorf("--max-vus must be ≥ 1, got %d", f.maxVUs)
		}
		if !l.Open() {
			return l, errors.New("--max-vus belongs to the open model: give --rate too (the scenario uses vus)")
		}
		l.MaxVUs = f.maxVUs
	}
	d := l.Duration.D()
	if d > 0 && l.Window.D() > d {
		if changed("window") {
			return l, fmt.Errorf("--window %s is longer than the run (%s)", l.Window.D(), d)
		}
		l.Window = l.Duration // a shortened run is one window
	}
	var staged time.Duration
	for _, s := range l.Stages {
		staged += s.Duration.D()
	}
	if d > 0 && staged > d && changed("duration") {
		return l, fmt.Errorf("--duration %s is shorter than the scenario's stages (%s); give --vus or --rate to replace them", d, staged)
	}
	return l, nil
}

// scenarioErrors prints scenario problems one per line as file:line: message
// (like longhaul scenario validate) and sets exit code 2.
func (a *app) scenarioErrors(err error) error {
	var errs scenarios.Errors
	if !errors.As(err, &errs) {
		return badInput{err}
	}
	for _, e := range errs {
		fmt.Fprintln(a.stderr, e.Error())
	}
	return errSilent{exitBadInput}
}

// lookupEnv resolves ${env:NAME}; an empty value counts as unset.
func (a *app) lookupEnv(name string) (string, bool) {
	v := a.getenv(name)
	return v, v != ""
}

// watchInterrupts calls stop on the first SIGINT/SIGTERM, until done is
// closed, and reports whether one came. A later one says what is being
// waited for.
func (a *app) watchInterrupts(done <-chan struct{}, stop func(), timeout time.Duration) (interrupted func() bool) {
	var (
		mu  sync.Mutex
		got bool
	)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-a.interrupts:
				mu.Lock()
				again := got
				got = true
				mu.Unlock()
				if again {
					if timeout == 0 {
						timeout = driver.DefaultTimeout
					}
					fmt.Fprintf(a.stderr, "longhaul: stopping: waiting up to %s for requests in flight\n", timeout)
				}
				stop()
			}
		}
	}()
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// serveMetrics serves set (and the process's own metrics) at
// http://addr/metrics until the returned stop is called.
func serveMetrics(addr string, set *metrics.Set) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		set.WritePrometheus(w)
		metrics.WriteProcessMetrics(w)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
