package driver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// Limits of the HTTP/1.1 client. A response head larger than maxHeadBytes or
// a captured body larger than maxBodyBytes is a malformed response (class
// Other) and closes the connection; bodies that nobody captures are read
// through whatever their size.
const (
	initialReadBytes = 4 << 10
	maxHeadBytes     = 1 << 20
	maxBodyBytes     = 16 << 20
)

// rawSocketIO selects sockIO for connections (see sockio_linux.go). Setting
// LONGHAUL_DRIVER_NETCONN=1 in the environment falls back to net.Conn's own
// Read and Write: a diagnostics switch, and the baseline of the benchmark
// that justifies sockIO.
var rawSocketIO = rawSocketIOSupported && os.Getenv("LONGHAUL_DRIVER_NETCONN") == ""

// errMalformed reports a response the client cannot parse.
var errMalformed = errors.New("malformed HTTP response")

// endpoint is what every connection of a run shares: where to dial and the
// constant parts of each request.
type endpoint struct {
	addr     string // host:port to dial (an IP literal)
	host     []byte // "Host: ...\r\n"
	basePath []byte // target URL path without a trailing slash ("" or "/api")
	dialer   net.Dialer
	custom   Dialer // Options.Dialer; nil: dialer

	// https targets (see tls.go): the run's TLS client settings, cloned per
	// VU with a session cache of its own, and the handshakes' recorder.
	tls   *tls.Config
	hs    *tlsStats
	proto string // scenarios.ProtocolH1 (""), ProtocolH2, ProtocolH2C
	url   *url.URL
}

// httpConn is one keep-alive HTTP/1.1 connection, owned by one VU and never
// used concurrently. It is a deliberately small client: one write per
// request, a reused read buffer, Content-Length, chunked and
// read-until-close bodies, no pipelining; TLS through crypto/tls over the
// same raw socket I/O (tls.go). Measured against
// net/http and fasthttp in bench/driver/RESULTS.md.
//
// Stop may be called from another goroutine to abort the exchange in flight.
type httpConn struct {
	ep   *endpoint
	tls  *tls.Config // per VU (session resumption); nil for http
	conn net.Conn
	rd   io.Reader // sock, or a test reader
	wr   io.Writer // sock

	wbuf []byte
	rbuf []byte
	r, w int // rbuf[r:w] is received and not yet consumed

	body   []byte // the last response body, when captured
	reused bool   // conn has carried a complete exchange before
	got    int    // bytes received for the exchange in progress
	// dialFailed is set by do when the request failed because no
	// connection could be opened: nothing reached the target.
	dialFailed bool
}

func newHTTPConn(ep *endpoint) *httpConn {
	return &httpConn{ep: ep, tls: ep.vuTLS(), wbuf: make([]byte, 0, 512), rbuf: make([]byte, initialReadBytes)}
}

// do sends req and reads the response. On success it returns the status, the
// body (only when wantBody; valid until the next call) and window.OK; on a
// transport failure it returns the failure's class and closes the connection,
// and sets dialFailed when the failure was opening the connection.
// deadline bounds the whole exchange, dial included.
func (h *httpConn) do(req *scenarios.Rendered, wantBody bool, deadline time.Time) (int, []byte, window.Class) {
	h.dialFailed = false
	fresh := h.conn == nil
	if fresh {
		if c := h.dial(deadline); c != window.OK {
			h.dialFailed = true
			return 0, nil, c
		}
	}
	status, body, err := h.exchange(req, wantBody, deadline)
	if err != nil && !fresh && h.got == 0 && idempotent(req.Method) && isStale(err) {
		// Subtleness ahead: a server may close an idle keep-alive connection
		// just as we reuse it. Nothing of the response arrived, so retry once
		// on a fresh connection, as browsers and net/http do for idempotent
		// methods. A server that resets every request fails the retry too and
		// is counted as reset.
		h.close()
		if c := h.dial(deadline); c != window.OK {
			h.dialFailed = true
			return 0, nil, c
		}
		status, body, err = h.exchange(req, wantBody, deadline)
	}
	if err != nil {
		h.close()
		return 0, nil, classify(err)
	}
	return status, body, window.OK
}

func (h *httpConn) dial(deadline time.Time) window.Class {
	var c net.Conn
	var err error
	if h.ep.custom != nil {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		c, err = h.ep.custom.DialContext(ctx, "tcp", h.ep.addr)
		cancel()
	} else {
		d := h.ep.dialer
		d.Deadline = deadline
		c, err = d.Dial("tcp", h.ep.addr)
	}
	if err != nil {
		return classify(err)
	}
	h.conn, h.rd, h.wr = c, c, c
	if _, ok := c.(syscall.Conn); ok && rawSocketIO {
		sock, err := newSockIO(c)
		if err != nil {
			_ = c.Close()
			h.conn = nil
			return window.Other
		}
		h.rd, h.wr = sock, sock
	}
	if h.tls != nil {
		tc, err := h.ep.handshake(withIO(c, h.rd, h.wr), h.tls, deadline)
		if err != nil {
			h.conn, h.rd, h.wr = nil, nil, nil
			return classify(err)
		}
		h.conn, h.rd, h.wr = tc, tc, tc
	}
	h.reused = false
	h.r, h.w = 0, 0
	return window.OK
}

