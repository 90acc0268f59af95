package driver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// readerConn returns a connection whose responses come from raw.
func readerConn(raw string) *httpConn {
	h := newHTTPConn(&endpoint{})
	h.rd = &smallReads{r: strings.NewReader(raw)}
	return h
}

// smallReads returns at most 7 bytes per Read, so parsing across buffer
// refills is exercised.
type smallReads struct{ r io.Reader }

func (s *smallReads) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return s.r.Read(p)
}

func TestReadResponse(t *testing.T) {
	tests := []struct {
		name       string
		raw        string
		head       bool
		wantStatus int
		wantBody   string
		wantKeep   bool
		wantClass  window.Class // class of the error, OK for none
	}{
		{name: "content-length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", wantStatus: 200, wantBody: "hello", wantKeep: true},
		{name: "header case", raw: "HTTP/1.1 201 Created\r\ncontent-LENGTH:2\r\n\r\nhi", wantStatus: 201, wantBody: "hi", wantKeep: true},
		{name: "chunked", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n", wantStatus: 200, wantBody: "hello world", wantKeep: true},
		{name: "until close", raw: "HTTP/1.1 200 OK\r\n\r\nall of it", wantStatus: 200, wantBody: "all of it", wantKeep: false},
		{name: "interim 100", raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", wantStatus: 200, wantBody: "ok", wantKeep: true},
		{name: "connection close", raw: "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", wantStatus: 503, wantKeep: false},
		{name: "http/1.0", raw: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", wantStatus: 200, wantBody: "x", wantKeep: false},
		{name: "http/1.0 keep-alive", raw: "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx", wantStatus: 200, wantBody: "x", wantKeep: true},
		{name: "head", raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", head: true, wantStatus: 200, wantKeep: true},
		{name: "204", raw: "HTTP/1.1 204 No Content\r\n\r\n", wantStatus: 204, wantKeep: true},
		{name: "bare LF", raw: "HTTP/1.1 404 Not Found\nContent-Length: 3\n\nnop", wantStatus: 404, wantBody: "nop", wantKeep: true},
		{name: "no reason", raw: "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", wantStatus: 200, wantKeep: true},
		{name: "truncated body", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", wantClass: window.Reset},
		{name: "truncated chunk", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe", wantClass: window.Reset},
		{name: "nothing", raw: "", wantClass: window.Reset},
		{name: "garbage status", raw: "SPDY/9 200 OK\r\n\r\n", wantClass: window.Other},
		{name: "bad status code", raw: "HTTP/1.1 2x0 OK\r\n\r\n", wantClass: window.Other},
		{name: "bad content-length", raw: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantClass: window.Other},
		{name: "conflicting lengths", raw: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", wantClass: window.Other},
		{name: "bad chunk size", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", wantClass: window.Other},
		{name: "header without colon", raw: "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", wantClass: window.Other},
		{name: "switching protocols", raw: "HTTP/1.1 101 Switching Protocols\r\n\r\n", wantClass: window.Other},
		{name: "huge head", raw: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxHeadBytes) + "\r\n\r\n", wantClass: window.Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := readerConn(tt.raw)
			status, keep, err := h.readResponse(tt.head, true)
			if got := classify(err); got != tt.wantClass {
				t.Fatalf("class %s (err %v), want %s", got, err, tt.wantClass)
			}
			if err != nil {
				return
			}
			if status != tt.wantStatus || keep != tt.wantKeep || string(h.body) != tt.wantBody {
				t.Errorf("got status %d keep %v body %q, want %d %v %q", status, keep, h.body, tt.wantStatus, tt.wantKeep, tt.wantBody)
			}
		})
	}
}

func TestReadResponseSequenceAndDiscard(t *testing.T) {
	// Two responses back to back: the second is read from what the first
	// left in the buffer. Bodies that are not wanted are not kept.
	h := readerConn("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\noneHTTP/1.1 202 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n")
	for i, want := range []int{200, 202} {
		status, keep, err := h.readResponse(false, false)
		if err != nil || status != want || !keep || len(h.body) != 0 {
			t.Errorf("response %d: status %d keep %v err %v body %q; want %d, kept, no body", i, status, keep, err, h.body, want)
		}
	}
}

func FuzzReadResponse(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", true)
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false)
	f.Add("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nbody", true)
	f.Fuzz(func(t *testing.T, raw string, wantBody bool) {
		h := readerConn(raw)
		status, _, err := h.readResponse(false, wantBody)
		if err == nil && (status < 200 || status > 999) {
			t.Errorf("status %d accepted", status)
		}
		if len(h.body) > len(raw) {
			t.Errorf("body of %d bytes from %d bytes of input", len(h.body), len(raw))
		}
	})
}

func TestAppendRequest(t *testing.T) {
	ep := &endpoint{host: []byte("Host: 127.0.0.1:8080\r\n"), basePath: []byte("/api")}
	tests := []struct {
		name string
		req  scenarios.Rendered
		want string
	}{
		{
			name: "get",
			req:  scenarios.Rendered{Method: "GET", PathQuery: []byte("/items?a=1")},
			want: "GET /api/items?a=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: longhaul\r\n\r\n",
		},
		{
			name: "post with body and headers",
			req: scenarios.Rendered{Method: "POST", PathQuery: []byte("/items"), Body: []byte(`{"a":1}`),
				Headers: []scenarios.Header{{Key: "Content-Type", Value: []byte("application/json")}, {Key: "Content-Length", Value: []byte("99")}}},
			want: "POST /api/items HTTP/1.1\r\nContent-Type: application/json\r\nHost: 127.0.0.1:8080\r\nUser-Agent: longhaul\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
		},
		{
			name: "empty post, own host and agent",
			req: scenarios.Rendered{Method: "POST", PathQuery: []byte("x"),
				Headers: []scenarios.Header{{Key: "host", Value: []byte("api.test")}, {Key: "User-Agent", Value: []byte("me")}}},
			want: "POST /api/x HTTP/1.1\r\nhost: api.test\r\nUser-Agent: me\r\nContent-Length: 0\r\n\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(appendRequest(nil, ep, &tt.req)); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want window.Class
	}{
		{nil, window.OK},
		{io.EOF, window.Reset},
		{io.ErrUnexpectedEOF, window.Reset},
		{&net.OpError{Op: "read", Err: errors.New("x")}, window.Other},
		{errMalformed, window.Other},
		{context.DeadlineExceeded, window.Timeout},
	}
	for _, tt := range tests {
		if got := classify(tt.err); got != tt.want {
			t.Errorf("classify(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func TestStaleKeepAliveRetried(t *testing.T) {
	// The server answers one request per connection and then closes it
	// without saying so: the next request on that connection finds it
	// closed and is retried once on a fresh one, not counted as a reset.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}(c)
		}
	}()
	ep, err := newEndpoint(context.Background(), mustURL(t, "http://"+ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	h := newHTTPConn(ep)
	defer h.close()
	req := &scenarios.Rendered{Method: "GET", PathQuery: []byte("/")}
	for i := range 5 {
		status, _, c := h.do(req, false, time.Now().Add(2*time.Second))
		if c != window.OK || status != 200 {
			t.Fatalf("request %d: class %s status %d", i, c, status)
		}
		time.Sleep(5 * time.Millisecond) // let the close arrive
	}
}

// rawServer answers every request on a keep-alive connection with resp,
// allocating nothing per request, so a benchmark sees the client's costs.
func rawServer(tb testing.TB, resp string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return rawServerOn(ln, resp)
}

// rawServerOn is rawServer on a listener of the caller's.
func rawServerOn(ln net.Listener, resp string) string {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				buf := make([]byte, 4096)
				out := []byte(resp)
				n := 0
				for {
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					// One response per request head; a body is left in
					// front of the next head, where it does no harm.
					for {
						i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
						if i < 0 {
							break
						}
						if _, err := c.Write(out); err != nil {
							return
						}
						n = copy(buf, buf[i+4:n])
					}
				}
			}(c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// BenchmarkRequestLoopback measures one keep-alive request/response over
// loopback with this package's client; the client allocates nothing.
func BenchmarkRequestLoopback(b *testing.B) {
	target := rawServer(b, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"+
		`{"id":12345,"name":"longhaul","ok":true}`)
	ep, err := newEndpoint(context.Background(), mustURL(b, target))
	if err != nil {
		b.Fatal(err)
	}
	h := newHTTPConn(ep)
	defer h.close()
	req := &scenarios.Rendered{Method: "GET", PathQuery: []byte("/items")}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, c := h.do(req, false, time.Now().Add(5*time.Second)); c != window.OK {
			b.Fatalf("class %s", c)
		}
	}
}

// BenchmarkIterate is one whole closed-model iteration of a VU against a
// loopback server: pick, render, send, read, check, record. It allocates
// nothing.
func BenchmarkIterate(b *testing.B) {
	target := rawServer(b, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"+
		`{"id":12345,"name":"longhaul","ok":true}`)
	plan := compile(b, `
name: bench
ops:
  - {name: get, weight: 3, request: {method: GET, path: "/items/{{ randInt 1 1000 }}"}}
  - {name: create, weight: 1, request: {method: POST, path: /items, json: {name: "{{ randString 8 8 }}"}}, capture: [{json: id, var: id}]}
`)
	r, err := newRun(context.Background(), Options{Target: mustURL(b, target), Plan: plan,
		Load: scenarios.Load{VUs: 1, Window: ms(1000), Timeout: ms(5000)}})
	if err != nil {
		b.Fatal(err)
	}
	v := r.newVU(0)
	defer v.conn.close()
	b.ReportAllocs()
	for b.Loop() {
		v.iterate(time.Time{})
	}
}
