package provision_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// rampWall provisions spec with the local provider, drives a closed-model
// ramp of GET path from 1 to top VUs (then holds top) in 2 s windows
// through the real server probes (driveProbed), and returns the windows
// and the throughput-limit finding of their analysis (ok false when there
// is none).
func rampWall(t *testing.T, l *provision.Local, spec scenarios.Environment, path string, top int, ramp, hold time.Duration) ([]window.Window, analysis.Finding, bool) {
	t.Helper()
	load := scenarios.Load{VUs: 1, Window: scenarios.Duration(2 * time.Second), Timeout: scenarios.Duration(10 * time.Second),
		Duration: scenarios.Duration(ramp + hold),
		Stages:   []scenarios.Stage{{Duration: scenarios.Duration(ramp), Target: float64(top)}, {Duration: scenarios.Duration(hold), Target: float64(top)}}}
	ws := driveProbed(t, l, spec, path, load, nil)
	for _, w := range ws {
		p := w.Probes
		t.Logf("window %2d: %2d VUs %6.0f req/s p50 %6.2f ms | hottest %q main %v cores %s busy %s | target busy %s of %s | db %s busy %s | driver %s busy %s | foreign %s",
			w.Index, w.VUs, w.RPS, w.LatencyMs.P50, p.HottestThread, p.HottestThreadMain, f2(p.HottestThreadCores), f2(p.HottestThreadBusy),
			f2(p.TargetBusyCores), f2(p.CoresAllowed), f2(p.DatabaseCores), f2(p.DatabaseBusyCores), f2(p.DriverCores), f2(p.DriverBusyCores), f2(p.HostForeignCPU))
		for _, pf := range w.ProbeFailures {
			t.Logf("window %2d: probe %s failing: %s", w.Index, pf.Probe, pf.Error)
		}
		if w.OK != w.Requests {
			t.Errorf("window %d: %d of %d requests ok: %+v", w.Index, w.OK, w.Requests, w.Errors)
		}
	}
	res := analysis.Analyze(ws, analysis.DefaultOptions())
	for _, f := range res.Findings {
		t.Logf("[%s %s] %s", f.Severity, f.Kind, f.Summary)
	}
	for _, f := range res.Findings {
		if f.Kind == analysis.KindThroughputLimit {
			t.Logf("evidence: cause %q, thread %q, notes %v", f.Evidence.Cause, f.Evidence.Thread, f.Evidence.Notes)
			return ws, f, true
		}
	}
	return ws, analysis.Finding{}, false
}

// driveProbed provisions spec with the local provider (named "wall-e2e"),
// runs before on it (if not nil), then drives GET path under load through
// the real server probes (activities.ServerProbes: the process, thread and
// host-load probes, and the database's when there is one), and returns the
// windows; the environment is torn down before it returns.
func driveProbed(t *testing.T, l *provision.Local, spec scenarios.Environment, path string, load scenarios.Load, before func(ctx context.Context, env provision.Environment)) []window.Window {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := l.Provision(ctx, provision.Request{RunID: "wall-e2e", Spec: spec})
	defer func() {
		if err := l.Teardown(context.WithoutCancel(ctx), env); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}()
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	if before != nil {
		before(ctx, env)
	}
	aenv := activities.Environment{ID: env.ID, Provider: env.Provider, TargetURL: env.TargetURL, PID: env.Target.PID}
	if env.Database != nil {
		aenv.DatabaseURL, aenv.DatabasePID = env.Database.URL, env.Database.Process.PID
	}
	logger := slog.New(slog.DiscardHandler)
	prober, err := activities.ServerProbes(logger)(ctx, aenv, scenarios.Probes{})
	if err != nil {
		t.Fatalf("probes: %v", err)
	}
	defer prober.Close()

	s := &scenarios.Scenario{Name: "wall", Ops: []scenarios.Op{{Weight: 1, Step: scenarios.Step{Name: "get",
		Request: scenarios.Request{Method: "GET", Path: path}, Expect: scenarios.Expect{Status: []int{200}}}}}}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(env.TargetURL)
	if err != nil {
		t.Fatal(err)
	}
	var ws []window.Window
	_, err = driver.Run(ctx, driver.Options{Target: u, Plan: plan, Load: load, Seed: 1, Logger: logger}, func(w window.Window) error {
		prober.Sample(ctx, &w)
		ws = append(ws, w)
		return nil
	})
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	return ws
}

// noFinding fails the test, or skips it when other work took half the
// machine or more: throughput then swings with the neighbours (on the
// shared 2-core test machine, 13 to 370 req/s between one window and the
// next at 90 % foreign load) and no ramp can be read from it.
func noFinding(t *testing.T, ws []window.Window) {
	t.Helper()
	var foreign []float64
	for _, w := range ws {
		if f := w.Probes.HostForeignCPU; f != nil {
			foreign = append(foreign, *f)
		}
	}
	slices.Sort(foreign)
	if len(foreign) > 0 && foreign[len(foreign)/2] >= 0.5 {
		t.Skipf("no throughput_limit finding, with other work taking %.0f %% of the machine (median): too noisy for a ramp", 100*foreign[len(foreign)/2])
	}
	t.Fatal("no throughput_limit finding")
}

