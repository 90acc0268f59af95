// Package accuracy checks package analysis against real soaks of the demo
// target (issue 5 §3), without the CLI or Temporal: the demo target runs as a
// local process over a private PostgreSQL cluster, the driver drives the
// parse-mix scenario at it, the probes sample it each window, and
// analysis.Analyze reads the windows.
//
//	LONGHAUL_ACCURACY=1 go test ./bench/accuracy -run TestRealAccuracy -v -timeout 90m
//
// Knobs: LONGHAUL_ACCURACY_RUNS (runs per case, default 5),
// LONGHAUL_ACCURACY_CASES (default clean,leak,noindex),
// LONGHAUL_ACCURACY_DURATION (default 90s; windows are 3 s),
// LONGHAUL_ACCURACY_OUT (a directory: each run's windows are written there as
// JSON, e.g. for analysis/testdata/real).
//
// The bar: a leak finding in every leak run, a collapse naming items in every
// no-index run, no finding of severity warning or worse in any clean run —
// with the warm-up both at one window (3 s) and at the scenario's 30 s.
// It takes runs × cases × duration of wall time and loads both cores.
package accuracy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

type accuracyCase struct {
	name string
	env  []string
	ok   func(analysis.Result) error
}

var cases = []accuracyCase{
	{"clean", nil, func(r analysis.Result) error {
		if v := r.Verdicts(); len(v) > 0 {
			return fmt.Errorf("%d warning-or-worse findings on a clean run", len(v))
		}
		return nil
	}},
	{"leak", []string{"DEMO_LEAK_BYTES=2048"}, func(r analysis.Result) error {
		for _, f := range r.Verdicts() {
			if f.Kind == analysis.KindLeak {
				return nil
			}
		}
		return fmt.Errorf("no leak finding")
	}},
	{"noindex", []string{"DEMO_INDEX_BUCKET=false"}, func(r analysis.Result) error {
		for _, f := range r.Verdicts() {
			if f.Kind == analysis.KindCollapse && f.Evidence.Table == "items" {
				return nil
			}
		}
		return fmt.Errorf("no collapse finding naming items")
	}},
}

func TestRealAccuracy(t *testing.T) {
	if os.Getenv("LONGHAUL_ACCURACY") == "" {
		t.Skip("set LONGHAUL_ACCURACY=1 to run real soaks of the demo target (runs × cases × 90 s)")
	}
	runs := envInt(t, "LONGHAUL_ACCURACY_RUNS", 5)
	duration := 90 * time.Second
	if v := os.Getenv("LONGHAUL_ACCURACY_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LONGHAUL_ACCURACY_DURATION=%q: %v", v, err)
		}
		duration = d
	}
	want := map[string]bool{"clean": true, "leak": true, "noindex": true}
	if v := os.Getenv("LONGHAUL_ACCURACY_CASES"); v != "" {
		want = map[string]bool{}
		for _, c := range strings.Split(v, ",") {
			want[strings.TrimSpace(c)] = true
		}
	}
	out := os.Getenv("LONGHAUL_ACCURACY_OUT")

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "demo-target")
	build := exec.Command("go", "build", "-o", bin, "./examples/demo-target")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the demo target: %v\n%s", err, b)
	}
	sc, err := scenarios.LoadFile(filepath.Join(root, "scenarios", "parse-mix.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cluster := pgtest.Start(t)

	tally := map[string][2]int{} // per case and warm-up: passes, runs
	for _, c := range cases {
		if !want[c.name] {
			continue
		}
		for run := 1; run <= runs; run++ {
			ws := soak(t, bin, sc, cluster, c.env, duration)
			if out != "" {
				writeWindows(t, filepath.Join(out, fmt.Sprintf("%s-%d.json", c.name, run)), ws)
			}
			for _, warm := range []time.Duration{3 * time.Second, sc.Load.Warmup.D()} {
				res := analysis.Analyze(ws, analysis.Options{Warmup: warm})
				key := fmt.Sprintf("%-8s warm-up %-4v", c.name, warm)
				n := tally[key]
				n[1]++
				if err := c.ok(res); err != nil {
					t.Errorf("%s run %d: %v", key, run, err)
				} else {
					n[0]++
				}
				tally[key] = n
				for _, f := range res.Findings {
					t.Logf("%s run %d: [%s %s] %s", key, run, f.Severity, f.Kind, f.Summary)
				}
			}
		}
	}
	for key, n := range tally {
		t.Logf("%s: bar met in %d of %d runs", key, n[0], n[1])
	}
}

// soak runs the demo target with env over a fresh database and drives it for
// duration in 3-second windows, sampling every probe each window.
func soak(t *testing.T, bin string, sc *scenarios.Scenario, cluster string, env []string, duration time.Duration) []window.Window {
	t.Helper()
	dsn := pgtest.NewDatabase(t, cluster)
	port := freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append([]string{"PORT=" + strconv.Itoa(port), "DATABASE_URL=" + dsn}, env...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the demo target: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base+"/health")

	plan, err := scenarios.Compile(sc, scenarios.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	load := sc.Load
	load.Duration, load.Window = scenarios.Duration(duration), scenarios.Duration(3*time.Second)
	on := true
	spec := sc.Probes
	spec.Process, spec.Database = &on, &scenarios.DatabaseProbe{Postgres: &on}
	sampler, err := probes.New(probes.Config{Spec: spec, TargetURL: base, PID: cmd.Process.Pid, DatabaseURL: dsn, Window: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sampler.Close()
	ctx, cancel := context.WithTimeout(context.Background(), duration+time.Minute)
	defer cancel()
	sampler.Start(ctx)
	target, _ := url.Parse(base)
	var ws []window.Window
	_, err = driver.Run(ctx, driver.Options{Target: target, Plan: plan, Load: load, RunID: "accuracy"}, func(w window.Window) error {
		sampler.Sample(ctx, &w)
		ws = append(ws, w)
		return nil
	})
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	for _, p := range sampler.Problems() {
		t.Logf("probe problem: %+v", p)
	}
	return ws
}

func waitHealthy(t *testing.T, u string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the demo target did not answer %s within 20 s", u)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeWindows(t *testing.T, path string, ws []window.Window) {
	t.Helper()
	b, err := json.MarshalIndent(ws, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatalf("write windows: %v", err)
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
