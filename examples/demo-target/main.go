// Command demo-target is the HTTP API longhaul soaks in its demo and its
// end-to-end tests: a small Parse-like backend (sign-up and login with bcrypt,
// session tokens, items CRUD with list, batch create) over PostgreSQL, MySQL,
// MongoDB or an embedded SQLite file, with two switches that plant the faults
// longhaul must find.
//
// Run it:
//
//	go run ./examples/demo-target                                   # SQLite in a temp file, :8080
//	DATABASE_URL=postgres://u:p@127.0.0.1:5432/db go run ./examples/demo-target
//	DEMO_INDEX_BUCKET=false go run ./examples/demo-target           # list cost grows with the table
//	DEMO_LEAK_BYTES=2048 go run ./examples/demo-target              # every request retains 2 KiB
//	DEMO_CPU_BURN_US=40 go run ./examples/demo-target               # every request burns 40 µs of CPU
//	DEMO_ALLOC_BYTES=4096 go run ./examples/demo-target             # every request allocates and drops 4 KiB
//	DEMO_DB_SLEEP_MS=20 DATABASE_URL='postgres://…?pool_max_conns=1' go run ./examples/demo-target   # a pool wall
//	DEMO_RESPONSE_VARIANT=1 go run ./examples/demo-target           # GET /items answers a little differently
//
// Environment:
//
//	PORT               listen port on all interfaces (default 8080; 0 picks a free one)
//	DATABASE_URL       PostgreSQL connection string (pgx; pool_max_conns defaults to 16), or
//	                   mysql:// / mariadb:// (MySQL), or mongodb://host:port/NAME (MongoDB, FerretDB)
//	DEMO_SQLITE        SQLite file when DATABASE_URL is empty (default: a temp file, removed at exit)
//	DEMO_INDEX_BUCKET  false: do not create (and drop) the indexes that serve GET /items
//	DEMO_LEAK_BYTES    N > 0: every request appends an N-byte allocation to a slice never freed
//	DEMO_CPU_BURN_US   N > 0: every request burns N µs of CPU in a loop on its own goroutine
//	                   (calibrated against thread CPU time at start)
//	DEMO_ALLOC_BYTES   N > 0: every request allocates N bytes on the heap and drops them
//	DEMO_DB_SLEEP_MS   N > 0: every API request first holds a pooled database connection N ms
//	                   (SELECT pg_sleep, or SLEEP on MySQL): a slow query that costs no CPU;
//	                   with a small pool (pool_max_conns=1) throughput stops at the pool
//	                   (garbage for the GC: bytes allocated per request grow by N)
//	DEMO_RESPONSE_VARIANT  1: GET /items adds "cursor":null to its answer (a response
//	                   difference for comparisons' equivalence check to find)
//	DEMO_WS_LEAK_BYTES N > 0: every WebSocket connection retains N bytes forever
//	DEMO_WS_STALL_AFTER  a duration: that long after start, WebSocket connections are
//	                   no longer read (pings go unanswered, echoes stop)
//	DEMO_WS_UNCLOSED   true: the server never closes a WebSocket connection; once its
//	                   client has closed its end, the socket sits in CLOSE_WAIT
//	DEMO_WS_TICK       the /ws/ticker push interval (default 1s)
//	DEMO_TLS_CERT, DEMO_TLS_KEY  PEM files: serve HTTPS (HTTP/1.1 and HTTP/2 by ALPN)
//	                   instead of cleartext HTTP/1.1 and h2c (HTTP/2 with prior knowledge)
//
// HTTP API (JSON bodies; writes need "Authorization: Bearer <token>", reads
// validate a token when one is sent):
//
//	POST   /users         {"username","password"} → 201 {"id","username"}; 409 taken
//	POST   /login         {"username","password"} → 200 {"token","user_id"}; 401
//	GET    /items         ?bucket=N&limit=L → 200 {"items":[...]} newest first; limit ≤ 100
//	POST   /items         {"bucket","title","payload":{}} → 201 item
//	POST   /items/batch   {"items":[...]} (1–100) → 201 {"ids":[...]}
//	GET    /items/{id}    → 200 item; 404
//	PUT    /items/{id}    {"title","payload"} (either may be absent) → 200 item; 404
//	DELETE /items/{id}    → 204; 404
//	GET    /health        → 200
//	GET    /metrics       Prometheus text: http_requests_total{route,code},
//	                      http_request_duration_seconds{route}, go_gc_heap_live_bytes, process and Go metrics
//	POST   /debug/gc      forces a GC → {"heap_bytes":N}, the live heap after it
//	GET    /ws/echo       WebSocket: every message echoed back
//	GET    /ws/ticker     WebSocket: {"type":"tick","n":N} pushed every DEMO_WS_TICK
//	GET    /debug/pprof/  net/http/pprof: profile?seconds=N (CPU), heap?gc=1 (live heap), …
//
// An item is {"id","bucket","title","owner","payload","created_at","updated_at"}
// with RFC 3339 timestamps (microsecond precision, UTC).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo-target:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is bad input from the user (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// config is the demo target's configuration, read from the environment.
type config struct {
	Port        int
	DatabaseURL string
	SQLitePath  string
	IndexBucket bool
	LeakBytes   int
	CPUBurnUs   int
	AllocBytes  int
	DBSleep     time.Duration
	Variant     int
	TLSCert     string
	TLSKey      string
	WebSocket   wsOptions
}

