// Package mysqltest starts a private, throw-away MariaDB (or MySQL) server
// for tests, as internal/pgtest does for PostgreSQL.
//
// Recipe:
//
//	func TestSomething(t *testing.T) {
//		dsn := mysqltest.Start(t) // fresh server, empty database "test", Go driver DSN
//		...
//	}
//
// Start initialises a data directory in a temporary directory and runs the
// server as a child of the test process on a free 127.0.0.1 port with the
// flags the local provider uses (internal/mysqlserver). The server is stopped
// and its directory removed when the test ends; if the test process dies
// first, the server is killed with it (parent-death signal). When no server
// is installed the test is skipped with the reason. As root the server runs
// as the "mysql" user.
package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql"

	"github.com/longhaul-dev/longhaul/internal/mysqlserver"
)

// StartTimeout bounds initialisation plus start-up (mariadb-install-db takes
// 3–15 s on a busy 2-core machine).
const StartTimeout = 90 * time.Second

// Server is a started server.
type Server struct {
	// DSN is the Go driver's DSN of the database "test" as user "test"
	// (password "test") over 127.0.0.1; Port the server's port.
	DSN  string
	Port int
	// AdminDSN is root over the Unix socket.
	AdminDSN string
}

// Start starts a server and returns the DSN of an empty database "test".
// Everything is removed when t ends.
func Start(t testing.TB) string {
	t.Helper()
	return StartServer(t).DSN
}

// StartServer is Start, returning the whole Server.
func StartServer(t testing.TB) Server {
	t.Helper()
	srv, err := mysqlserver.Find()
	if err != nil {
		t.Skipf("mysqltest: %v", err)
	}
	dir, err := os.MkdirTemp("", "mysqltest-")
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	asUser := ""
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			t.Skipf("mysqltest: running as root needs the mysql user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		asUser = "mysql"
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatalf("mysqltest: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	data := filepath.Join(dir, "data")
	args := srv.InitArgs(data, asUser)
	init := exec.CommandContext(ctx, args[0], args[1:]...)
	init.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("mysqltest: initialise: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	argv := srv.Args(dir, data, port)
	cmd := exec.Command(argv[0], argv[1:]...)
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mysqltest: start: %v", err)
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
	admin := mysqlserver.SocketDSN(mysqlserver.Socket(dir))
	db, err := sql.Open("mysql", admin)
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	defer db.Close()
	for {
		if err = db.PingContext(ctx); err == nil {
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("mysqltest: the server exited: %s", tail(b))
		case <-ctx.Done():
			t.Fatalf("mysqltest: not ready after %s: %v", StartTimeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, s := range []string{
		"CREATE DATABASE test",
		"CREATE USER 'test'@'%' IDENTIFIED BY 'test'",
		"GRANT ALL PRIVILEGES ON test.* TO 'test'@'%'",
		"GRANT SELECT ON performance_schema.* TO 'test'@'%'",
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("mysqltest: %s: %v", s, err)
		}
	}
	return Server{DSN: mysqlserver.DriverDSN("test", "test", "127.0.0.1", port, "test"), Port: port, AdminDSN: admin}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return fmt.Sprintf("%s", b)
}