// close drops the connection; the next request dials again.
func (h *httpConn) close() {
	if h.conn != nil {
		_ = h.conn.Close()
		h.conn, h.rd, h.wr = nil, nil, nil
	}
	h.r, h.w = 0, 0
}

func (h *httpConn) exchange(req *scenarios.Rendered, wantBody bool, deadline time.Time) (int, []byte, error) {
	h.got = 0
	if err := h.conn.SetDeadline(deadline); err != nil {
		return 0, nil, err
	}
	h.wbuf = appendRequest(h.wbuf[:0], h.ep, req)
	if _, err := h.wr.Write(h.wbuf); err != nil {
		return 0, nil, err
	}
	status, keep, err := h.readResponse(req.Method == "HEAD", wantBody)
	if err != nil {
		return 0, nil, err
	}
	h.reused = true
	if !keep {
		h.close()
	}
	if !wantBody {
		return status, nil, nil
	}
	return status, h.body, nil
}

// appendRequest writes the request line, headers and body of req to b.
// Host, Content-Length and User-Agent are set by the client; a rendered
// Host or User-Agent header replaces the default, a rendered Content-Length
// or Transfer-Encoding is dropped (the client frames the body itself).
func appendRequest(b []byte, ep *endpoint, req *scenarios.Rendered) []byte {
	method := req.Method
	if method == "" {
		method = "GET"
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, ep.basePath...)
	if len(req.PathQuery) == 0 || req.PathQuery[0] != '/' {
		b = append(b, '/')
	}
	b = append(b, req.PathQuery...)
	b = append(b, " HTTP/1.1\r\n"...)
	var haveHost, haveUA bool
	for i := range req.Headers {
		k := req.Headers[i].Key
		switch {
		case equalFold(k, "content-length"), equalFold(k, "transfer-encoding"):
			continue
		case equalFold(k, "host"):
			haveHost = true
		case equalFold(k, "user-agent"):
			haveUA = true
		}
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, req.Headers[i].Value...)
		b = append(b, "\r\n"...)
	}
	if !haveHost {
		b = append(b, ep.host...)
	}
	if !haveUA {
		b = append(b, "User-Agent: longhaul\r\n"...)
	}
	if len(req.Body) > 0 || method == "POST" || method == "PUT" || method == "PATCH" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, req.Body...)
}

