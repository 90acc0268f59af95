package driver

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// TestDialerOption: Options.Dialer opens every connection, about once per
// VU over keep-alive, with the request's deadline in its context.
func TestDialerOption(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	var dials, noDeadline atomic.Int64
	var d net.Dialer
	dialer := DialerFunc(func(ctx context.Context, network, address string) (net.Conn, error) {
		dials.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			noDeadline.Add(1)
		}
		return d.DialContext(ctx, network, address)
	})
	const vus = 3
	ws, _ := drive(t, context.Background(), Options{
		Target: mustURL(t, srv.URL), Plan: compile(t, helloYAML), Dialer: dialer,
		Load: scenarios.Load{VUs: vus, Duration: ms(300), Window: ms(100), Timeout: ms(2000)},
	})
	requests, ok, errs, _, _ := totals(ws)
	if requests == 0 || ok != requests || errs != 0 {
		t.Fatalf("requests %d, ok %d, errors %d", requests, ok, errs)
	}
	if n := dials.Load(); n < 1 || n > vus {
		t.Errorf("%d dials for %d VUs over keep-alive", n, vus)
	}
	if n := noDeadline.Load(); n != 0 {
		t.Errorf("%d dials without a deadline", n)
	}
}

// plainConn hides the socket of a net.Conn (no syscall.Conn).
type plainConn struct{ net.Conn }

// TestDialerWithoutSocket: a Dialer whose connections are not syscall.Conn
// still works, through the connection's own Read and Write.
func TestDialerWithoutSocket(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	var d net.Dialer
	dialer := DialerFunc(func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return plainConn{c}, nil
	})
	ws, _ := drive(t, context.Background(), Options{
		Target: mustURL(t, srv.URL), Plan: compile(t, helloYAML), Dialer: dialer,
		Load: scenarios.Load{VUs: 1, Duration: ms(200), Window: ms(100), Timeout: ms(2000)},
	})
	requests, ok, _, _, _ := totals(ws)
	if requests == 0 || ok != requests {
		t.Fatalf("requests %d, ok %d", requests, ok)
	}
}

// TestDialerErrorsClassified: a dialer's refusal is counted as refused,
// as a plain dial's is.
func TestDialerErrorsClassified(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var d net.Dialer
	ws, _ := drive(t, context.Background(), Options{
		Target: mustURL(t, "http://"+addr), Plan: compile(t, helloYAML), Dialer: &d,
		Load: scenarios.Load{VUs: 1, Duration: ms(100), Window: ms(100), Timeout: ms(500)},
	})
	var refused int64
	for _, w := range ws {
		refused += w.Errors.Refused
	}
	if refused == 0 {
		t.Errorf("no refused requests: %+v", ws)
	}
}
