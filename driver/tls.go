package driver

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// setProtocol checks proto against the target's scheme and, for https,
// builds the run's TLS client settings from t.
func (ep *endpoint) setProtocol(proto string, t *scenarios.TLS) error {
	https := ep.url.Scheme == "https"
	switch proto {
	case "", scenarios.ProtocolH1:
		proto = ""
	case scenarios.ProtocolH2:
		if !https {
			return invalidf("target %s: protocol h2 is HTTP/2 over TLS and needs an https:// target (h2c is cleartext HTTP/2)", ep.url.Redacted())
		}
	case scenarios.ProtocolH2C:
		if https {
			return invalidf("target %s: protocol h2c is cleartext HTTP/2; for an https:// target use h2", ep.url.Redacted())
		}
	default:
		return invalidf("protocol %q is not one of h1, h2, h2c", proto)
	}
	ep.proto = proto
	if !https {
		if t != nil && (t.CAFile != "" || t.ServerName != "" || t.InsecureSkipVerify) {
			return invalidf("target %s: tls settings need an https:// target", ep.url.Redacted())
		}
		return nil
	}
	cfg := &tls.Config{ServerName: ep.url.Hostname(), MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if proto == scenarios.ProtocolH2 {
		cfg.NextProtos = []string{"h2"}
	}
	if t != nil {
		if t.ServerName != "" {
			cfg.ServerName = t.ServerName
		}
		cfg.InsecureSkipVerify = t.InsecureSkipVerify
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return invalidf("tls.ca_file: %v", shortPathError(err))
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return invalidf("tls.ca_file %s: no PEM certificate in it", t.CAFile)
			}
			cfg.RootCAs = pool
		}
	}
	ep.tls = cfg
	ep.hs = newTLSStats()
	return nil
}

func shortPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe
	}
	return err
}

// vuTLS returns one VU's TLS settings: the run's, with a session cache of
// the VU's own, so a VU that reconnects resumes its own session (as a
// browser does) rather than another VU's. Nil for an http target.
func (ep *endpoint) vuTLS() *tls.Config {
	if ep.tls == nil {
		return nil
	}
	c := ep.tls.Clone()
	c.ClientSessionCache = tls.NewLRUClientSessionCache(2)
	return c
}

// handshake runs the TLS client handshake on c within deadline and records
// its duration; on failure c is closed.
func (ep *endpoint) handshake(c net.Conn, cfg *tls.Config, deadline time.Time) (*tls.Conn, error) {
	tc := tls.Client(c, cfg)
	if err := c.SetDeadline(deadline); err != nil {
		_ = c.Close()
		return nil, err
	}
	start := time.Now()
	err := tc.Handshake()
	took := time.Since(start)
	if err != nil {
		ep.hs.failed()
		_ = c.Close()
		return nil, err
	}
	ep.hs.record(took, tc.ConnectionState().DidResume)
	return tc, nil
}

// ioConn is a net.Conn whose Read and Write go through other functions (the
// raw socket I/O of sockio_linux.go): crypto/tls then keeps the driver on
// one thread like the plain path.
type ioConn struct {
	net.Conn
	rd io.Reader
	wr io.Writer
}

func (c *ioConn) Read(p []byte) (int, error)  { return c.rd.Read(p) }
func (c *ioConn) Write(p []byte) (int, error) { return c.wr.Write(p) }

func withIO(c net.Conn, rd io.Reader, wr io.Writer) net.Conn {
	if rd == io.Reader(c) {
		return c
	}
	return &ioConn{Conn: c, rd: rd, wr: wr}
}

// tlsStats collects a run's handshakes. Handshakes are rare (one per
// connection), so one mutex is enough.
type tlsStats struct {
	mu                  sync.Mutex
	hist                *hdrhistogram.Histogram
	done, resumed, fail int64
}

func newTLSStats() *tlsStats { return &tlsStats{hist: window.NewHistogram()} }

func (s *tlsStats) record(d time.Duration, resumed bool) {
	s.mu.Lock()
	window.Record(s.hist, d.Microseconds())
	s.done++
	if resumed {
		s.resumed++
	}
	s.mu.Unlock()
}

func (s *tlsStats) failed() {
	s.mu.Lock()
	s.fail++
	s.mu.Unlock()
}

// collect returns the window's handshakes and starts the next window.
func (s *tlsStats) collect() (*window.TLS, error) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &window.TLS{Handshakes: s.done, Resumed: s.resumed, Failed: s.fail, HandshakeMs: window.LatencyOf(s.hist)}
	b, err := window.EncodeHistogram(s.hist)
	t.Histogram = b
	s.hist.Reset()
	s.done, s.resumed, s.fail = 0, 0, 0
	return t, err
}

// collectProtocols adds the window's TLS handshakes and WebSocket sessions.
func (r *run) collectProtocols(w *window.Window) {
	var err error
	if w.TLS, err = r.ep.hs.collect(); err != nil {
		r.log.Error("tls handshake histogram not encoded", "index", w.Index, "err", err)
	}
	if w.WebSocket, err = r.ws.collect(); err != nil {
		r.log.Error("websocket ping histogram not encoded", "index", w.Index, "err", err)
	}
}