// fill reads more bytes into rbuf, compacting or growing it (up to limit) first.
func (h *httpConn) fill(limit int) error {
	if h.r == h.w {
		h.r, h.w = 0, 0
	}
	if h.w == len(h.rbuf) {
		if h.r > 0 {
			n := copy(h.rbuf, h.rbuf[h.r:h.w])
			h.r, h.w = 0, n
		} else {
			if len(h.rbuf) >= limit {
				return errMalformed
			}
			nb := make([]byte, 2*len(h.rbuf))
			copy(nb, h.rbuf[:h.w])
			h.rbuf = nb
		}
	}
	n, err := h.rd.Read(h.rbuf[h.w:])
	h.w += n
	h.got += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// line returns the next CRLF- (or LF-) terminated line without its
// terminator and consumes it. The slice is valid until the next fill.
func (h *httpConn) line() ([]byte, error) {
	scanned := 0
	for {
		if i := bytes.IndexByte(h.rbuf[h.r+scanned:h.w], '\n'); i >= 0 {
			end := h.r + scanned + i
			ln := h.rbuf[h.r:end]
			h.r = end + 1
			if n := len(ln); n > 0 && ln[n-1] == '\r' {
				ln = ln[:n-1]
			}
			return ln, nil
		}
		scanned = h.w - h.r
		if err := h.fill(maxHeadBytes); err != nil {
			return nil, err
		}
	}
}

// readResponse reads one response, skipping 1xx interim responses, and
// returns its status and whether the connection may be kept.
func (h *httpConn) readResponse(head, wantBody bool) (status int, keep bool, err error) {
	h.body = h.body[:0]
	for {
		status, keep, err = h.readOne(head, wantBody)
		if err != nil || status >= 200 || status == 101 {
			break
		}
	}
	if status == 101 { // a protocol switch nobody asked for
		return 0, false, errMalformed
	}
	return status, keep, err
}

func (h *httpConn) readOne(head, wantBody bool) (int, bool, error) {
	ln, err := h.line()
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK"
	if len(ln) < 12 || !bytes.HasPrefix(ln, []byte("HTTP/1.")) || ln[8] != ' ' {
		return 0, false, errMalformed
	}
	http10 := ln[7] == '0'
	status := 0
	for _, c := range ln[9:12] {
		if c < '0' || c > '9' {
			return 0, false, errMalformed
		}
		status = status*10 + int(c-'0')
	}
	if len(ln) > 12 && ln[12] != ' ' {
		return 0, false, errMalformed
	}
	keep := !http10
	contentLength := int64(-1)
	chunked := false
	for {
		ln, err := h.line()
		if err != nil {
			return 0, false, err
		}
		if len(ln) == 0 {
			break
		}
		colon := bytes.IndexByte(ln, ':')
		if colon <= 0 {
			return 0, false, errMalformed
		}
		name, value := ln[:colon], bytes.TrimSpace(ln[colon+1:])
		switch {
		case equalFold(name, "content-length"):
			n, ok := parseDecimal(value)
			if !ok || (contentLength >= 0 && n != contentLength) {
				return 0, false, errMalformed
			}
			contentLength = n
		case equalFold(name, "transfer-encoding"):
			chunked = hasTokenFold(value, "chunked")
		case equalFold(name, "connection"):
			if hasTokenFold(value, "close") {
				keep = false
			} else if hasTokenFold(value, "keep-alive") {
				keep = true
			}
		}
	}
	if status < 200 {
		return status, keep, nil
	}
	if head || status == 204 || status == 304 {
		return status, keep, nil
	}
	switch {
	case chunked:
		return status, keep, h.readChunked(wantBody)
	case contentLength >= 0:
		return status, keep, h.readFixed(contentLength, wantBody)
	default:
		// No framing: the body runs until the server closes the connection.
		return status, false, h.readToEOF(wantBody)
	}
}

// take consumes up to n buffered bytes, appending them to the body when wanted.
func (h *httpConn) take(n int64, wantBody bool) (int64, error) {
	avail := int64(h.w - h.r)
	if avail > n {
		avail = n
	}
	if wantBody && avail > 0 {
		if len(h.body)+int(avail) > maxBodyBytes {
			return 0, errMalformed
		}
		h.body = append(h.body, h.rbuf[h.r:h.r+int(avail)]...)
	}
	h.r += int(avail)
	return avail, nil
}

func (h *httpConn) readFixed(n int64, wantBody bool) error {
	for n > 0 {
		if h.r == h.w {
			if err := h.fill(maxHeadBytes); err != nil {
				return unexpectedEOF(err)
			}
		}
		got, err := h.take(n, wantBody)
		if err != nil {
			return err
		}
		n -= got
	}
	return nil
}

func (h *httpConn) readChunked(wantBody bool) error {
	for {
		ln, err := h.line()
		if err != nil {
			return unexpectedEOF(err)
		}
		if i := bytes.IndexByte(ln, ';'); i >= 0 {
			ln = ln[:i]
		}
		size, ok := parseHex(bytes.TrimSpace(ln))
		if !ok {
			return errMalformed
		}
		if size == 0 {
			break
		}
		if err := h.readFixed(size, wantBody); err != nil {
			return err
		}
		ln, err = h.line()
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(ln) != 0 {
			return errMalformed
		}
	}
	for { // trailers
		ln, err := h.line()
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(ln) == 0 {
			return nil
		}
	}
}

func (h *httpConn) readToEOF(wantBody bool) error {
	for {
		if _, err := h.take(int64(h.w-h.r), wantBody); err != nil {
			return err
		}
		if err := h.fill(maxHeadBytes); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// unexpectedEOF turns a clean EOF inside a response into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// classify maps a transport error to its class.
func classify(err error) window.Class {
	switch {
	case err == nil:
		return window.OK
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return window.Timeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return window.Refused
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED):
		return window.Reset
	default:
		return window.Other
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isStale reports whether err looks like a keep-alive connection the server
// had already closed.
func isStale(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func idempotent(method string) bool {
	switch method {
	case "", "GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE":
		return true
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares s with the lower-case ASCII word w, ignoring case.
func equalFold[T string | []byte](s T, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lower(s[i]) != w[i] {
			return false
		}
	}
	return true
}

// hasTokenFold reports whether the comma-separated list v contains token
// (lower-case), ignoring case.
func hasTokenFold(v []byte, token string) bool {
	for len(v) > 0 {
		var item []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			item, v = v, nil
		}
		if equalFold(bytes.TrimSpace(item), token) {
			return true
		}
	}
	return false
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}
