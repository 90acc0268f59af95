package provision_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestDemoWebSocketLocal drives the demo target's WebSocket endpoints on
// the local provider in 1 s windows, with each fault switch and without,
// and checks what the windows and the findings say:
//
//   - clean: pinged sessions held, every ping answered, no finding;
//   - DEMO_WS_STALL_AFTER: pong timeouts from the stall on, and an error
//     surge finding;
//   - DEMO_WS_LEAK_BYTES: short sessions, the post-GC heap (read through
//     the target's forced-GC hook each window) grows: a leak finding;
//   - DEMO_WS_UNCLOSED: short sessions the server never closes, counted by
//     the connections probe in the target's socket table (CLOSE_WAIT): an
//     unclosed-connections finding. The clean runs have the same probe and
//     must not have it.
func TestDemoWebSocketLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo target")
	}
	s, err := scenarios.LoadFile(filepath.Join("..", "scenarios", "demo-websocket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bin, l := demoTargetLocal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	hold := `
name: hold
ops:
  - name: hold
    websocket: {path: /ws/ticker, hold: 10m, ping: 200ms}
`
	short := `
name: short
ops:
  - name: chat
    websocket:
      path: /ws/echo
      steps:
        - send: {text: hi}
        - expect: {regexp: "^hi$"}
        - close: {}
`
	tests := []struct {
		name, scenario string
		env            map[string]string
		wantKind       string // the finding wanted; "" for none of leak and error_surge
	}{
		{"clean hold", hold, nil, ""},
		{"stalled pongs", hold, map[string]string{"DEMO_WS_STALL_AFTER": "5s"}, analysis.KindErrorSurge},
		{"clean short sessions", short, nil, ""},
		{"leak per connection", short, map[string]string{"DEMO_WS_LEAK_BYTES": "65536"}, analysis.KindLeak},
		{"sessions never closed", short, map[string]string{"DEMO_WS_UNCLOSED": "true"}, analysis.KindUnclosedConnections},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := s.Environment
			spec.Provider = "local"
			spec.Target.Build, spec.Target.Command = nil, []string{bin}
			env, err := l.Provision(ctx, provision.Request{RunID: "websocket-e2e", Incarnation: i, Spec: spec, ExtraEnv: tt.env})
			defer func() {
				if err := l.Teardown(context.WithoutCancel(ctx), env); err != nil {
					t.Errorf("teardown: %v", err)
				}
			}()
			if err != nil {
				t.Fatalf("provision: %v", err)
			}
			sc, err := scenarios.Parse([]byte(tt.scenario), "e2e.yaml")
			if err != nil {
				t.Fatal(err)
			}
			plan, err := scenarios.Compile(sc, scenarios.CompileOptions{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(env.TargetURL)
			port, _ := strconv.Atoi(u.Port())
			conns, err := probes.NewConnCounter(port, probes.ProcTCPTables(env.Target.PID))
			if err != nil {
				t.Fatal(err)
			}
			var ws []window.Window
			_, err = driver.Run(ctx, driver.Options{Target: u, Plan: plan, Seed: 3,
				Load: scenarios.Load{VUs: 20, Window: scenarios.Duration(time.Second), Duration: scenarios.Duration(14 * time.Second),
					Timeout: scenarios.Duration(2 * time.Second)}},
				func(w window.Window) error {
					if heap, ok := forcedHeap(env.TargetURL); ok {
						w.Probes.HeapBytes, w.Probes.HeapForcedGC = &heap, true
					}
					if c, err := conns.Read(); err == nil {
						w.Probes.Connections = &c
					} else {
						t.Errorf("window %d: connections: %v", w.Index, err)
					}
					ws = append(ws, w)
					return nil
				})
			if err != nil {
				t.Fatalf("drive: %v", err)
			}
			for _, w := range ws {
				if w.WebSocket == nil {
					t.Fatalf("window %d has no websocket part", w.Index)
				}
				t.Logf("window %2d: open %3d opened %4d closed %v pings %4d pong timeouts %4d in %5d out %5d ping p99 %.2f ms heap %d connections %+v",
					w.Index, w.WebSocket.SessionsOpen, w.WebSocket.Opened, w.WebSocket.Closed, w.WebSocket.Pings,
					w.WebSocket.PongTimeouts, w.WebSocket.MessagesIn, w.WebSocket.MessagesOut, w.WebSocket.PingMs.P99, deref(w.Probes.HeapBytes),
					*w.Probes.Connections)
			}
			res := analysis.Analyze(ws, analysis.Options{})
			var kinds []string
			for _, f := range res.Findings {
				kinds = append(kinds, f.Kind)
				t.Logf("finding %s %s: %s", f.Severity, f.Kind, f.Summary)
			}
			for _, k := range []string{analysis.KindLeak, analysis.KindErrorSurge, analysis.KindUnclosedConnections} {
				found := false
				for _, f := range res.Findings {
					found = found || f.Kind == k && f.Severity != analysis.Info
				}
				if found != (k == tt.wantKind) {
					t.Errorf("finding %s present: %v, want %v (findings %v)", k, found, k == tt.wantKind, kinds)
				}
			}
			if tt.scenario == hold && tt.wantKind == "" {
				if w := ws[len(ws)/2].WebSocket; w.SessionsOpen != 20 || w.PongTimeouts != 0 || w.PingMs.P99 <= 0 {
					t.Errorf("mid-run window: %+v, want 20 sessions open, pings answered", w)
				}
			}
		})
	}
}

// forcedHeap forces a GC in the demo target and returns its live heap.
func forcedHeap(base string) (int64, bool) {
	resp, err := http.Post(base+"/debug/gc", "", nil)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var v struct {
		HeapBytes int64 `json:"heap_bytes"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return 0, false
	}
	return v.HeapBytes, true
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
