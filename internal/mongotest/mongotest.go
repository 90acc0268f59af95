// Package mongotest starts a private, throw-away MongoDB-protocol server
// for tests, as internal/mysqltest does for MariaDB.
//
// Recipe:
//
//	func TestSomething(t *testing.T) {
//		srv := mongotest.Start(t) // fresh server; srv.URI names database "test"
//		...
//	}
//
// Start runs mongod, or FerretDB over SQLite when there is no mongod
// (internal/mongoserver), as a child of the test process on a free
// 127.0.0.1 port with the flags the local provider uses. The server is
// stopped and its directory removed when the test ends; if the test process
// dies first, the server is killed with it (parent-death signal). When
// neither is installed the test is skipped with the reason.
package mongotest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/internal/mongoserver"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
)

// StartTimeout bounds the server's start-up.
const StartTimeout = 60 * time.Second

// Server is a started server.
type Server struct {
	// URI is mongodb://127.0.0.1:PORT/test; Port the server's port.
	URI  string
	Port int
	// FerretDB is set when the server is FerretDB rather than mongod.
	FerretDB bool
	// Backend is the DSN of the PostgreSQL database FerretDB keeps its
	// collections in (StartFerretDBOverPostgres); "" otherwise.
	Backend string
}

// Start starts a server. Everything is removed when t ends.
func Start(t testing.TB) Server {
	t.Helper()
	srv, err := mongoserver.Find()
	if err != nil {
		t.Skipf("mongotest: %v", err)
	}
	return start(t, srv, func(dir, data string, port int) []string { return srv.Args(dir, data, port) })
}

// StartFerretDBOverPostgres starts FerretDB over a private PostgreSQL
// cluster (internal/pgtest) prepared as the local provider prepares it
// (mongoserver.BackendSetup); Backend is that database's DSN. It skips
// without FerretDB (a mongod has no PostgreSQL to read).
func StartFerretDBOverPostgres(t testing.TB) Server {
	t.Helper()
	srv, err := mongoserver.Find()
	if err != nil || !srv.FerretDB {
		t.Skip("mongotest: no ferretdb on PATH (" + mongoserver.FerretDBInstall + ")")
	}
	backend := pgtest.Start(t) // its database is "test"
	if err := prepare(backend, mongoserver.BackendSetup("test")); err != nil {
		t.Fatalf("mongotest: prepare FerretDB's PostgreSQL: %v", err)
	}
	s := start(t, srv, func(dir, _ string, port int) []string { return srv.ArgsOverPostgres(dir, backend, port) })
	s.Backend = backend
	return s
}

func prepare(dsn string, stmts []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func start(t testing.TB, srv mongoserver.Server, args func(dir, data string, port int) []string) Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "mongotest-")
	if err != nil {
		t.Fatalf("mongotest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatalf("mongotest: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mongotest: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	argv := args(dir, data, port)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatalf("mongotest: %v", err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mongotest: start %s: %v", srv.Name(), err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	uri := "mongodb://127.0.0.1:" + strconv.Itoa(port) + "/test"
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(time.Second))
	if err != nil {
		t.Fatalf("mongotest: %v", err)
	}
	defer c.Disconnect(context.Background())
	for {
		if err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err == nil {
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			if len(b) > 2000 {
				b = b[len(b)-2000:]
			}
			t.Fatalf("mongotest: %s exited: %s", srv.Name(), b)
		case <-ctx.Done():
			t.Fatalf("mongotest: %s not ready after %s: %v", srv.Name(), StartTimeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return Server{URI: uri, Port: port, FerretDB: srv.FerretDB}
}