func configFromEnv(getenv func(string) string) (config, error) {
	c := config{Port: 8080, IndexBucket: true}
	c.DatabaseURL = getenv("DATABASE_URL")
	c.SQLitePath = getenv("DEMO_SQLITE")
	for _, e := range []struct {
		name string
		max  int
		want string
		to   *int
	}{
		{"PORT", 65535, "a port number 0-65535", &c.Port},
		{"DEMO_LEAK_BYTES", 64 << 20, "a byte count 0-67108864", &c.LeakBytes},
		{"DEMO_CPU_BURN_US", 1_000_000, "microseconds 0-1000000", &c.CPUBurnUs},
		{"DEMO_ALLOC_BYTES", 64 << 20, "a byte count 0-67108864", &c.AllocBytes},
		{"DEMO_RESPONSE_VARIANT", 1, "0 or 1", &c.Variant},
		{"DEMO_WS_LEAK_BYTES", 64 << 20, "a byte count 0-67108864", &c.WebSocket.LeakBytes},
	} {
		if err := envInt(getenv, e.name, e.max, e.want, e.to); err != nil {
			return c, err
		}
	}
	for _, e := range []struct {
		name string
		to   *bool
	}{{"DEMO_INDEX_BUCKET", &c.IndexBucket}, {"DEMO_WS_UNCLOSED", &c.WebSocket.Unclosed}} {
		if v := getenv(e.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return c, usageError{fmt.Sprintf("%s=%q: want true or false", e.name, v)}
			}
			*e.to = b
		}
	}
	sleepMs := 0
	if err := envInt(getenv, "DEMO_DB_SLEEP_MS", 10_000, "milliseconds 0-10000", &sleepMs); err != nil {
		return c, err
	}
	if sleepMs > 0 && c.DatabaseURL == "" {
		return c, usageError{"DEMO_DB_SLEEP_MS needs a database server (DATABASE_URL): SQLite has no sleep"}
	}
	if sleepMs > 0 && isMongoURL(c.DatabaseURL) {
		return c, usageError{"DEMO_DB_SLEEP_MS needs PostgreSQL or MySQL: MongoDB has no sleep that holds a connection without CPU"}
	}
	c.DBSleep = time.Duration(sleepMs) * time.Millisecond
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"DEMO_WS_STALL_AFTER", &c.WebSocket.StallAfter}, {"DEMO_WS_TICK", &c.WebSocket.Tick}} {
		if v := getenv(d.name); v != "" {
			t, err := time.ParseDuration(v)
			if err != nil || t <= 0 {
				return c, usageError{fmt.Sprintf("%s=%q: want a positive duration (30s, 1m)", d.name, v)}
			}
			*d.to = t
		}
	}
	c.TLSCert, c.TLSKey = getenv("DEMO_TLS_CERT"), getenv("DEMO_TLS_KEY")
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, usageError{"DEMO_TLS_CERT and DEMO_TLS_KEY go together: set both (PEM files) or neither"}
	}
	return c, nil
}

// envInt sets *to from the environment variable name when it is set: an
// integer from 0 to max, else a usageError that says what is wanted.
func envInt(getenv func(string) string, name string, max int, want string, to *int) error {
	v := getenv(name)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return usageError{fmt.Sprintf("%s=%q: want %s", name, v, want)}
	}
	*to = n
	return nil
}

