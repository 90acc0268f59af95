package driver

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/coder/websocket"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// WebSocket sessions (scenarios.WSPlan), through github.com/coder/websocket.
//
// A websocket op is one session per iteration: its own slot records the
// connect (the upgrade's latency, or why it failed), and it has more slots,
// named after it, that the findings read like any op's:
//
//   - "OP.STEP" per expect step: the message round trip from the previous
//     send (or the connect) to the matching message; a timeout is class
//     timeout, a missing capture unexpected, a connection lost meanwhile
//     reset.
//   - "OP.ping" when the op pings: each ping's round trip, class ok, or
//     timeout for a pong timeout — so a server that stops answering pings
//     is an error surge.
//   - "OP.close" per session end: ok for a normal close (1000, 1001, 1005),
//     reset for a broken connection (1006), unexpected for other codes.
//
// Window.WebSocket adds the session counts, close codes, messages and the
// ping round trips.

// wsMsgBuffer is how many received messages wait for an expect step; more
// are counted and dropped (a server pushing faster than the script reads).
const wsMsgBuffer = 64

// wsSlots are a websocket op's extra recorder slots (-1: none).
type wsSlots struct {
	steps []int // per step: its slot (expect steps) or -1
	ping  int
	close int
}

// addWebSocketSlots appends the websocket ops' extra slot names to names
// and prepares the run's WebSocket counters when there are such ops.
func (r *run) addWebSocketSlots(names []string) []string {
	for slot, a := range r.plan.Ops {
		p := a.WebSocket
		if p == nil {
			continue
		}
		if r.wsSlots == nil {
			r.wsSlots = make([]wsSlots, len(r.plan.Ops))
			r.ws = newWSStats()
		}
		s := wsSlots{steps: make([]int, len(p.Steps)), ping: -1}
		for i, st := range p.Steps {
			s.steps[i] = -1
			if st.Kind == scenarios.WSExpectStep {
				s.steps[i] = len(names)
				names = append(names, a.Name+"."+st.Name)
			}
		}
		if p.Ping > 0 {
			s.ping = len(names)
			names = append(names, a.Name+".ping")
		}
		s.close = len(names)
		names = append(names, a.Name+".close")
		r.wsSlots[slot] = s
	}
	return names
}

// wsStats are a run's WebSocket counters for the window in progress.
type wsStats struct {
	open                               atomic.Int64 // a gauge
	opened, failed, pings, pongTimeout atomic.Int64
	in, out                            atomic.Int64

	mu     sync.Mutex
	closed map[int]int64
	hist   *hdrhistogram.Histogram // ping round trips, µs
}

func newWSStats() *wsStats {
	return &wsStats{closed: map[int]int64{}, hist: window.NewHistogram()}
}

func (s *wsStats) closedWith(code int) {
	s.mu.Lock()
	s.closed[code]++
	s.mu.Unlock()
}

func (s *wsStats) ping(d time.Duration) {
	s.mu.Lock()
	window.Record(s.hist, d.Microseconds())
	s.mu.Unlock()
}

func (s *wsStats) collect() (*window.WebSocket, error) {
	if s == nil {
		return nil, nil
	}
	w := &window.WebSocket{
		SessionsOpen: s.open.Load(), Opened: s.opened.Swap(0), Failed: s.failed.Swap(0),
		Pings: s.pings.Swap(0), PongTimeouts: s.pongTimeout.Swap(0),
		MessagesIn: s.in.Swap(0), MessagesOut: s.out.Swap(0),
	}
	s.mu.Lock()
	if len(s.closed) > 0 {
		w.Closed = s.closed
		s.closed = map[int]int64{}
	}
	h := s.hist
	s.hist = window.NewHistogram()
	s.mu.Unlock()
	w.PingMs = window.LatencyOf(h)
	var err error
	w.PingHistogram, err = window.EncodeHistogram(h)
	return w, err
}

