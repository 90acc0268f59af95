// Package charts is longhaul's browser UI: the runs, a run with its
// per-window charts, and a comparison, rendered on the server (html/template
// and SVG drawn by gonum/plot) from the result store. Every byte it serves
// is in the binary (go:embed): it works offline, with a little JavaScript
// of its own for hover values, range zoom and live updates.
//
// Recipe:
//
//  1. ui, err := charts.Listen(charts.Options{Addr: "127.0.0.1:8099", Store: st})
//  2. fmt.Println("UI at", ui.URL()); defer ui.Close()
//  3. or mount charts.New(opts).Handler() on a server of your own, and
//     charts.WriteRunPage for one self-contained HTML file.
//
// The UI is read-only (GET and HEAD only). Bound to a loopback address it
// accepts only requests whose Host header names that address or localhost
// (a DNS-rebinding page cannot read it); bound to any other address it
// requires a token. Every response carries a Content-Security-Policy that
// allows only the UI's own scripts and styles.
//
// The package reads the store; it never imports Temporal or testcontainers.
package charts

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// Reader is what the UI reads from the result store; store.Store has it.
type Reader interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	ListRuns(ctx context.Context, opts store.ListOptions) ([]store.Run, error)
	CountRuns(ctx context.Context, opts store.ListOptions) (int, error)
	Counts(ctx context.Context, runIDs []string) (map[string]store.RunCounts, error)
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
	Spans(ctx context.Context, runID string, q store.SpanQuery) ([]store.Span, error)
	Findings(ctx context.Context, runID string) ([]analysis.Finding, error)
	Notifications(ctx context.Context, runID string) ([]store.Notification, error)
}

var _ Reader = store.Store(nil)

// Options configure the UI.
type Options struct {
	Store Reader
	// Addr is where Listen binds (default DefaultAddr; port 0 picks a free one).
	Addr string
	// Token, when set, is required of every request (?token=, then a
	// cookie). Listen refuses a non-loopback Addr without one.
	Token string
	// Poll is how often an open page of a running run asks for news
	// (default 2 s).
	Poll time.Duration
	// MaxPoints caps the points per chart series (default
	// store.DefaultMaxPoints): longer ranges are merged exactly.
	MaxPoints int
	// Log receives request errors (default: discarded).
	Log *slog.Logger
	// Schedules lists the schedules for the schedules page (nil: the page
	// says there is no Temporal server to ask; a schedule's own page reads
	// the store and works without).
	Schedules Schedules
	// AnyPortIfTaken: when Addr's port is taken, Listen serves on a free
	// port of the same host instead (`longhaul dev`, whose UI is a
	// convenience, not an address anyone configured).
	AnyPortIfTaken bool
}

// DefaultAddr is the UI's address when Options.Addr is empty.
const DefaultAddr = "127.0.0.1:8099"

// TokenCookie is the cookie that carries the token after the first visit.
const TokenCookie = "longhaul_ui_token"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

var templates = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))

// Server serves the UI. Create it with New.
type Server struct {
	opts Options
	// allowedHosts are the Host headers accepted; nil accepts any (a
	// non-loopback bind, where the token protects instead).
	allowedHosts map[string]bool
	mux          *http.ServeMux
}

// view is one page or download: a handler that writes w or returns an error.
type view func(w http.ResponseWriter, r *http.Request) error

// New returns the UI server over opts.Store. The Host check is set from
// opts.Addr (Listen sets it to the bound address).
func New(opts Options) *Server {
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	s.allowedHosts = allowedHosts(opts.Addr)
	// One handler per view, as pprof's web UI has it.
	views := map[string]view{
		"/{$}":                            s.runsPage,
		"/runs/{id}":                      s.runPage,
		"/runs/{id}/live":                 s.runLive,
		"/runs/{id}/state":                s.runState,
		"/runs/{id}/points":               s.runPoints,
		"/runs/{id}/windows.csv":          s.windowsCSV,
		"/runs/{id}/windows.json":         s.windowsJSON,
		"/runs/{id}/scenario.yaml":        s.scenarioYAML,
		"/runs/{id}/logs/{source}":        s.runLog,
		"/comparisons/{id}":               s.comparisonPage,
		"/runs/{id}/profile":              s.profilePage,
		"/runs/{id}/profile.pb.gz":        s.profileDownload,
		"/comparisons/{id}/profile":       s.profilePage,
		"/comparisons/{id}/profile.pb.gz": s.profileDownload,
		"/schedules":                      s.schedulesPage,
		"/schedules/{name}":               s.schedulePage,
	}
	for pattern, v := range views {
		s.mux.Handle("GET "+pattern, s.handle(v))
	}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return s
}

