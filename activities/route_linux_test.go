package activities_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/netns"
	"github.com/longhaul-dev/longhaul/netns/netnstest"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// namespacedTarget serves a tiny API (and a heap metric) on the loopback of
// a network namespace of the test's own, as a container's target on the
// netns route, and returns where it is and how many requests it served.
func namespacedTarget(t *testing.T) (netns.Target, *atomic.Int64) {
	t.Helper()
	ns := netnstest.New(t)
	var served atomic.Int64
	addr := ns.Serve(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if r.URL.Path == "/metrics" {
			io.WriteString(w, "# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes 4242\n")
			return
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	id, err := os.Readlink(ns.Path)
	if err != nil {
		t.Fatal(err)
	}
	return netns.Target{Path: ns.Path, ID: id, URL: "http://" + addr}, &served
}

// closedPort is a host loopback URL where nothing listens: load sent there
// instead of into the namespace would be refused.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// syncBuffer collects log output from concurrent writers.
type syncBuffer = lockedbuf.Buffer

// TestDriveTakesTheNamespaceRoute: the real driver, on an environment with
// a NetNS, sends every request inside the namespace (the published-port URL
// has nothing behind it).
func TestDriveTakesTheNamespaceRoute(t *testing.T) {
	target, served := namespacedTarget(t)
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	envDesc.TargetURL, envDesc.Route, envDesc.NetNS = closedPort(t), "netns", &target
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: activities.LoadDriver{}}
	env := newEnv(a)
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, Total: 2,
		Overrides: activities.Overrides{Duration: 4e8, Window: 2e8}, Env: envDesc}
	if _, err := env.ExecuteActivity(a.Drive, in); err != nil {
		t.Fatal(err)
	}
	ws, _ := st.Windows(context.Background(), "r1", store.AllWindows)
	var requests, ok, errs int64
	for _, w := range ws {
		requests += w.Requests
		ok += w.OK
		errs += w.Errors.Total()
	}
	if len(ws) != 2 || requests == 0 || ok != requests || errs != 0 {
		t.Fatalf("%d windows, %d requests, %d ok, %d errors: want every request served in the namespace", len(ws), requests, ok, errs)
	}
	if served.Load() < requests {
		t.Errorf("the target in the namespace served %d, the driver counted %d", served.Load(), requests)
	}
}

// TestDriveFallsBackToThePublishedPort: a worker that cannot enter the
// recorded namespace (here: it is no longer the one recorded) drives the
// published port and says so once in the log.
func TestDriveFallsBackToThePublishedPort(t *testing.T) {
	target, _ := namespacedTarget(t)
	target.ID = "net:[1]"
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	envDesc.Route, envDesc.NetNS = "netns", &target
	drv := &activitiestest.Driver{}
	var logs syncBuffer
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: drv, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	env := newEnv(a)
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, Total: 2,
		Overrides: activities.Overrides{Duration: 2e9, Window: 1e9}, Env: envDesc}
	if _, err := env.ExecuteActivity(a.Drive, in); err != nil {
		t.Fatal(err)
	}
	c := drv.Calls[0]
	if c.TargetURL != envDesc.TargetURL || c.Dial != nil {
		t.Errorf("driver called with %s (dial set: %v), want the published port %s", c.TargetURL, c.Dial != nil, envDesc.TargetURL)
	}
	if n := strings.Count(logs.String(), "cannot enter the target's network namespace"); n != 1 {
		t.Errorf("%d log lines about the fallback, want 1:\n%s", n, logs.String())
	}
}

// TestServerProbesTakeTheNamespaceRoute: the heap metric is scraped inside
// the target's namespace.
func TestServerProbesTakeTheNamespaceRoute(t *testing.T) {
	target, _ := namespacedTarget(t)
	off := false
	spec := scenarios.Probes{Process: &off, Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}}
	env := activities.Environment{TargetURL: closedPort(t), ContainerID: "c0ffee", Route: "netns", NetNS: &target}
	p, err := activities.ServerProbes(slog.New(slog.DiscardHandler))(context.Background(), env, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	w := window.Window{Requests: 1}
	p.Sample(context.Background(), &w)
	if w.Probes.HeapBytes == nil || *w.Probes.HeapBytes != 4242 || len(w.ProbeFailures) != 0 {
		t.Errorf("heap %v, failures %v: want 4242 read in the namespace", w.Probes.HeapBytes, w.ProbeFailures)
	}
}