// wsClient returns the VU's HTTP client for upgrades: HTTP/1.1 only (the
// upgrade is an HTTP/1.1 mechanism), dialled like every connection of the
// run, TLS with the VU's session cache and the handshake timed.
func (v *vu) wsClient() *http.Client {
	if v.wsc != nil {
		return v.wsc
	}
	ep := v.r.ep
	tr := &http.Transport{DialContext: ep.dialContext, DisableCompression: true, MaxIdleConnsPerHost: 1}
	if cfg := ep.vuTLS(); cfg != nil {
		cfg.NextProtos = []string{"http/1.1"}
		tr.DialTLSContext = ep.dialTLS(cfg, "")
	}
	v.wsc = &http.Client{Transport: tr}
	return v.wsc
}

// wsURL is the upgrade's URL: the target's, with ws or wss, and the
// rendered path.
func (ep *endpoint) wsURL(pathQuery []byte) string {
	scheme := "ws://"
	if ep.url.Scheme == "https" {
		scheme = "wss://"
	}
	b := make([]byte, 0, len(scheme)+len(ep.url.Host)+len(ep.basePath)+len(pathQuery)+1)
	b = append(b, scheme...)
	b = append(b, ep.url.Host...)
	b = append(b, ep.basePath...)
	if len(pathQuery) == 0 || pathQuery[0] != '/' {
		b = append(b, '/')
	}
	return string(append(b, pathQuery...))
}

// wsSession is one open session.
type wsSession struct {
	c       *websocket.Conn
	msgs    chan []byte
	done    chan struct{} // closed when the read loop ends
	readErr error         // why it ended; read after done
}

func (s *wsSession) readLoop(ctx context.Context, st *wsStats) {
	defer close(s.done)
	for {
		_, msg, err := s.c.Read(ctx)
		if err != nil {
			s.readErr = err
			return
		}
		st.in.Add(1)
		select {
		case s.msgs <- msg:
		default: // nobody is expecting: a push the script does not read
		}
	}
}

// session runs one iteration of websocket op a (slot), whose upgrade
// request v.req holds, rendered. It returns the connect's class.
func (v *vu) session(a *scenarios.Action, slot int, due time.Time) window.Class {
	r := v.r
	p, slots, st := a.WebSocket, r.wsSlots[slot], r.ws
	start := time.Now()
	if due.IsZero() {
		due = start
	}
	hdr := make(http.Header, len(v.req.Headers)+1)
	hdr.Set("User-Agent", "longhaul")
	for i := range v.req.Headers {
		hdr.Set(v.req.Headers[i].Key, string(v.req.Headers[i].Value))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dctx, dcancel := context.WithDeadline(ctx, start.Add(r.timeout))
	c, resp, err := websocket.Dial(dctx, r.ep.wsURL(v.req.PathQuery), &websocket.DialOptions{
		HTTPClient: v.wsClient(), HTTPHeader: hdr, Subprotocols: p.Subprotocols,
	})
	dcancel()
	latency := time.Since(due)
	if err != nil {
		cl := classify(err)
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			cl = window.UnwantedStatus(resp.StatusCode) // a refused upgrade
		}
		r.rec.record(v.shard, slot, cl, latency, hasLatency(cl))
		st.failed.Add(1)
		return cl
	}
	r.rec.record(v.shard, slot, window.OK, latency, true)
	st.opened.Add(1)
	st.open.Add(1)
	defer st.open.Add(-1)
	c.SetReadLimit(maxBodyBytes)

	s := &wsSession{c: c, msgs: make(chan []byte, wsMsgBuffer), done: make(chan struct{})}
	go s.readLoop(ctx, st)
	var pinger sync.WaitGroup
	if p.Ping > 0 {
		pinger.Add(1)
		go func() {
			defer pinger.Done()
			v.pingLoop(ctx, s, p.Ping, slots.ping)
		}()
	}
	code := v.script(ctx, s, p, slots)
	if code == 0 && p.Hold > 0 {
		code = v.hold(s, p.Hold)
	}
	switch {
	case code == 0 && r.isStopping():
		code = int(websocket.StatusGoingAway)
		_ = c.CloseNow()
	case code == 0:
		code = int(websocket.StatusNormalClosure)
		_ = c.Close(websocket.StatusNormalClosure, "")
	case code < 0: // the connection ended: the peer's close code, or 1006
		code = closeCode(s.readErr)
		_ = c.CloseNow()
	}
	cancel()
	<-s.done
	pinger.Wait()
	st.closedWith(code)
	r.rec.record(v.shard, slots.close, closeClass(code), 0, false)
	return window.OK
}

