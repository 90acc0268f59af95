package probes

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/netns"
	"github.com/longhaul-dev/longhaul/netns/netnstest"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// countingDial counts the connections dial opens.
func countingDial(dial DialFunc, n *atomic.Int64) DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		n.Add(1)
		return dial(ctx, network, address)
	}
}

// TestSampleThroughNamespace: with Config.Dial, the heap metric and the GC
// hook reach a target that listens on the loopback of another network
// namespace (as a container's target on the netns route).
func TestSampleThroughNamespace(t *testing.T) {
	ns := netnstest.New(t)
	f := newFakeTarget(t)
	addr := ns.Serve(t, "127.0.0.1:0", f.Config.Handler)
	n, err := netns.Open(ns.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var dials atomic.Int64
	s := startSampler(t, Config{
		TargetURL: "http://" + addr,
		Dial:      countingDial(n.DialContext, &dials),
		Spec:      scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}, GCHook: &scenarios.GCHook{Every: 2}}},
		Window:    10 * time.Second,
		Logger:    slog.New(slog.DiscardHandler),
	})
	for i := range 2 {
		w := win(i, 100)
		s.Sample(context.Background(), w)
		if w.Probes.HeapBytes == nil {
			t.Fatalf("window %d: no heap reading (problems %v)", i, s.Problems())
		}
	}
	if f.scrapes.Load() == 0 || f.gcs.Load() != 1 {
		t.Errorf("scrapes %d, GC hook calls %d: want both through the namespace", f.scrapes.Load(), f.gcs.Load())
	}
	if dials.Load() == 0 {
		t.Error("Config.Dial was never used")
	}
}

// TestInspectorUsesDial: the inspector's HTTP discovery and its WebSocket
// go through Config.Dial too.
func TestInspectorUsesDial(t *testing.T) {
	nt := startNodeTarget(t, 0)
	var dials atomic.Int64
	var d net.Dialer
	s := startSampler(t, Config{
		TargetURL: nt.URL,
		Dial:      countingDial(d.DialContext, &dials),
		Spec:      scenarios.Probes{Process: new(bool), Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: nt.InspectorPort}}},
		Window:    4 * time.Second,
		Logger:    slog.New(slog.DiscardHandler),
	})
	w := &window.Window{Index: 0, End: time.Now(), Requests: 1}
	s.Sample(context.Background(), w)
	if w.Probes.HeapBytes == nil || !w.Probes.HeapForcedGC {
		t.Fatalf("no forced-GC reading through the dialer (problems %v)", s.Problems())
	}
	if dials.Load() == 0 {
		t.Error("Config.Dial was never used by the inspector")
	}
}
