package driver

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// freeAddr returns a loopback address where nothing listens (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestConnectFailuresBackOff: against a port where nothing listens, VUs back
// off (1 ms doubling to 1 s), so a dead target costs a few dials per VU
// rather than thousands a second, and none of them is throughput.
func TestConnectFailuresBackOff(t *testing.T) {
	tests := []struct {
		name string
		load scenarios.Load
	}{
		{"closed", scenarios.Load{VUs: 4, Duration: ms(1500), Window: ms(500), Timeout: ms(1000)}},
		{"open", scenarios.Load{Rate: 1000, MaxVUs: 4, Duration: ms(1500), Window: ms(500), Timeout: ms(1000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := mustURL(t, "http://"+freeAddr(t))
			ws, _ := drive(t, context.Background(), Options{Target: target, Plan: compile(t, helloYAML), Load: tt.load})
			checkInvariants(t, ws, 0, 500*time.Millisecond)
			var sum window.Window
			for _, w := range ws {
				if w.RPS != 0 {
					t.Errorf("window %d: rps %.1f with nothing listening, want 0", w.Index, w.RPS)
				}
				sum.Requests += w.Requests
				sum.ConnectFailures += w.ConnectFailures
				sum.Dropped += w.Dropped
				sum.Errors.AddAll(w.Errors)
			}
			if sum.ConnectFailures == 0 || sum.ConnectFailures != sum.Requests || sum.Errors.Refused != sum.Requests {
				t.Errorf("requests %d, connect failures %d, refused %d: want all equal and > 0", sum.Requests, sum.ConnectFailures, sum.Errors.Refused)
			}
			// 1+2+4+…+512 ms is 10 dials in the first second, then one
			// a second: about 11 per VU in 1.5 s. Without backoff it is
			// tens of thousands.
			if limit := int64(4 * 14); sum.ConnectFailures > limit {
				t.Errorf("%d connect failures from 4 VUs in 1.5 s, want ≤ %d (backoff)", sum.ConnectFailures, limit)
			}
			if tt.load.Open() {
				// 1500 scheduled starts: those not sent were dropped.
				if got := sum.Requests + sum.Dropped; got < 1400 || got > 1501 {
					t.Errorf("requests %d + dropped %d = %d, want ~1500 scheduled starts", sum.Requests, sum.Dropped, got)
				}
			}
			s, err := window.Merge(ws)
			if err != nil {
				t.Fatal(err)
			}
			if s.RPS != 0 || s.ConnectFailures != sum.ConnectFailures {
				t.Errorf("summary rps %.1f, connect failures %d; want 0 and %d", s.RPS, s.ConnectFailures, sum.ConnectFailures)
			}
		})
	}
}

// TestConnectBackoffResets: a target that comes up mid-run is served at full
// speed at once; the backoff starts over after a connection opens.
func TestConnectBackoffResets(t *testing.T) {
	addr := freeAddr(t)
	up := make(chan net.Listener, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			up <- nil
			return
		}
		up <- ln
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "{}")
		}))
	}()
	load := scenarios.Load{VUs: 2, Duration: ms(1500), Window: ms(500), Timeout: ms(1000)}
	ws, _ := drive(t, context.Background(), Options{Target: mustURL(t, "http://"+addr), Plan: compile(t, helloYAML), Load: load})
	ln := <-up
	if ln == nil {
		t.Skip("the freed port was taken by another process")
	}
	defer ln.Close()
	checkInvariants(t, ws, 0, 500*time.Millisecond)
	first, last := ws[0], ws[len(ws)-1]
	if first.ConnectFailures == 0 {
		t.Errorf("window 0: no connect failures before the target was up")
	}
	if last.ConnectFailures != 0 || last.OK == 0 {
		t.Errorf("last window: %d connect failures, %d ok; want 0 and > 0", last.ConnectFailures, last.OK)
	}
	if want := float64(last.OK) / last.Duration().Seconds(); last.RPS < want*0.99 {
		t.Errorf("last window rps %.1f, want ≥ %.1f (its ok requests)", last.RPS, want)
	}
	// A request sent in the up-time of window 0 or 1 was answered: the
	// backoff after the last refusal was at most a few hundred ms.
	if ws[1].OK == 0 {
		t.Errorf("window 1 (target up since 0.3 s): no request answered")
	}
}