// medianOf is the median of get over the windows from VUs on that have it.
func medianOf(ws []window.Window, from int, get func(window.Probes) *float64) float64 {
	var xs []float64
	for _, w := range ws {
		if v := get(w.Probes); v != nil && w.VUs >= from {
			xs = append(xs, *v)
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func f2(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *p)
}

// TestWallSingleThreadNode ramps the Node.js target with BURN_US (every
// request spins 2 ms on its one JavaScript thread) from 1 to 16 VUs: the
// throughput limit names the pinned main thread. On a machine shared with
// other work the thread gets less than a core but is busy (running or
// waiting for a CPU) all the time, which is what names it.
func TestWallSingleThreadNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Node.js target for ~30 s")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	spec := scenarios.Environment{Provider: "local", Target: scenarios.Target{
		Command: []string{node, "server.js"}, Dir: filepath.Join("..", "examples", "node-target"),
		Env: map[string]string{"BURN_US": "2000"}, Health: "/health",
	}}
	l := provision.NewLocal(provision.Options{DataDir: t.TempDir(), StopGrace: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	ws, f, ok := rampWall(t, l, spec, "/items", 16, 28*time.Second, 6*time.Second)
	// The readings themselves, whatever the neighbours do: from 4 VUs on
	// the JavaScript thread always has a request to serve.
	for _, w := range ws {
		if w.VUs >= 4 && w.Probes.HottestThreadCores != nil && (w.Probes.HottestThread != "node" || !w.Probes.HottestThreadMain) {
			t.Errorf("window %d: hottest thread %q (main %v), want node's main thread", w.Index, w.Probes.HottestThread, w.Probes.HottestThreadMain)
		}
	}
	if b := medianOf(ws, 4, func(p window.Probes) *float64 { return p.HottestThreadBusy }); !(b >= 0.9) {
		t.Errorf("node's main thread busy %.2f of the time from 4 VUs on (median), want ≥ 0.9", b)
	}
	if !ok {
		noFinding(t, ws)
	}
	if f.Evidence.Cause != analysis.CauseSingleThread || f.Evidence.Thread != "node" {
		t.Errorf("cause %q, thread %q; want %q, node: %s", f.Evidence.Cause, f.Evidence.Thread, analysis.CauseSingleThread, f.Summary)
	}
	for _, s := range []string{"the target's main thread (node)", "a single-threaded wall — more VUs only queue"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
}

// TestWallPoolDemo ramps the demo target over a local PostgreSQL with a
// pool of 4 connections, each request holding one 20 ms (DEMO_DB_SLEEP_MS),
// from 1 to 20 VUs: throughput stops at the pool (200 req/s from 4 VUs on),
// latency grows, and no CPU is busy — the finding says so and points at a
// pool or a lock.
func TestWallPoolDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo target and PostgreSQL for ~30 s")
	}
	bin, l := demoTargetLocal(t)
	spec := scenarios.Environment{Provider: "local",
		Target: scenarios.Target{Command: []string{bin}, Health: "/health", HealthTimeout: scenarios.Duration(60 * time.Second),
			Env: map[string]string{"DATABASE_URL": "{{.Database.URL}}&pool_max_conns=4", "DEMO_DB_SLEEP_MS": "20"}},
		Database: scenarios.Database{Kind: "postgres"},
	}
	ws, f, ok := rampWall(t, l, spec, "/items", 20, 28*time.Second, 6*time.Second)
	// The readings themselves: the target's busiest thread is far from a
	// core, and the database's processes barely run.
	if b := medianOf(ws, 4, func(p window.Probes) *float64 { return p.HottestThreadCores }); !(b < 0.25) {
		t.Errorf("the target's busiest thread at %.2f of a core from 4 VUs on (median), want well under", b)
	}
	if d := medianOf(ws, 4, func(p window.Probes) *float64 { return p.DatabaseCores }); !(d < 0.25) {
		t.Errorf("the database at %.2f cores from 4 VUs on (median), want well under one", d)
	}
	if !ok {
		noFinding(t, ws)
	}
	if f.Evidence.Cause != analysis.CauseNoCPU {
		t.Errorf("cause %q, want %q: %s", f.Evidence.Cause, analysis.CauseNoCPU, f.Summary)
	}
	for _, s := range []string{"no CPU was saturated", "look for a pool or a lock"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
	if _, ok := f.Evidence.Notes["database_busy_cores"]; !ok {
		t.Errorf("no database reading in the evidence: %v", f.Evidence.Notes)
	}
}
