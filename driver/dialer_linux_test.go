package driver

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/netns"
	"github.com/longhaul-dev/longhaul/netns/netnstest"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestRunInsideNamespace drives a server that listens on the loopback of
// another network namespace, through a netns.Namespace as the Dialer:
// every request reaches it, none fails.
func TestRunInsideNamespace(t *testing.T) {
	ns := netnstest.New(t)
	var served atomic.Int64
	addr := ns.Serve(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Write([]byte(`{"ok":true}`))
	}))
	n, err := netns.Open(ns.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ws, _ := drive(t, context.Background(), Options{
		Target: mustURL(t, "http://"+addr), Plan: compile(t, helloYAML), Dialer: n,
		Load: scenarios.Load{VUs: 2, Duration: ms(300), Window: ms(100), Timeout: ms(2000)},
	})
	requests, ok, errs, _, _ := totals(ws)
	if requests == 0 || ok != requests || errs != 0 {
		t.Fatalf("requests %d, ok %d, errors %d", requests, ok, errs)
	}
	// Keep-alive: the server saw as many requests as were counted (the ones
	// interrupted at the stop excepted, there are none with this timeout).
	if got := served.Load(); got != requests {
		t.Errorf("server in the namespace served %d, driver counted %d", got, requests)
	}
}

// BenchmarkRequestNamespace is BenchmarkRequestLoopback on a connection
// opened inside another network namespace: once the socket exists, the
// route costs nothing per request (and allocates nothing).
func BenchmarkRequestNamespace(b *testing.B) {
	ns := netnstest.New(b)
	target := rawServerOn(ns.Listen(b, "127.0.0.1:0"), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"+
		`{"id":12345,"name":"longhaul","ok":true}`)
	n, err := netns.Open(ns.Path)
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	ep, err := newEndpoint(context.Background(), mustURL(b, target))
	if err != nil {
		b.Fatal(err)
	}
	ep.custom = n
	h := newHTTPConn(ep)
	defer h.close()
	req := &scenarios.Rendered{Method: "GET", PathQuery: []byte("/items")}
	if _, _, c := h.do(req, false, time.Now().Add(5*time.Second)); c != window.OK {
		b.Fatalf("class %s", c)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, c := h.do(req, false, time.Now().Add(5*time.Second)); c != window.OK {
			b.Fatalf("class %s", c)
		}
	}
}
