package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/longhaul-dev/longhaul/window"
)

// InspectorClient reads the post-GC heap of a Node.js process through its
// inspector (node --inspect=HOST:PORT), speaking the Chrome DevTools
// Protocol over a WebSocket: HeapProfiler.collectGarbage, then
// Runtime.getHeapUsage, whose usedSize is the V8 heap in use.
//
// The WebSocket stays open between calls; when it has dropped, a call
// reconnects once. A call that times out leaves the connection open (its
// late answer is discarded), so a slow GC does not cost a reconnect. It is
// safe for concurrent use.
type InspectorClient struct {
	Addr string // host:port of the inspector, e.g. 127.0.0.1:9229

	http   *http.Client
	nextID atomic.Int64
	// readLimit bounds one message from the inspector (0: 1 MiB, enough
	// for a reading; a profile needs more).
	readLimit int64

	mu     sync.Mutex
	sess   *cdpSession
	closed bool
}

// NewInspectorClient returns a client of the inspector at addr (host:port).
// It does not connect.
func NewInspectorClient(addr string) *InspectorClient {
	return &InspectorClient{Addr: addr, http: newHTTPClient(nil)}
}

// ErrInspectorClosed is returned by calls after Close.
var ErrInspectorClosed = errors.New("inspector client closed")

// errSessionGone marks a call that failed because the WebSocket dropped.
var errSessionGone = errors.New("inspector connection dropped")

// HeapAfterGC forces a full GC in the target and returns the V8 heap's used
// bytes after it.
func (c *InspectorClient) HeapAfterGC(ctx context.Context) (int64, error) {
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			return 0, err
		}
		n, err := c.heapAfterGC(ctx, s)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, errSessionGone) || attempt > 0 || ctx.Err() != nil {
			return 0, fmt.Errorf("inspector %s: %w", c.Addr, err)
		}
		c.drop(s)
	}
}

func (c *InspectorClient) heapAfterGC(ctx context.Context, s *cdpSession) (int64, error) {
	if _, err := s.call(ctx, c.nextID.Add(1), "HeapProfiler.collectGarbage"); err != nil {
		return 0, err
	}
	res, err := s.call(ctx, c.nextID.Add(1), "Runtime.getHeapUsage")
	if err != nil {
		return 0, err
	}
	var usage struct {
		UsedSize *float64 `json:"usedSize"`
	}
	if err := json.Unmarshal(res, &usage); err != nil || usage.UsedSize == nil {
		return 0, fmt.Errorf("Runtime.getHeapUsage: unexpected result %.200s", res)
	}
	return toBytes(*usage.UsedSize)
}

// NodeReading is one reading of a Node.js target through its inspector,
// taken right after a forced full GC.
type NodeReading struct {
	// HeapBytes is the V8 heap in use after the GC (Runtime.getHeapUsage).
	HeapBytes int64
	// Memory is process.memoryUsage() after the GC; nil when the target's
	// runtime did not give it (not Node.js, or the evaluation failed).
	Memory *window.NodeMemory
	// EventLoopDelay summarises the event-loop delay since the previous
	// reading (a perf_hooks.monitorEventLoopDelay histogram installed by the
	// first reading, read and reset by each); nil on the first reading and
	// when the target has no perf_hooks.
	EventLoopDelay *window.Pauses
}

// nodeRuntimeExpr is evaluated in the target after the forced GC. It
// installs, once, an event-loop delay histogram (10 ms resolution, the
// Node.js default) under a global symbol, and returns as JSON
// process.memoryUsage() and the histogram's count, p50, p99 and max (in
// nanoseconds, less the 10 ms sampling interval that every sample includes)
// since the last call, which it resets. require comes from the
// inspector's command-line API (includeCommandLineAPI), or
// process.getBuiltinModule on newer Node.js, or the main module.
const nodeRuntimeExpr = `(() => {
  const key = Symbol.for('longhaul.eventLoopDelay');
  let h = globalThis[key], fresh = false;
  if (!h) {
    const load = typeof require === 'function' ? require
      : typeof process.getBuiltinModule === 'function' ? (n) => process.getBuiltinModule(n)
      : process.mainModule ? (n) => process.mainModule.require(n) : null;
    if (load) {
      try { h = load('perf_hooks').monitorEventLoopDelay({ resolution: 10 }); h.enable(); globalThis[key] = h; fresh = true; } catch (e) { h = null; }
    }
  }
  const m = process.memoryUsage();
  const out = { heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers || 0, rss: m.rss };
  if (h && !fresh) {
    const n = typeof h.count === 'number' ? h.count : -1; // count: Node.js 17.4+
    const d = (v) => Math.max(0, v - 10e6); // a sample is the 10 ms interval plus the delay
    out.eld = { count: n, p50: n ? d(h.percentile(50)) : 0, p99: n ? d(h.percentile(99)) : 0, max: n ? d(h.max) : 0 };
  }
  if (h) h.reset();
  return JSON.stringify(out);
})()`