// run serves the API until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	if len(args) > 0 {
		return usageError{"takes no arguments; configure it with PORT, DATABASE_URL, DEMO_SQLITE, DEMO_INDEX_BUCKET, DEMO_LEAK_BYTES, DEMO_CPU_BURN_US, DEMO_ALLOC_BYTES, DEMO_DB_SLEEP_MS, DEMO_RESPONSE_VARIANT, DEMO_WS_LEAK_BYTES, DEMO_WS_STALL_AFTER, DEMO_WS_UNCLOSED, DEMO_WS_TICK, DEMO_TLS_CERT, DEMO_TLS_KEY"}
	}
	cfg, err := configFromEnv(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	st, cleanup, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer cleanup()

	ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.Port))
	if err != nil {
		return fmt.Errorf("listen on port %d: %w", cfg.Port, err)
	}
	srv := &http.Server{
		Handler:           newServer(st, serverOptions{LeakBytes: cfg.LeakBytes, CPUBurnUs: cfg.CPUBurnUs, AllocBytes: cfg.AllocBytes, DBSleep: cfg.DBSleep, Variant: cfg.Variant, WebSocket: cfg.WebSocket, Log: log}),
		ConnContext:       withConn,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if cfg.WebSocket.StallAfter > 0 || cfg.WebSocket.Unclosed {
		sl := stallListener{Listener: ln, stall: cfg.WebSocket.StallAfter > 0, at: time.Now().Add(cfg.WebSocket.StallAfter)}
		if cfg.WebSocket.Unclosed {
			sl.unclosed = new(unclosedConns)
		}
		ln = sl
	}
	// Cleartext serves HTTP/1.1 and h2c (prior knowledge), TLS HTTP/1.1 and
	// HTTP/2 by ALPN: every protocol longhaul drives.
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	if cfg.TLSCert != "" {
		srv.Protocols.SetHTTP2(true)
	} else {
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	log.Info("listening", "addr", ln.Addr().String(), "tls", cfg.TLSCert != "", "index_bucket", cfg.IndexBucket, "leak_bytes", cfg.LeakBytes,
		"cpu_burn_us", cfg.CPUBurnUs, "alloc_bytes", cfg.AllocBytes, "db_sleep", cfg.DBSleep, "response_variant", cfg.Variant)

	served := make(chan error, 1)
	go func() {
		if cfg.TLSCert != "" {
			served <- srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
			return
		}
		served <- srv.Serve(ln)
	}()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := shutdownContext()
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown", "err", err)
	}
	log.Info("stopped")
	return nil
}

// openStore opens MongoDB (a mongodb:// URL), MySQL (mysql://, mariadb://)
// or PostgreSQL when cfg.DatabaseURL is set, else SQLite; cleanup
// closes it and removes a temporary SQLite file.
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store, func(), error) {
	if isMongoURL(cfg.DatabaseURL) {
		st, err := openMongo(ctx, cfg.DatabaseURL, cfg.IndexBucket, log)
		if err != nil {
			return nil, nil, err
		}
		return st, st.close, nil
	}
	if isMySQLURL(cfg.DatabaseURL) {
		st, err := openMySQL(ctx, cfg.DatabaseURL, cfg.IndexBucket, log)
		if err != nil {
			return nil, nil, err
		}
		return st, st.close, nil
	}
	if cfg.DatabaseURL != "" {
		st, err := openPostgres(ctx, cfg.DatabaseURL, cfg.IndexBucket, log)
		if err != nil {
			return nil, nil, err
		}
		return st, st.close, nil
	}
	path, tempDir := cfg.SQLitePath, ""
	if path == "" {
		dir, err := os.MkdirTemp("", "demo-target-")
		if err != nil {
			return nil, nil, fmt.Errorf("create a temp dir for SQLite (set DEMO_SQLITE): %w", err)
		}
		path, tempDir = filepath.Join(dir, "demo.db"), dir
	}
	if strings.ContainsAny(path, "?#") {
		return nil, nil, usageError{fmt.Sprintf("DEMO_SQLITE=%q: a file path without ? or #", path)}
	}
	st, err := openSQLite(ctx, path, cfg.IndexBucket, log)
	if err != nil {
		if tempDir != "" {
			os.RemoveAll(tempDir)
		}
		return nil, nil, err
	}
	return st, func() {
		st.close()
		if tempDir != "" {
			os.RemoveAll(tempDir)
		}
	}, nil
}
