// Package devserver runs an embedded Temporal server inside the longhaul
// process: on an SQLite file for one machine (`longhaul dev`, nothing to
// install), or on PostgreSQL for a team (`longhaul server`).
//
// Recipe:
//
//  1. Start(ctx, Options{DataDir: dir}) creates (or reopens) dir/temporal.db,
//     sets up the schema and the namespace on a new file, and serves the
//     frontend on 127.0.0.1 (port 7233 unless it is taken or another is given).
//     With Options.Postgres set to a postgres:// URL, the state lives in that
//     database (and one named after it with a "_visibility" suffix) instead:
//     both are created when missing and their schema set up or migrated to
//     this server's version at every start, under an advisory lock, so two
//     servers starting at once on one database are safe.
//  2. Dial a client at Address() and start workers as with any cluster.
//  3. Stop() shuts it down. Workflows in flight are persisted: they continue
//     when a server is started again on the same file or database, even after
//     a crash.
//
// Only this package and cmd/longhaul import go.temporal.io/server (a 5–10
// minute cold compile); everything else talks to Temporal through the SDK.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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

// host is the address the server's internal services bind and advertise to
// each other: they are never exposed. Only the frontend may bind another
// address (Options.Host).
const host = "127.0.0.1"

// Options configure Start. The zero value (with DataDir set) is usable.
type Options struct {
	// DataDir holds the SQLite file DBFileName; it is created if missing.
	DataDir string
	// DBFile is the SQLite file to use instead of DataDir/DBFileName (its
	// directory is created if missing; DataDir is then not needed).
	DBFile string
	// Postgres is a postgres:// URL: the server keeps its state in that
	// database instead of an SQLite file (DataDir and DBFile are ignored).
	// The database and its visibility sibling (VisibilityDatabase) are
	// created when missing, which needs the CREATEDB privilege.
	Postgres string
	// Host is the address the frontend binds (default 127.0.0.1). "0.0.0.0"
	// serves other machines (a container's published port); the server's
	// internal services stay on 127.0.0.1 whatever it is.
	Host string
	// Port of the frontend on Host. 0 means DefaultPort, or a free port
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
	listen    string
	namespace string
	where     string
	lock      *dirLock
	stopping  *atomic.Bool
	stopOnce  sync.Once
	stopErr   error
}

// Start starts a server on opts.DataDir/temporal.db (or opts.DBFile, or
// opts.Postgres) and returns once its frontend accepts connections. ctx
// bounds the start-up, schema migration included.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LongPoll <= 0 {
		opts.LongPoll = DefaultLongPoll
	}
	if opts.Host == "" {
		opts.Host = host
	}
	if net.ParseIP(opts.Host) == nil {
		return nil, fmt.Errorf("start temporal server: host %q is not an IP address", opts.Host)
	}
	var (
		p    persistence
		lock *dirLock
		err  error
	)
	if opts.Postgres != "" {
		if p, err = postgresPersistence(opts.Postgres); err != nil {
			return nil, fmt.Errorf("start temporal server: %w", err)
		}
		if err := preparePostgres(ctx, opts.Postgres, p, opts.Namespace); err != nil {
			return nil, fmt.Errorf("start temporal server on %s: %w", p.where, err)
		}
	} else {
		if p, lock, err = prepareSQLite(opts); err != nil {
			return nil, fmt.Errorf("start temporal dev server: %w", err)
		}
	}
	started := false
	defer func() {
		if !started {
			lock.release()
		}
	}()

	port, err := pickFrontendPort(opts.Host, opts.Port)
	if err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	dc := dynamicconfig.StaticClient{
		dynamicconfig.HistoryLongPollExpirationInterval.Key(): []dynamicconfig.ConstrainedValue{{Value: opts.LongPoll}},
	}
	stopping := new(atomic.Bool)
	cfg, err := serverConfig(p, opts.Host, port)
	if err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	srv, err := startServer(cfg, dc, newServerLogger(opts.Logger, stopping))
	// Subtleness ahead: every port was free when it was chosen, but another
	// process (a second longhaul on this machine, a parallel test) may bind
	// one before the server does. Ports we chose ourselves are chosen again;
	// a port the caller asked for is theirs to change.
	for retry := 0; retry < startRetries && addrInUse(err); retry++ {
		if opts.Port == 0 {
			if port, err = pickFrontendPort(opts.Host, 0); err != nil {
				break
			}
		}
		if cfg, err = serverConfig(p, opts.Host, port); err != nil {
			break
		}
		srv, err = startServer(cfg, dc, newServerLogger(opts.Logger, stopping))
	}
	// Two servers starting at once on one new PostgreSQL database both
	// write the cluster's metadata when they start; the loser of that race
	// fails with "failed to initialize current cluster metadata" (seen in
	// CI), and finds the winner's row when it starts again.
	for retry := 0; retry < startRetries && opts.Postgres != "" && clusterMetadataRace(err); retry++ {
		opts.Logger.Info("another server wrote the cluster metadata at the same moment; starting again")
		time.Sleep(time.Duration(retry+1) * 300 * time.Millisecond)
		srv, err = startServer(cfg, dc, newServerLogger(opts.Logger, stopping))
	}
	if err != nil {
		return nil, fmt.Errorf("start temporal server on %s: %w", p.where, err)
	}
	s := &Server{
		srv: srv, address: dialAddress(opts.Host, port), listen: net.JoinHostPort(opts.Host, strconv.Itoa(port)),
		namespace: opts.Namespace, where: p.where, lock: lock, stopping: stopping,
	}
	started = true
	if err := waitAccepting(ctx, s.address); err != nil {
		s.Stop()
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	return s, nil
}

