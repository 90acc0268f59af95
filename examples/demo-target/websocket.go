package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// WebSocket endpoints of the demo target:
//
//	GET /ws/echo    every message is sent back as it came
//	GET /ws/ticker  the server pushes {"type":"tick","n":N} every DEMO_WS_TICK
//	                (default 1s) and discards what it receives
//
// Both answer pings (coder/websocket does, while it reads) and count their
// sessions in demo_ws_sessions_open. Two switches plant the faults a soak of
// WebSocket sessions must find:
//
//	DEMO_WS_LEAK_BYTES=N      every WebSocket connection retains N bytes forever
//	DEMO_WS_STALL_AFTER=D     D after start, WebSocket connections are no longer
//	                          read: pings go unanswered, echoes stop (a server
//	                          whose reader hung)
//	DEMO_WS_UNCLOSED=true     a WebSocket connection is never closed by the
//	                          server: when its session ends the socket is kept,
//	                          and once the client has closed its end it sits in
//	                          CLOSE_WAIT until the process exits (a server that
//	                          loses track of the sessions it should release)

// wsOptions configure the WebSocket endpoints.
type wsOptions struct {
	LeakBytes  int
	StallAfter time.Duration
	Unclosed   bool
	Tick       time.Duration
}

// wsServer serves the WebSocket endpoints.
type wsServer struct {
	o     wsOptions
	leak  *leakedMemory
	start time.Time
	open  atomic.Int64
}

func (s *server) registerWebSocket(o wsOptions) {
	if o.Tick <= 0 {
		o.Tick = time.Second
	}
	ws := &wsServer{o: o, leak: s.leak, start: time.Now()}
	s.ws = ws
	s.metrics.NewGauge(`demo_ws_sessions_open`, func() float64 { return float64(ws.open.Load()) })
	s.mux.HandleFunc("GET /ws/echo", ws.echo)
	s.mux.HandleFunc("GET /ws/ticker", ws.ticker)
}

func (ws *wsServer) accept(w http.ResponseWriter, r *http.Request) *websocket.Conn {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil // Accept has answered
	}
	if sc := stallConnOf(r.Context()); sc != nil {
		sc.ws.Store(true)
	}
	ws.leak.retain(ws.o.LeakBytes)
	ws.open.Add(1)
	return c
}

func (ws *wsServer) echo(w http.ResponseWriter, r *http.Request) {
	c := ws.accept(w, r)
	if c == nil {
		return
	}
	defer ws.open.Add(-1)
	defer c.CloseNow()
	ctx := r.Context()
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if err := c.Write(ctx, typ, msg); err != nil {
			return
		}
	}
}

func (ws *wsServer) ticker(w http.ResponseWriter, r *http.Request) {
	c := ws.accept(w, r)
	if c == nil {
		return
	}
	defer ws.open.Add(-1)
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context()) // reads (answering pings) until the client closes
	t := time.NewTicker(ws.o.Tick)
	defer t.Stop()
	buf := make([]byte, 0, 64)
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		buf = append(buf[:0], `{"type":"tick","n":`...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, '}')
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := c.Write(wctx, websocket.MessageText, buf)
		cancel()
		if err != nil {
			return
		}
	}
}

// stallListener wraps accepted connections in stallConn (the
// DEMO_WS_STALL_AFTER and DEMO_WS_UNCLOSED switches).
type stallListener struct {
	net.Listener
	stall    bool
	at       time.Time
	unclosed *unclosedConns // nil: connections close as usual
}

func (l stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, stall: l.stall, at: l.at, unclosed: l.unclosed, closed: make(chan struct{})}, nil
}

// stallConn stops returning data from Read once it carries a WebSocket
// (ws) and the stall time has come; Read then blocks until Close. With
// unclosed, Close of a WebSocket connection keeps its socket open.
type stallConn struct {
	net.Conn
	stall    bool
	at       time.Time
	unclosed *unclosedConns
	ws       atomic.Bool
	once     sync.Once
	closed   chan struct{}
}

func (c *stallConn) Read(p []byte) (int, error) {
	if c.stall && c.ws.Load() && !time.Now().Before(c.at) {
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Read(p)
}

func (c *stallConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	if c.unclosed != nil && c.ws.Load() {
		c.unclosed.keep(c.Conn)
		return nil
	}
	return c.Conn.Close()
}

// unclosedConns holds the connections the DEMO_WS_UNCLOSED switch never
// closes: referenced, so that no finalizer closes their sockets either.
type unclosedConns struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (u *unclosedConns) keep(c net.Conn) {
	u.mu.Lock()
	u.conns = append(u.conns, c)
	u.mu.Unlock()
}

type connKey struct{}

// withConn is http.Server.ConnContext: it lets a handler find its stallConn.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func stallConnOf(ctx context.Context) *stallConn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, _ := c.(*stallConn)
	return sc
}
