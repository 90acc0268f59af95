package provision_test

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/internal/mongoserver"
	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// mongoDemoSoak provisions the demo target over database.kind mongodb with
// the local provider (mongod, else FerretDB), drives
// scenarios/demo-mongodb.yaml's mix at it for d in 1 s windows through the
// real server probes, and returns the windows and their analysis.
func mongoDemoSoak(t *testing.T, indexBucket bool, d time.Duration) ([]window.Window, analysis.Result) {
	t.Helper()
	bin, l := demoTargetLocal(t)
	demo, err := scenarios.LoadFile(filepath.Join("..", "scenarios", "demo-mongodb.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": "{{.Database.URL}}"}
	if !indexBucket {
		env["DEMO_INDEX_BUCKET"] = "false"
	}
	spec := scenarios.Environment{Provider: "local", Database: scenarios.Database{Kind: "mongodb"},
		Target: scenarios.Target{Command: []string{bin}, Env: env, Health: "/health"}}
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	penv, err := l.Provision(ctx, provision.Request{RunID: "mongo-e2e", Spec: spec})
	defer func() {
		if err := l.Teardown(context.WithoutCancel(ctx), penv); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}()
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	aenv := activities.Environment{ID: penv.ID, Provider: penv.Provider, TargetURL: penv.TargetURL, PID: penv.Target.PID,
		DatabaseURL: penv.Database.URL, DatabaseBackendURL: penv.Database.BackendURL, DatabasePID: penv.Database.Process.PID}
	logger := slog.New(slog.DiscardHandler)
	prober, err := activities.ServerProbes(logger)(ctx, aenv, scenarios.Probes{})
	if err != nil {
		t.Fatalf("probes: %v", err)
	}
	defer prober.Close()
	plan, err := scenarios.Compile(demo, scenarios.CompileOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	load := scenarios.Load{VUs: 8, Window: scenarios.Duration(2 * time.Second), Timeout: scenarios.Duration(10 * time.Second), Duration: scenarios.Duration(d)}
	u, err := url.Parse(penv.TargetURL)
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
	missed := 0 // windows whose database reading missed the sample budget
	for _, w := range ws {
		var items int64
		var absent string
		if db := w.Probes.Database; db != nil {
			for _, tb := range db.Tables {
				if tb.Name == "items" {
					items = tb.LiveRows
				}
			}
			absent = strings.Join(db.Absent, ",")
		}
		list := w.Ops["list"].LatencyMs.P50
		t.Logf("window %2d: %6.0f req/s p50 %6.2f ms list p50 %6.2f ms | items %6d | absent %s | errors %v",
			w.Index, w.RPS, w.LatencyMs.P50, list, items, absent, w.Errors)
		for _, pf := range w.ProbeFailures {
			// A reading that missed its budget under load (the tests of
			// other packages share the cores) leaves one window without
			// figures; the next reading's deltas cover it. Any other
			// failure, or many, is a fault.
			if pf.Probe == probes.ProbeDatabase && strings.Contains(pf.Error, "no answer within") {
				missed++
				t.Logf("window %d: probe %s: %s", w.Index, pf.Probe, pf.Error)
				continue
			}
			t.Errorf("window %d: probe %s failing: %s", w.Index, pf.Probe, pf.Error)
		}
	}
	if missed > len(ws)/5 {
		t.Errorf("the database probe missed its budget in %d of %d windows, want at most a fifth", missed, len(ws))
	}
	res := analysis.Analyze(ws, analysis.Options{Warmup: 3 * time.Second})
	for _, f := range res.Findings {
		t.Logf("[%s %s] %s", f.Severity, f.Kind, f.Summary)
	}
	return ws, res
}

// TestMongoDemoCollapseNamesItems: the demo target without its list index
// over a MongoDB database on the local provider collapses as items grows,
// and the collapse finding names the collection.
func TestMongoDemoCollapseNamesItems(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 s soak")
	}
	if _, err := mongoserver.Find(); err != nil {
		t.Skip(err)
	}
	ws, res := mongoDemoSoak(t, false, 50*time.Second)
	if len(ws) < 20 {
		t.Fatalf("%d windows, want ≥ 20", len(ws))
	}
	for _, f := range res.Verdicts() {
		if f.Kind == analysis.KindCollapse && f.Evidence.Table == "items" {
			if !strings.Contains(f.Summary, "items grew") || !strings.Contains(f.Summary, "documents") {
				t.Errorf("the collapse does not say how items grew, in documents: %s", f.Summary)
			}
			return
		}
	}
	t.Fatal("no collapse finding naming items")
}

// TestMongoDemoIndexedQuiet: the same soak with the list index raises no
// collapse (no false alarm).
func TestMongoDemoIndexedQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 s soak")
	}
	if _, err := mongoserver.Find(); err != nil {
		t.Skip(err)
	}
	_, res := mongoDemoSoak(t, true, 40*time.Second)
	for _, f := range res.Verdicts() {
		if f.Kind == analysis.KindCollapse {
			t.Errorf("a collapse on the indexed demo: %s", f.Summary)
		}
	}
}
