// Package devserver runs an embedded, file-backed Temporal server inside the
// longhaul process: the one-machine default, with nothing to install.
//
// Recipe:
//
//  1. Start(ctx, Options{DataDir: dir}) creates (or reopens) dir/temporal.db,
//     sets up the schema and the namespace on a new file, and serves the
//     frontend on 127.0.0.1 (port 7233 unless it is taken or another is given).
//  2. Dial a client at Address() and start workers as with any cluster.
//  3. Stop() shuts it down. Workflows in flight are persisted: they continue
//     when a server is started again on the same file, even after a crash.
//
// Only this package and cmd/longhaul import go.temporal.io/server (a 5–10
// minute cold compile); everything else talks to Temporal through the SDK.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	persistencesql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// Defaults applied by Start to zero Options fields.
const (
	// DefaultPort is the frontend port used when Options.Port is 0 and it is free.
	DefaultPort = 7233
	// DefaultNamespace is created on a new database file.
	DefaultNamespace = "default"
	// DBFileName is the SQLite file under Options.DataDir.
	DBFileName = "temporal.db"
	// DefaultLongPoll is the history service's long-poll expiration. The
	// server's default (20 s) can delay a client waiting on a just-finished
	// workflow by up to 20 s right after start-up; a dev server wants seconds.
	DefaultLongPoll = 3 * time.Second
)

// host is the only address the embedded server binds: it is a dev server for
// this machine, never exposed.
const host = "127.0.0.1"

// Options configure Start. The zero value (with DataDir set) is usable.
type Options struct {
	// DataDir holds the SQLite file DBFileName; it is created if missing.
	DataDir string
	// Port of the frontend on 127.0.0.1. 0 means DefaultPort, or a free port
	// when DefaultPort is taken. A non-zero port that is taken is an error.
	Port int
	// Namespace to create when missing (DefaultNamespace when empty).
	Namespace string
	// Logger receives the server's warnings and errors (nil: slog.Default()).
	// Its info and debug output is dropped: it is chatty and of no use to a
	// longhaul user.
	Logger *slog.Logger
	// LongPoll overrides DefaultLongPoll when > 0.
	LongPoll time.Duration
}

// Server is a running embedded Temporal server. Its methods are safe for
// concurrent use; Stop is idempotent.
type Server struct {
	srv       temporal.Server
	address   string
	namespace string
	dbPath    string
	lock      *dirLock
	stopping  *atomic.Bool
	stopOnce  sync.Once
	stopErr   error
}

// Start starts a server on opts.DataDir/temporal.db and returns once its
// frontend accepts connections. ctx bounds the start-up.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("start temporal dev server: no data directory given")
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LongPoll <= 0 {
		opts.LongPoll = DefaultLongPoll
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("start temporal dev server: create data directory: %w", err)
	}
	dbPath := filepath.Join(opts.DataDir, DBFileName)

	port, err := pickFrontendPort(opts.Port)
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	cfg, err := serverConfig(dbPath, port)
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	sqlCfg := cfg.Persistence.DataStores[sqliteplugin.PluginName].SQL

	lock, err := lockDataDir(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	started := false
	defer func() {
		if !started {
			lock.release()
		}
	}()

	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			_ = os.Remove(dbPath) // a half-made file would be taken as set up next time
			return nil, fmt.Errorf("start temporal dev server: set up schema in %s: %w", dbPath, err)
		}
	} else if err := forgetMembers(sqlCfg); err != nil {
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	ns, err := sqlite.NewNamespaceConfig(cfg.ClusterMetadata.CurrentClusterName, opts.Namespace, false, nil)
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server: namespace %q: %w", opts.Namespace, err)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, fmt.Errorf("start temporal dev server: create namespace %q: %w", opts.Namespace, err)
	}

	dc := dynamicconfig.StaticClient{
		dynamicconfig.HistoryLongPollExpirationInterval.Key(): []dynamicconfig.ConstrainedValue{{Value: opts.LongPoll}},
	}
	stopping := new(atomic.Bool)
	srv, err := startServer(cfg, dc, newServerLogger(opts.Logger, stopping))
	// Subtleness ahead: every port was free when it was chosen, but another
	// process (a second longhaul on this machine, a parallel test) may bind
	// one before the server does. Ports we chose ourselves are chosen again;
	// a port the caller asked for is theirs to change.
	for retry := 0; retry < startRetries && addrInUse(err); retry++ {
		if opts.Port == 0 {
			if port, err = pickFrontendPort(0); err != nil {
				break
			}
		}
		if cfg, err = serverConfig(dbPath, port); err != nil {
			break
		}
		srv, err = startServer(cfg, dc, newServerLogger(opts.Logger, stopping))
	}
	if err != nil {
		return nil, fmt.Errorf("start temporal dev server on %s: %w", dbPath, err)
	}
	s := &Server{srv: srv, address: net.JoinHostPort(host, strconv.Itoa(port)), namespace: opts.Namespace, dbPath: dbPath, lock: lock, stopping: stopping}
	started = true
	if err := waitAccepting(ctx, s.address); err != nil {
		s.Stop()
		return nil, fmt.Errorf("start temporal dev server: %w", err)
	}
	return s, nil
}