// NodeAfterGC forces a full GC in the target and returns the V8 heap in use
// after it, the process's memoryUsage() and the event-loop delay since the
// previous call. Only the heap is required: a target whose runtime cannot
// evaluate the expression gives a reading without Memory and EventLoopDelay.
func (c *InspectorClient) NodeAfterGC(ctx context.Context) (NodeReading, error) {
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			return NodeReading{}, err
		}
		r, err := c.nodeAfterGC(ctx, s)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, errSessionGone) || attempt > 0 || ctx.Err() != nil {
			return NodeReading{}, fmt.Errorf("inspector %s: %w", c.Addr, err)
		}
		c.drop(s)
	}
}

// nodeRuntimeParams are the Runtime.evaluate params of nodeRuntimeExpr.
var nodeRuntimeParams = func() json.RawMessage {
	b, err := json.Marshal(map[string]any{"expression": nodeRuntimeExpr, "returnByValue": true, "includeCommandLineAPI": true, "silent": true})
	if err != nil {
		panic(err) // a constant map of strings and booleans
	}
	return b
}()

// nodeAfterGC sends the GC, the heap usage and the evaluation at once: the
// inspector runs them in order, so the evaluation sees the heap after the
// GC, and the reading costs one round trip instead of three (it has a
// quarter of a 1 s window on a loaded machine). An evaluation that failed
// (not Node.js, a sandbox) leaves the heap reading standing.
func (c *InspectorClient) nodeAfterGC(ctx context.Context, s *cdpSession) (NodeReading, error) {
	gc := s.start(ctx, c.nextID.Add(1), "HeapProfiler.collectGarbage", nil)
	usage := s.start(ctx, c.nextID.Add(1), "Runtime.getHeapUsage", nil)
	eval := s.start(ctx, c.nextID.Add(1), "Runtime.evaluate", nodeRuntimeParams)
	if _, err := gc.wait(); err != nil {
		usage.cancel()
		eval.cancel()
		return NodeReading{}, err
	}
	res, err := usage.wait()
	if err != nil {
		eval.cancel()
		return NodeReading{}, err
	}
	var u struct {
		UsedSize *float64 `json:"usedSize"`
	}
	if err := json.Unmarshal(res, &u); err != nil || u.UsedSize == nil {
		eval.cancel()
		return NodeReading{}, fmt.Errorf("Runtime.getHeapUsage: unexpected result %.200s", res)
	}
	n, err := toBytes(*u.UsedSize)
	if err != nil {
		eval.cancel()
		return NodeReading{}, err
	}
	r := NodeReading{HeapBytes: n}
	res, err = eval.wait()
	if err != nil {
		if errors.Is(err, errSessionGone) {
			return NodeReading{}, err
		}
		return r, nil
	}
	if m, p, err := parseNodeRuntime(res); err == nil {
		r.Memory, r.EventLoopDelay = m, p
	}
	return r, nil
}

