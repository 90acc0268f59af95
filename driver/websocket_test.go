package driver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// wsTestServer echoes on /echo and, on /silent, reads nothing once
// upgraded: pings are never answered there.
func wsTestServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			// A push the script must skip, then the echo.
			_ = c.Write(r.Context(), websocket.MessageText, []byte(`{"type":"tick"}`))
			if err := c.Write(r.Context(), typ, msg); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/silent", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		<-r.Context().Done()
	})
	mux.HandleFunc("/refuse", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) })
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

const wsYAML = `
name: ws
load: {timeout: 1s}
ops:
  - name: chat
    weight: 1
    websocket:
      path: /echo
      steps:
        - send: {json: {type: hello, vu: "{{ vu }}"}}
        - name: hello
          expect: {json: type, equals: hello, capture: [{json: vu, var: me}]}
        - send: {text: "me {{ .me }}"}
        - name: me
          expect: {regexp: "^me [0-9]+$"}
        - close: {}
`

func wsTotals(ws []window.Window) (sum window.WebSocket, ops map[string]window.OpStats) {
	ops = map[string]window.OpStats{}
	sum.Closed = map[int]int64{}
	for _, w := range ws {
		if w.WebSocket == nil {
			continue
		}
		sum.Opened += w.WebSocket.Opened
		sum.Failed += w.WebSocket.Failed
		sum.Pings += w.WebSocket.Pings
		sum.PongTimeouts += w.WebSocket.PongTimeouts
		sum.MessagesIn += w.WebSocket.MessagesIn
		sum.MessagesOut += w.WebSocket.MessagesOut
		sum.SessionsOpen = w.WebSocket.SessionsOpen
		for c, n := range w.WebSocket.Closed {
			sum.Closed[c] += n
		}
		for name, o := range w.Ops {
			acc := ops[name]
			acc.Requests += o.Requests
			acc.OK += o.OK
			acc.Errors.AddAll(o.Errors)
			ops[name] = acc
		}
	}
	return sum, ops
}

func TestWebSocketScript(t *testing.T) {
	ts := wsTestServer(t)
	ws, _ := drive(t, context.Background(), Options{Target: mustURL(t, ts.URL), Plan: compile(t, wsYAML),
		Load: scenarios.Load{VUs: 2, Window: ms(500), Duration: ms(1000), Timeout: ms(1000)}})
	sum, ops := wsTotals(ws)
	if sum.Opened == 0 || sum.Failed != 0 {
		t.Fatalf("opened %d, failed %d", sum.Opened, sum.Failed)
	}
	for _, name := range []string{"chat", "chat.hello", "chat.me", "chat.close"} {
		o := ops[name]
		if o.Requests == 0 || o.OK < o.Requests-2 { // the run's stop may cut the last sessions short
			t.Errorf("%s: %d requests, %d ok, errors %+v: want all ok", name, o.Requests, o.OK, o.Errors)
		}
	}
	// Two messages per session; the sessions the run's stop cut short
	// (one per VU) may have sent fewer.
	if sessions := ops["chat.hello"].Requests; sum.Closed[1000] == 0 || sum.MessagesOut < 2*(sessions-2) || sum.MessagesOut > 2*sessions {
		t.Errorf("closed %v, messages out %d for %d sessions", sum.Closed, sum.MessagesOut, ops["chat.hello"].Requests)
	}
	if sum.MessagesIn < 2*sum.MessagesOut-4 { // an echo and a tick per message, but for the last
		t.Errorf("messages in %d for %d out", sum.MessagesIn, sum.MessagesOut)
	}
	if sum.SessionsOpen != 0 {
		t.Errorf("%d sessions open after the run", sum.SessionsOpen)
	}
}

func TestWebSocketHold(t *testing.T) {
	ts := wsTestServer(t)
	tests := []struct {
		name, path  string
		wantTimeout bool
		wantFailed  bool
	}{
		{"answered", "/echo", false, false},
		{"no pongs", "/silent", true, false},
		{"refused upgrade", "/refuse", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := `
name: hold
load: {timeout: 1s}
ops:
  - name: hold
    websocket: {path: ` + tt.path + `, hold: 10m, ping: 250ms}
`
			ws, _ := drive(t, context.Background(), Options{Target: mustURL(t, ts.URL), Plan: compile(t, y),
				Load: scenarios.Load{VUs: 3, Window: ms(500), Duration: ms(1000), Timeout: ms(1000)}})
			sum, ops := wsTotals(ws)
			if tt.wantFailed {
				if sum.Failed == 0 || ops["hold"].Errors.Status4xx == 0 {
					t.Fatalf("failed %d, hold errors %+v: want refused upgrades counted as 4xx", sum.Failed, ops["hold"].Errors)
				}
				return
			}
			if sum.Opened != 3 || sum.Failed != 0 {
				t.Fatalf("opened %d, failed %d: want the 3 VUs' sessions held", sum.Opened, sum.Failed)
			}
			if ws[0].WebSocket.SessionsOpen != 3 {
				t.Errorf("sessions open in window 0: %d, want 3", ws[0].WebSocket.SessionsOpen)
			}
			if sum.Closed[1001] != 3 {
				t.Errorf("closed %v: want 3 going-away closes at the run's end", sum.Closed)
			}
			ping := ops["hold.ping"]
			switch {
			case tt.wantTimeout && (sum.PongTimeouts == 0 || sum.PongTimeouts != sum.Pings || ping.Errors.Timeout != sum.PongTimeouts):
				t.Errorf("pong timeouts %d, ping op timeouts %d: want > 0 and equal", sum.PongTimeouts, ping.Errors.Timeout)
			// 3 sessions × 4 pings/s × 1 s: 12 pings; a loaded machine may
			// delay a pong past its 250 ms now and then.
			case !tt.wantTimeout && (sum.Pings < 6 || ping.OK < sum.Pings*3/4 || ping.OK+ping.Errors.Timeout != sum.Pings):
				t.Errorf("pings %d, pong timeouts %d, ping op ok %d: want most of ~12 answered", sum.Pings, sum.PongTimeouts, ping.OK)
			}
			if !tt.wantTimeout && ws[0].WebSocket.PingMs.P99 <= 0 {
				t.Errorf("window 0 ping p99 = %v", ws[0].WebSocket.PingMs.P99)
			}
		})
	}
}

// TestWebSocketStopsPromptly: held sessions end when the run stops.
func TestWebSocketStopsPromptly(t *testing.T) {
	ts := wsTestServer(t)
	plan := compile(t, "name: h\nops:\n  - name: h\n    websocket: {path: /silent, hold: 1h}\n")
	start := time.Now()
	drive(t, context.Background(), Options{Target: mustURL(t, ts.URL), Plan: plan,
		Load: scenarios.Load{VUs: 2, Window: ms(300), Duration: ms(300), Timeout: ms(1000)}})
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("run of 300 ms took %s with held sessions", d)
	}
}
