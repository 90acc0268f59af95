package driver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// exchanger is one VU's connection to the target: the hand-written
// HTTP/1.1 client (httpConn, also over TLS) or HTTP/2 (h2Conn). Only the
// VU's goroutine uses it.
type exchanger interface {
	// do sends req and reads the response, as httpConn.do documents.
	do(req *scenarios.Rendered, wantBody bool, deadline time.Time) (status int, body []byte, c window.Class)
	// close drops the connection; the next do dials again.
	close()
	// connectFailed reports whether the last do failed to open its
	// connection (the VU then backs off before the next).
	connectFailed() bool
}

var (
	_ exchanger = (*httpConn)(nil)
	_ exchanger = (*h2Conn)(nil)
)

// newConn returns a VU's connection for the endpoint's protocol.
func (ep *endpoint) newConn() exchanger {
	if ep.proto == scenarios.ProtocolH2 || ep.proto == scenarios.ProtocolH2C {
		return newH2Conn(ep)
	}
	return newHTTPConn(ep)
}

// h2Conn is one VU's HTTP/2 connection, through net/http's own HTTP/2
// client (no framing of ours): over TLS with ALPN "h2" (h2), or cleartext
// with prior knowledge (h2c). Each VU has a Transport of its own, so each
// VU holds one connection and its requests are streams on it, one at a
// time: a VU is a client, and the server sees as many connections as there
// are VUs, as with HTTP/1.1 (docs/protocols.md says why not one shared
// connection).
type h2Conn struct {
	ep     *endpoint
	tr     *http.Transport
	client *http.Client
	prefix string // scheme://host + base path
	body   bytes.Buffer
	rd     bytes.Reader
	// dialFailed: the last request failed opening its connection.
	dialFailed bool
}

func newH2Conn(ep *endpoint) *h2Conn {
	h := &h2Conn{ep: ep}
	var p http.Protocols
	tr := &http.Transport{
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		ForceAttemptHTTP2:   true,
		DialContext:         ep.dialContext,
	}
	if ep.proto == scenarios.ProtocolH2C {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP2(true)
		cfg := ep.vuTLS()
		tr.TLSClientConfig = cfg
		// Our own TLS dial: the handshake is timed like HTTP/1.1's, and the
		// connection still goes through Options.Dialer.
		tr.DialTLSContext = ep.dialTLS(cfg, "h2")
	}
	tr.Protocols = &p
	h.tr = tr
	h.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	u := *ep.url
	u.Path, u.RawPath = string(ep.basePath), ""
	u.RawQuery, u.Fragment = "", ""
	h.prefix = strings.TrimSuffix(u.String(), "/")
	return h
}

// errNoH2 is a TLS server that did not agree to HTTP/2 in ALPN.
var errNoH2 = errors.New("the server did not negotiate h2 in ALPN")

// dialTLS returns a net/http DialTLSContext that dials like every
// connection of the run and times the handshake; with alpn set, a server
// that negotiates another protocol is an error.
func (ep *endpoint) dialTLS(cfg *tls.Config, alpn string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := ep.dialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		deadline, _ := ctx.Deadline()
		tc, err := ep.handshake(c, cfg, deadline)
		if err != nil {
			return nil, err
		}
		_ = tc.SetDeadline(time.Time{})
		if alpn != "" && tc.ConnectionState().NegotiatedProtocol != alpn {
			_ = tc.Close()
			return nil, errNoH2
		}
		return tc, nil
	}
}

// dialContext opens a TCP connection to the endpoint's address, whatever
// address the caller names (net/http names the URL's host).
func (ep *endpoint) dialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	if ep.custom != nil {
		return ep.custom.DialContext(ctx, network, ep.addr)
	}
	return ep.dialer.DialContext(ctx, network, ep.addr)
}

func (h *h2Conn) do(req *scenarios.Rendered, wantBody bool, deadline time.Time) (int, []byte, window.Class) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	path := string(req.PathQuery)
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	h.rd.Reset(req.Body)
	var body io.Reader
	if len(req.Body) > 0 {
		body = &h.rd
	}
	hr, err := http.NewRequestWithContext(ctx, method, h.prefix+path, body)
	if err != nil {
		return 0, nil, window.Other
	}
	hr.ContentLength = int64(len(req.Body))
	hr.Header = make(http.Header, len(req.Headers)+1)
	hr.Header.Set("User-Agent", "longhaul")
	for i := range req.Headers {
		k := req.Headers[i].Key
		switch {
		case equalFold(k, "content-length"), equalFold(k, "transfer-encoding"):
		case equalFold(k, "host"):
			hr.Host = string(req.Headers[i].Value)
		default:
			hr.Header.Set(k, string(req.Headers[i].Value))
		}
	}
	resp, err := h.client.Do(hr)
	var op *net.OpError
	h.dialFailed = err != nil && errors.As(err, &op) && op.Op == "dial"
	if err != nil {
		return 0, nil, classify(err)
	}
	defer resp.Body.Close()
	h.body.Reset()
	if wantBody {
		_, err = h.body.ReadFrom(io.LimitReader(resp.Body, maxBodyBytes+1))
		if err == nil && h.body.Len() > maxBodyBytes {
			return 0, nil, window.Other
		}
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return 0, nil, classify(err)
	}
	if !wantBody {
		return resp.StatusCode, nil, window.OK
	}
	return resp.StatusCode, h.body.Bytes(), window.OK
}

func (h *h2Conn) close() { h.tr.CloseIdleConnections() }

func (h *h2Conn) connectFailed() bool { return h.dialFailed }

func (h *httpConn) connectFailed() bool { return h.dialFailed }