// script runs the steps. It returns 0 when they ran to their end, the code
// of a close step (after closing), or -1 when the connection ended or the
// run stopped.
func (v *vu) script(ctx context.Context, s *wsSession, p *scenarios.WSPlan, slots wsSlots) int {
	r := v.r
	last := time.Now()
	for i, step := range p.Steps {
		if r.isStopping() {
			return 0
		}
		switch step.Kind {
		case scenarios.WSSendStep:
			if err := step.RenderMessage(v.state, &v.msg); err != nil {
				continue // data-dependent (an empty pool): nothing to send
			}
			wctx, cancel := context.WithTimeout(ctx, r.timeout)
			err := s.c.Write(wctx, websocket.MessageText, v.msg.Body)
			cancel()
			if err != nil {
				return -1
			}
			r.ws.out.Add(1)
			last = time.Now()
		case scenarios.WSExpectStep:
			c, ended := v.expect(s, step, last)
			r.rec.record(v.shard, slots.steps[i], c, time.Since(last), hasLatency(c))
			if ended {
				return -1
			}
		case scenarios.WSSleepStep:
			if !v.sleep(step.Sleep) {
				return 0
			}
		case scenarios.WSCloseStep:
			_ = s.c.Close(websocket.StatusCode(step.CloseCode), step.CloseReason)
			return step.CloseCode
		}
	}
	return 0
}

// expect waits for the message step expects; ended means the connection
// ended meanwhile.
func (v *vu) expect(s *wsSession, step *scenarios.WSAction, since time.Time) (c window.Class, ended bool) {
	timer := time.NewTimer(time.Until(since.Add(step.Timeout)))
	defer timer.Stop()
	for {
		select {
		case msg := <-s.msgs:
			if ok, c := step.Match(v.state, msg); ok {
				return c, false
			}
		case <-s.done:
			return window.Reset, true
		case <-timer.C:
			return window.Timeout, false
		case <-v.r.stopping:
			return window.Interrupted, false
		}
	}
}

// hold keeps the session open for d; it returns -1 when the connection
// ended first, 0 otherwise.
func (v *vu) hold(s *wsSession, d time.Duration) int {
	v.timer.Reset(d)
	select {
	case <-v.timer.C:
		return 0
	case <-v.r.stopping:
		v.timer.Stop()
		return 0
	case <-s.done:
		v.timer.Stop()
		return -1
	}
}

// pingLoop pings every interval until the session ends, recording each
// round trip, or a pong timeout when no pong came within the interval (or
// the load timeout, if shorter).
func (v *vu) pingLoop(ctx context.Context, s *wsSession, interval time.Duration, slot int) {
	r := v.r
	wait := min(interval, r.timeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.done:
			return
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		start := time.Now()
		err := s.c.Ping(pctx)
		took := time.Since(start)
		timedOut := pctx.Err() == context.DeadlineExceeded
		cancel()
		switch {
		case err == nil:
			r.ws.pings.Add(1)
			r.ws.ping(took)
			r.rec.record(v.shard, slot, window.OK, took, true)
		case timedOut && ctx.Err() == nil:
			r.ws.pings.Add(1)
			r.ws.pongTimeout.Add(1)
			r.rec.record(v.shard, slot, window.Timeout, took, true)
		default:
			return // the session ended
		}
	}
}

// closeCode is the close code of a session whose read loop ended with err:
// the peer's close frame's, 1005 for a close frame without one, 1006 for a
// connection that broke without a close frame.
func closeCode(err error) int {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		if ce.Code == websocket.StatusNoStatusRcvd {
			return 1005
		}
		return int(ce.Code)
	}
	return int(websocket.StatusAbnormalClosure)
}

func closeClass(code int) window.Class {
	switch code {
	case 1000, 1001, 1005:
		return window.OK
	case 1006:
		return window.Reset
	}
	return window.Unexpected
}