// Address is the frontend's host:port, for client.Options.HostPort or
// `longhaul run --temporal`.
func (s *Server) Address() string { return s.address }

// Namespace is the namespace the server was started with.
func (s *Server) Namespace() string { return s.namespace }

// DBPath is the SQLite file holding the server's state.
func (s *Server) DBPath() string { return s.dbPath }

// Stop shuts the server down. It is idempotent; the first call's error (if
// any) is returned by every call.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		if err := s.srv.Stop(); err != nil {
			s.stopErr = fmt.Errorf("stop temporal dev server: %w", err)
		}
		s.lock.release()
	})
	return s.stopErr
}

// startServer builds and starts the server. The server reports a failure
// while it starts (a port it cannot bind, say) through its logger's Fatal,
// which panics with a serverFatal; that is returned here as the error, so the
// command prints one line instead of a stack.
func startServer(cfg *config.Config, dc dynamicconfig.Client, logger serverLogger) (srv temporal.Server, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f, ok := r.(serverFatal)
		if !ok {
			panic(r)
		}
		if srv != nil {
			_ = srv.Stop()
		}
		srv, err = nil, f
	}()
	srv, err = temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dc),
	)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return srv, nil
}

// startRetries bounds how often Start picks its ports again after losing one
// to another process between choosing and binding it.
const startRetries = 3

// addrInUse reports whether err is a bind failure on a taken address. The
// server reports it through its logger's Fatal, as text (serverFatal).
func addrInUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
}

// pickFrontendPort is frontendPort; a variable so a test can lose the race
// for the port it returns.
var pickFrontendPort = frontendPort

// frontendPort picks the frontend port: the one asked for, else DefaultPort
// when free, else any free port.
func frontendPort(asked int) (int, error) {
	if asked != 0 {
		if !portFree(asked) {
			return 0, fmt.Errorf("port %d on %s is taken: pick another with --port", asked, host)
		}
		return asked, nil
	}
	if portFree(DefaultPort) {
		return DefaultPort, nil
	}
	return freePort()
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func freePort() (int, error) {
	var ps portSet
	defer ps.close()
	return ps.next()
}

// portSet hands out distinct free ports for the server's services. Each port
// stays bound until close, so the kernel cannot hand the same one out twice
// (one after another, listen-and-close on port 0 may return the same port),
// and the frontend's port, free but not yet bound, is never handed out to
// another service: either would fail the server's start with "address
// already in use".
type portSet struct {
	avoid int
	held  []net.Listener
}

func (p *portSet) next() (int, error) {
	for range 8 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		p.held = append(p.held, l)
		if port := l.Addr().(*net.TCPAddr).Port; port != p.avoid {
			return port, nil
		}
	}
	return 0, fmt.Errorf("find a free port other than %d: the kernel keeps returning it", p.avoid)
}

func (p *portSet) close() {
	for _, l := range p.held {
		_ = l.Close()
	}
}

// serverConfig is a single-node, single-shard configuration: every service in
// this process, SQLite for persistence and visibility, no archival, metrics
// and pprof off (longhaul exposes its own metrics).
func serverConfig(dbPath string, frontend int) (*config.Config, error) {
	ports := portSet{avoid: frontend}
	defer ports.close()
	svc := func(grpc int) (config.Service, error) {
		var err error
		if grpc == 0 {
			if grpc, err = ports.next(); err != nil {
				return config.Service{}, err
			}
		}
		membership, err := ports.next()
		if err != nil {
			return config.Service{}, err
		}
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnIP: host}}, nil
	}
	services := map[string]config.Service{}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		port := 0
		if name == "frontend" {
			port = frontend
		}
		s, err := svc(port)
		if err != nil {
			return nil, err
		}
		services[name] = s
	}
	frontendAddr := net.JoinHostPort(host, strconv.Itoa(frontend))
	sqlCfg := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbPath,
		// rwc: read-write, create when missing; the file survives restarts.
		// WAL with synchronous=NORMAL syncs at checkpoints rather than at
		// every commit: durable across a crash of this process (kill -9),
		// not across a power loss, which suits a dev server; schema set-up
		// and every workflow step get cheaper.
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"},
	}
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host},
		},
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        "active",
			CurrentClusterName:       "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
			},
		},
		// The server's own internal clients (the worker service) dial this.
		PublicClient: config.PublicClient{HostPort: frontendAddr},
	}, nil
}

// forgetMembers empties the membership table of an existing file. The
// previous process's services are still listed there (with their old ports)
// until their records expire, and the new services would route requests to
// them for up to a minute: a workflow that was waiting when the server
// stopped would stall that long after a restart. The data directory lock
// guarantees that nobody else serves this file.
func forgetMembers(cfg *config.SQL) error {
	db, err := persistencesql.NewSQLAdminDB(sqlplugin.DbKindUnknown, cfg, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DatabaseName, err)
	}
	defer db.Close()
	if err := db.Exec("DELETE FROM cluster_membership"); err != nil {
		return fmt.Errorf("reset cluster membership in %s: %w", cfg.DatabaseName, err)
	}
	return nil
}

// waitAccepting waits until addr accepts TCP connections. Start returns only
// once the frontend is reachable, so a client dialled right after does not
// race the listener.
func waitAccepting(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("frontend %s not accepting: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
