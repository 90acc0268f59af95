package driver

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// writeCA writes ts's certificate as a PEM file and returns its path.
func writeCA(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// protoServer counts requests by the protocol they arrived in.
type protoServer struct{ h1, h2 atomic.Int64 }

func (p *protoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		p.h2.Add(1)
	} else {
		p.h1.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"id":"x"}`))
}

// TestProtocols drives an httptest server over each protocol for one
// second and checks that every request went over the protocol asked for,
// with TLS handshakes reported for https (and resumed on reconnects when
// the server closes every connection).
func TestProtocols(t *testing.T) {
	tests := []struct {
		name      string
		tls       bool
		proto     string
		closeEach bool // the server closes the connection after each response
		wantH2    bool
	}{
		{name: "https h1", tls: true, proto: scenarios.ProtocolH1},
		{name: "https h1 reconnecting", tls: true, proto: scenarios.ProtocolH1, closeEach: true},
		{name: "h2", tls: true, proto: scenarios.ProtocolH2, wantH2: true},
		{name: "h2c", proto: scenarios.ProtocolH2C, wantH2: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := &protoServer{}
			ts := httptest.NewUnstartedServer(ps)
			if tt.closeEach {
				ts.Config.SetKeepAlivesEnabled(false)
			}
			var opts Options
			if tt.tls {
				ts.EnableHTTP2 = true
				ts.StartTLS()
				opts.TLS = &scenarios.TLS{CAFile: writeCA(t, ts)}
			} else {
				ts.Config.Protocols = new(http.Protocols)
				ts.Config.Protocols.SetHTTP1(true)
				ts.Config.Protocols.SetUnencryptedHTTP2(true)
				ts.Start()
			}
			defer ts.Close()
			opts.Target = mustURL(t, ts.URL)
			opts.Protocol = tt.proto
			opts.Plan = compile(t, helloYAML)
			opts.Load = scenarios.Load{VUs: 2, Window: ms(500), Duration: ms(1000), Timeout: ms(2000)}
			ws, _ := drive(t, context.Background(), opts)
			requests, ok, errs, _, _ := totals(ws)
			if requests == 0 || ok != requests || errs != 0 {
				t.Fatalf("requests %d, ok %d, errors %d: want all ok", requests, ok, errs)
			}
			h1, h2 := ps.h1.Load(), ps.h2.Load()
			if tt.wantH2 && h1 != 0 || !tt.wantH2 && h2 != 0 {
				t.Fatalf("server saw %d HTTP/1 and %d HTTP/2 requests, want only HTTP/2: %v", h1, h2, tt.wantH2)
			}
			if h1+h2 != requests {
				t.Errorf("server saw %d requests, driver counted %d", h1+h2, requests)
			}
			var hs, resumed int64
			for _, w := range ws {
				if w.TLS == nil {
					if tt.tls {
						t.Fatalf("window %d has no tls part", w.Index)
					}
					continue
				}
				if !tt.tls {
					t.Fatalf("window %d of a cleartext run has a tls part", w.Index)
				}
				hs += w.TLS.Handshakes
				resumed += w.TLS.Resumed
				if w.TLS.Handshakes > 0 && w.TLS.HandshakeMs.Max <= 0 {
					t.Errorf("window %d: %d handshakes without a duration", w.Index, w.TLS.Handshakes)
				}
			}
			switch {
			case !tt.tls:
			case tt.closeEach:
				if hs < requests || resumed < hs/2 {
					t.Errorf("%d requests on fresh connections: %d handshakes, %d resumed; want one each, mostly resumed", requests, hs, resumed)
				}
			case hs < 1 || hs > 4:
				t.Errorf("keep-alive: %d handshakes for 2 VUs, want 2 (a stale-connection retry at most doubles it)", hs)
			}
		})
	}
}

func TestProtocolRefused(t *testing.T) {
	tests := []struct {
		name, target, proto string
		tls                 *scenarios.TLS
		want                string
	}{
		{name: "h2 over http", target: "http://127.0.0.1:1", proto: "h2", want: "needs an https://"},
		{name: "h2c over https", target: "https://127.0.0.1:1", proto: "h2c", want: "cleartext"},
		{name: "unknown", target: "http://127.0.0.1:1", proto: "spdy", want: "not one of"},
		{name: "tls on http", target: "http://127.0.0.1:1", tls: &scenarios.TLS{InsecureSkipVerify: true}, want: "need an https://"},
		{name: "missing ca", target: "https://127.0.0.1:1", tls: &scenarios.TLS{CAFile: "/nonexistent/ca.pem"}, want: "tls.ca_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), Options{Target: mustURL(t, tt.target), Protocol: tt.proto, TLS: tt.tls,
				Plan: compile(t, helloYAML), Load: scenarios.Load{VUs: 1, Window: ms(100), Duration: ms(100)}}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestTLSUntrusted: a certificate nobody trusts is a failed handshake,
// counted per request as other and per window as a failed handshake.
func TestTLSUntrusted(t *testing.T) {
	ts := httptest.NewTLSServer(&protoServer{})
	defer ts.Close()
	ws, _ := drive(t, context.Background(), Options{Target: mustURL(t, ts.URL), Plan: compile(t, helloYAML),
		Load: scenarios.Load{VUs: 1, Window: ms(300), Duration: ms(300), Timeout: ms(1000)}})
	var other, failed int64
	for _, w := range ws {
		other += w.Errors.Other
		if w.TLS != nil {
			failed += w.TLS.Failed
		}
	}
	if other == 0 || failed == 0 {
		t.Fatalf("other %d, failed handshakes %d: want both > 0", other, failed)
	}
}