// prepareSQLite locks the SQLite file's directory, sets up the schema on a
// new file (or forgets the previous process's members on an existing one)
// and creates the namespace.
func prepareSQLite(opts Options) (persistence, *dirLock, error) {
	dbPath, lockDir := opts.DBFile, opts.DataDir
	switch {
	case dbPath != "":
		dbPath, lockDir = filepath.Clean(dbPath), filepath.Dir(filepath.Clean(dbPath))
	case opts.DataDir != "":
		dbPath = filepath.Join(opts.DataDir, DBFileName)
	default:
		return persistence{}, nil, errors.New("no data directory given")
	}
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return persistence{}, nil, fmt.Errorf("create data directory: %w", err)
	}
	p := sqlitePersistence(dbPath)
	sqlCfg := p.stores[p.defaultStore].SQL
	lock, err := lockDataDir(lockDir)
	if err != nil {
		return p, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.release()
		}
	}()
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			_ = os.Remove(dbPath) // a half-made file would be taken as set up next time
			return p, nil, fmt.Errorf("set up schema in %s: %w", dbPath, err)
		}
	} else if err := forgetMembers(sqlCfg); err != nil {
		return p, nil, err
	}
	ns, err := sqlite.NewNamespaceConfig(clusterName, opts.Namespace, false, nil)
	if err != nil {
		return p, nil, fmt.Errorf("namespace %q: %w", opts.Namespace, err)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return p, nil, fmt.Errorf("create namespace %q: %w", opts.Namespace, err)
	}
	ok = true
	return p, lock, nil
}

// dialAddress is the address a client on this machine dials for a frontend
// bound to bindHost: loopback when it binds every address.
func dialAddress(bindHost string, port int) string {
	if ip := net.ParseIP(bindHost); ip == nil || ip.IsUnspecified() {
		bindHost = host
	}
	return net.JoinHostPort(bindHost, strconv.Itoa(port))
}

// Address is the frontend's host:port as a client on this machine dials it,
// for client.Options.HostPort or `longhaul run --temporal`.
func (s *Server) Address() string { return s.address }

// ListenAddress is the frontend's host:port as bound (0.0.0.0:7233, say).
func (s *Server) ListenAddress() string { return s.listen }

// Namespace is the namespace the server was started with.
func (s *Server) Namespace() string { return s.namespace }

// Persistence names where the server keeps its state, for messages: the
// SQLite file, or the PostgreSQL URL without its password.
func (s *Server) Persistence() string { return s.where }

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

// frontendPort picks the frontend port on bindHost: the one asked for, else
// DefaultPort when free, else any free port.
func frontendPort(bindHost string, asked int) (int, error) {
	if asked != 0 {
		if !portFreeOn(bindHost, asked) {
			return 0, fmt.Errorf("port %d on %s is taken: pick another", asked, bindHost)
		}
		return asked, nil
	}
	if portFreeOn(bindHost, DefaultPort) {
		return DefaultPort, nil
	}
	return freePort()
}

func portFree(port int) bool { return portFreeOn(host, port) }

func portFreeOn(bindHost string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(port)))
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
	// max, when > 0, is the highest port to hand out (the kernel's ports
	// from :0 are above 32767 on Linux, so they are then chosen at random
	// from lowPortMin..max instead).
	max  int
	held []net.Listener
}

// lowPortMin is the lowest port a portSet with a max hands out.
const lowPortMin = 10000

func (p *portSet) next() (int, error) {
	if p.max > 0 {
		return p.nextLow()
	}
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

func (p *portSet) nextLow() (int, error) {
	for range 64 {
		port := lowPortMin + rand.IntN(p.max-lowPortMin+1)
		if port == p.avoid {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue // taken (or held by this set already)
		}
		p.held = append(p.held, l)
		return port, nil
	}
	return 0, fmt.Errorf("find a free port in %d..%d: 64 tries found none", lowPortMin, p.max)
}

func (p *portSet) close() {
	for _, l := range p.held {
		_ = l.Close()
	}
}

// clusterName is the one cluster's name.
const clusterName = "active"

// serverConfig is a single-node, single-shard configuration: every service in
// this process, p for persistence and visibility, no archival, metrics and
// pprof off (longhaul exposes its own metrics). The frontend binds
// frontendHost; the other services 127.0.0.1.
func serverConfig(p persistence, frontendHost string, frontend int) (*config.Config, error) {
	ports := portSet{avoid: frontend, max: p.maxPort}
	defer ports.close()
	svc := func(bind string, grpc int) (config.Service, error) {
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
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnIP: bind}}, nil
	}
	services := map[string]config.Service{}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		port, bind := 0, host
		if name == "frontend" {
			port, bind = frontend, frontendHost
		}
		s, err := svc(bind, port)
		if err != nil {
			return nil, err
		}
		services[name] = s
	}
	frontendAddr := net.JoinHostPort(host, strconv.Itoa(frontend))
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host},
		},
		Persistence: config.Persistence{
			DefaultStore:     p.defaultStore,
			VisibilityStore:  p.visibilityStore,
			NumHistoryShards: 1,
			DataStores:       p.stores,
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
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

// clusterMetadataRace reports whether err is the Temporal server's failure
// to write its cluster metadata because another server wrote it first.
func clusterMetadataRace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "failed to initialize current cluster metadata")
}