// parseNodeRuntime decodes the answer to Runtime.evaluate(nodeRuntimeExpr).
func parseNodeRuntime(res json.RawMessage) (*window.NodeMemory, *window.Pauses, error) {
	var ans struct {
		Result struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &ans); err != nil {
		return nil, nil, fmt.Errorf("Runtime.evaluate: unexpected result %.200s", res)
	}
	if ans.Exception != nil {
		return nil, nil, fmt.Errorf("Runtime.evaluate: %s", ans.Exception.Text)
	}
	if ans.Result.Type != "string" {
		return nil, nil, fmt.Errorf("Runtime.evaluate: a %s, not the JSON string expected", ans.Result.Type)
	}
	var v struct {
		HeapUsed, HeapTotal, External, ArrayBuffers, RSS *float64
		ELD                                              *struct{ Count, P50, P99, Max float64 }
	}
	if err := json.Unmarshal([]byte(ans.Result.Value), &v); err != nil || v.HeapUsed == nil || v.External == nil || v.RSS == nil {
		return nil, nil, fmt.Errorf("Runtime.evaluate: unexpected memoryUsage %.200s", ans.Result.Value)
	}
	b := func(p *float64) int64 {
		if p == nil || *p < 0 || *p > 1<<62 {
			return 0
		}
		return int64(*p)
	}
	m := &window.NodeMemory{HeapUsedBytes: b(v.HeapUsed), HeapTotalBytes: b(v.HeapTotal), ExternalBytes: b(v.External),
		ArrayBuffersBytes: b(v.ArrayBuffers), RSSBytes: b(v.RSS)}
	var p *window.Pauses
	if e := v.ELD; e != nil {
		ms := func(ns float64) float64 { return ns / 1e6 }
		p = &window.Pauses{P50Ms: ms(e.P50), P99Ms: ms(e.P99), MaxMs: ms(e.Max), Count: max(int64(e.Count), 0)}
	}
	return m, p, nil
}

// callOn sends one method with its params (a JSON object, nil for none)
// and returns its answer and the session that answered, reconnecting once
// when the WebSocket had dropped.
func (c *InspectorClient) callOn(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *cdpSession, error) {
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx)
		if err != nil {
			return nil, nil, err
		}
		res, err := s.start(ctx, c.nextID.Add(1), method, params).wait()
		if err == nil {
			return res, s, nil
		}
		if !errors.Is(err, errSessionGone) || attempt > 0 || ctx.Err() != nil {
			return nil, s, fmt.Errorf("inspector %s: %w", c.Addr, err)
		}
		c.drop(s)
	}
}

// Connect opens the WebSocket now (it is otherwise opened by the first
// HeapAfterGC), so a wrong address is found at start.
func (c *InspectorClient) Connect(ctx context.Context) error {
	if _, err := c.session(ctx); err != nil {
		return fmt.Errorf("inspector %s: %w", c.Addr, err)
	}
	return nil
}

// session returns the open session, dialling if there is none.
func (c *InspectorClient) session(ctx context.Context) (*cdpSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrInspectorClosed
	}
	if c.sess != nil && !c.sess.isDone() {
		return c.sess, nil
	}
	wsURL, err := c.debuggerURL(ctx)
	if err != nil {
		return nil, err
	}
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: c.http})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", wsURL, err)
	}
	conn.SetReadLimit(cmpOr(c.readLimit, 1<<20))
	c.sess = newCDPSession(conn)
	return c.sess, nil
}

func (c *InspectorClient) drop(s *cdpSession) {
	c.mu.Lock()
	if c.sess == s {
		c.sess = nil
	}
	c.mu.Unlock()
	s.close()
}

// debuggerURL asks the inspector's HTTP endpoint for the target's WebSocket
// URL. Its host:port is replaced by Addr: the inspector builds the URL from
// what it believes its address is, which is wrong behind a port mapping.
func (c *InspectorClient) debuggerURL(ctx context.Context) (string, error) {
	listURL := "http://" + c.Addr + "/json/list"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, listURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("list targets: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("list targets: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("list targets: status %s", resp.Status)
	}
	var targets []struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(body, &targets); err != nil {
		return "", fmt.Errorf("list targets: %w", err)
	}
	for _, t := range targets {
		if t.WS == "" || (t.Type != "" && t.Type != "node") {
			continue
		}
		u, err := url.Parse(t.WS)
		if err != nil {
			return "", fmt.Errorf("list targets: bad webSocketDebuggerUrl %q: %w", t.WS, err)
		}
		u.Host = c.Addr
		return u.String(), nil
	}
	return "", errors.New("list targets: no node target with a webSocketDebuggerUrl (another debugger attached?)")
}