// Handler returns the UI with its security checks in front.
func (s *Server) Handler() http.Handler { return s.secure(s.mux) }

// errNotFound and errBadRequest map to 404 and 400.
var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
)

func (s *Server) handle(v view) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := v(w, r)
		switch {
		case err == nil:
		case errors.Is(err, errNotFound) || errors.Is(err, store.ErrNotFound):
			s.errorPage(w, http.StatusNotFound, err)
		case errors.Is(err, errBadRequest):
			s.errorPage(w, http.StatusBadRequest, err)
		case errors.Is(err, context.Canceled):
		default:
			s.opts.Log.Error("ui request", "path", r.URL.Path, "err", err)
			s.errorPage(w, http.StatusInternalServerError, err)
		}
	})
}

func (s *Server) errorPage(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = templates.ExecuteTemplate(w, "error.html", map[string]any{"Code": code, "Status": http.StatusText(code), "Err": err.Error(), "Page": page{Title: http.StatusText(code)}})
}

// render writes one page from its template: the one way every page is written.
func render(w http.ResponseWriter, name string, data any) error {
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err := w.Write([]byte(b.String()))
	return err
}

// csp allows the UI's own scripts, styles and requests only; inline SVG
// uses presentation attributes, never style attributes.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// secure checks the method, the Host header and the token, and sets the
// security headers on every response.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the longhaul UI is read-only", http.StatusMethodNotAllowed)
			return
		}
		if s.allowedHosts != nil && !s.allowedHosts[strings.ToLower(r.Host)] {
			http.Error(w, "unknown Host header (this UI answers to its own address and localhost only)", http.StatusForbidden)
			return
		}
		if s.opts.Token != "" {
			if t := r.URL.Query().Get("token"); t != "" {
				if !equalToken(t, s.opts.Token) {
					http.Error(w, "wrong token", http.StatusUnauthorized)
					return
				}
				http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				q := r.URL.Query()
				q.Del("token")
				u := *r.URL
				u.RawQuery = q.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther) // the token leaves the address bar
				return
			}
			c, err := r.Cookie(TokenCookie)
			if err != nil || !equalToken(c.Value, s.opts.Token) {
				http.Error(w, "this UI needs its token: open the address longhaul printed (with ?token=...)", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func equalToken(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// allowedHosts returns the Host headers a loopback bind accepts, or nil for
// a non-loopback one.
func allowedHosts(addr string) map[string]bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return map[string]bool{}
	}
	if !isLoopback(host) {
		return nil
	}
	hosts := map[string]bool{}
	for _, h := range []string{host, "localhost", "127.0.0.1", "[::1]"} {
		if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
			h = "[" + h + "]"
		}
		hosts[strings.ToLower(h)+":"+port] = true
	}
	return hosts
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Running is a UI being served by Listen.
type Running struct {
	srv *http.Server
	url string
}

// Listen binds opts.Addr and serves the UI until Close. It refuses a
// non-loopback address without a token.
func Listen(opts Options) (*Running, error) {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("ui address %q: want HOST:PORT", opts.Addr)
	}
	if !isLoopback(host) && opts.Token == "" {
		return nil, fmt.Errorf("ui address %s is not loopback: it needs a token (--token or LONGHAUL_UI_TOKEN)", opts.Addr)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil && opts.AnyPortIfTaken && errors.Is(err, syscall.EADDRINUSE) {
		opts.Addr = net.JoinHostPort(host, "0")
		ln, err = net.Listen("tcp", opts.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("ui address %s: %w", opts.Addr, err)
	}
	opts.Addr = ln.Addr().String()
	if host == "localhost" {
		_, port, _ := net.SplitHostPort(opts.Addr)
		opts.Addr = net.JoinHostPort("localhost", port)
	}
	s := New(opts)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	u := "http://" + opts.Addr + "/"
	if opts.Token != "" {
		u += "?token=" + url.QueryEscape(opts.Token)
	}
	return &Running{srv: srv, url: u}, nil
}

// URL is the UI's address (with the token when one is set).
func (r *Running) URL() string { return r.url }

// RunURL is the address of one run's page.
func (r *Running) RunURL(id string) string {
	u, _ := url.Parse(r.url)
	u.Path = "/runs/" + url.PathEscape(id)
	return u.String()
}

// ComparisonURL is the address of one comparison's page.
func (r *Running) ComparisonURL(id string) string {
	u, _ := url.Parse(r.url)
	u.Path = "/comparisons/" + url.PathEscape(id)
	return u.String()
}

// Close stops serving.
func (r *Running) Close() error { return r.srv.Close() }
