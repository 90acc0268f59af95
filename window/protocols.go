package window

import "fmt"

// TLS is a window's TLS handshakes with an https target: each new
// connection's handshake, timed on its own (the requests' latencies include
// it too, as they include a TCP connect).
type TLS struct {
	// Handshakes completed in the window; Resumed of them resumed a session
	// (no certificate exchange); Failed handshakes that did not complete.
	Handshakes int64 `json:"handshakes"`
	Resumed    int64 `json:"resumed"`
	Failed     int64 `json:"failed"`
	// HandshakeMs are the completed handshakes' durations.
	HandshakeMs Latency `json:"handshake_ms"`
	// Histogram is the handshakes' HDR histogram (microseconds), encoded by
	// EncodeHistogram: small, so it travels with the window's document.
	Histogram []byte `json:"histogram,omitempty"`
}

// WebSocket is a window's WebSocket sessions. Each scripted step's message
// round trip is an op of its own in Window.Ops ("OP.STEP"), the connect
// (the upgrade request) the op itself.
type WebSocket struct {
	// SessionsOpen is the number of sessions open when the window closed;
	// Opened and Failed count connects that succeeded and failed in it.
	SessionsOpen int64 `json:"sessions_open"`
	Opened       int64 `json:"opened"`
	Failed       int64 `json:"failed"`
	// Closed counts the sessions that ended in the window by close code:
	// the code of the close frame received or sent, 1006 for a connection
	// that broke without one (RFC 6455 §7.1.5).
	Closed map[int]int64 `json:"closed,omitempty"`
	// Pings sent in the window; PongTimeouts of them got no pong within the
	// ping interval (or the load timeout, whichever is shorter).
	Pings        int64 `json:"pings"`
	PongTimeouts int64 `json:"pong_timeouts"`
	// MessagesIn and MessagesOut count data messages (text and binary).
	MessagesIn  int64 `json:"messages_in"`
	MessagesOut int64 `json:"messages_out"`
	// PingMs are the ping round trips answered in the window.
	PingMs Latency `json:"ping_ms"`
	// PingHistogram is their HDR histogram (microseconds).
	PingHistogram []byte `json:"ping_histogram,omitempty"`
}

// Normal close codes: 1000 (normal), 1001 (going away), 1005 (a close
// frame without a code). Every other code ended a session abnormally.
func normalClose(code int) bool { return code == 1000 || code == 1001 || code == 1005 }

// AbnormalCloses counts the sessions closed with a code other than 1000,
// 1001 or 1005: broken connections (1006), server errors (1011), policy
// and protocol violations.
func (ws *WebSocket) AbnormalCloses() int64 {
	if ws == nil {
		return 0
	}
	var n int64
	for code, c := range ws.Closed {
		if !normalClose(code) {
			n += c
		}
	}
	return n
}

// protocolSums merges the TLS and WebSocket parts of windows for Combine.
type protocolSums struct {
	tls       *TLS
	tlsHist   *counts
	ws        *WebSocket
	pingsHist *counts
}

func (s *protocolSums) add(w Window) error {
	if t := w.TLS; t != nil {
		if s.tls == nil {
			s.tls, s.tlsHist = &TLS{}, newCounts()
		}
		s.tls.Handshakes += t.Handshakes
		s.tls.Resumed += t.Resumed
		s.tls.Failed += t.Failed
		if err := s.tlsHist.add(t.Histogram); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
	}
	if ws := w.WebSocket; ws != nil {
		if s.ws == nil {
			s.ws, s.pingsHist = &WebSocket{}, newCounts()
		}
		a := s.ws
		a.SessionsOpen = ws.SessionsOpen // a gauge: the last reading
		a.Opened += ws.Opened
		a.Failed += ws.Failed
		for code, n := range ws.Closed {
			if a.Closed == nil {
				a.Closed = map[int]int64{}
			}
			a.Closed[code] += n
		}
		a.Pings += ws.Pings
		a.PongTimeouts += ws.PongTimeouts
		a.MessagesIn += ws.MessagesIn
		a.MessagesOut += ws.MessagesOut
		if err := s.pingsHist.add(ws.PingHistogram); err != nil {
			return fmt.Errorf("websocket pings: %w", err)
		}
	}
	return nil
}

func (s *protocolSums) fill(out *Window) error {
	var err error
	if s.tls != nil {
		s.tls.HandshakeMs = LatencyOf(s.tlsHist.histogram())
		if s.tls.Histogram, err = s.tlsHist.encode(); err != nil {
			return err
		}
		out.TLS = s.tls
	}
	if s.ws != nil {
		s.ws.PingMs = LatencyOf(s.pingsHist.histogram())
		if s.ws.PingHistogram, err = s.pingsHist.encode(); err != nil {
			return err
		}
		out.WebSocket = s.ws
	}
	return nil
}