// Close closes the WebSocket; later calls fail with ErrInspectorClosed.
func (c *InspectorClient) Close() error {
	c.mu.Lock()
	s := c.sess
	c.sess, c.closed = nil, true
	c.mu.Unlock()
	if s != nil {
		s.close()
	}
	return nil
}

// cdpSession is one WebSocket with a reader goroutine that hands each
// answer to the call waiting for its id.
type cdpSession struct {
	conn   *websocket.Conn
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader stops
	err    error         // why the reader stopped; read after done

	mu      sync.Mutex
	pending map[int64]chan cdpAnswer
}

type cdpAnswer struct {
	Result json.RawMessage
	Err    error
}

func newCDPSession(conn *websocket.Conn) *cdpSession {
	ctx, cancel := context.WithCancel(context.Background())
	s := &cdpSession{conn: conn, cancel: cancel, done: make(chan struct{}), pending: map[int64]chan cdpAnswer{}}
	go s.read(ctx)
	return s
}

func (s *cdpSession) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *cdpSession) read(ctx context.Context) {
	defer close(s.done)
	for {
		_, data, err := s.conn.Read(ctx)
		if err != nil {
			s.err = err
			return
		}
		var msg struct {
			ID     *int64          `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &msg) != nil || msg.ID == nil {
			continue // an event, or noise
		}
		s.mu.Lock()
		ch := s.pending[*msg.ID]
		delete(s.pending, *msg.ID)
		s.mu.Unlock()
		if ch == nil {
			continue // a late answer to a call that gave up
		}
		a := cdpAnswer{Result: msg.Result}
		if msg.Error != nil {
			a.Err = fmt.Errorf("error %d: %s", msg.Error.Code, msg.Error.Message)
		}
		ch <- a
	}
}

// call sends one method without parameters and waits for its answer.
func (s *cdpSession) call(ctx context.Context, id int64, method string) (json.RawMessage, error) {
	return s.start(ctx, id, method, nil).wait()
}

// pendingCall is a method sent and not yet answered.
type pendingCall struct {
	s      *cdpSession
	ctx    context.Context
	id     int64
	method string
	ch     chan cdpAnswer
	err    error // sending failed
}

// start sends one method with its params (a JSON object, nil for none);
// wait gives its answer. Several may be started before waiting: the
// inspector answers them in order.
func (s *cdpSession) start(ctx context.Context, id int64, method string, params json.RawMessage) *pendingCall {
	p := &pendingCall{s: s, ctx: ctx, id: id, method: method}
	if err := ctx.Err(); err != nil {
		// Writing with a dead context would close the WebSocket.
		p.err = fmt.Errorf("%s: %w", method, err)
		return p
	}
	p.ch = make(chan cdpAnswer, 1)
	s.mu.Lock()
	s.pending[id] = p.ch
	s.mu.Unlock()
	msg := `{"id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `"`
	if params != nil {
		msg += `,"params":` + string(params)
	}
	msg += `}`
	if err := s.conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		p.cancel()
		p.err = fmt.Errorf("%s: %w: %w", method, errSessionGone, err)
	}
	return p
}

// cancel forgets the call: its late answer is discarded.
func (p *pendingCall) cancel() {
	p.s.mu.Lock()
	delete(p.s.pending, p.id)
	p.s.mu.Unlock()
}

// wait waits for the call's answer.
func (p *pendingCall) wait() (json.RawMessage, error) {
	if p.err != nil {
		return nil, p.err
	}
	select {
	case a := <-p.ch:
		if a.Err != nil {
			return nil, fmt.Errorf("%s: %w", p.method, a.Err)
		}
		return a.Result, nil
	case <-p.s.done:
		p.cancel()
		return nil, fmt.Errorf("%s: %w: %w", p.method, errSessionGone, p.s.err)
	case <-p.ctx.Done():
		p.cancel()
		return nil, fmt.Errorf("%s: no answer: %w", p.method, p.ctx.Err())
	}
}

func (s *cdpSession) close() {
	s.cancel()
	s.conn.CloseNow()
	<-s.done
}
