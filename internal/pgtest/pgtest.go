// Package pgtest starts a private, throw-away PostgreSQL cluster for tests.
//
// Recipe:
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.Start(t)             // fresh cluster, empty database "test"
//		other := pgtest.NewDatabase(t, dsn) // another empty database in it, if needed
//		...
//	}
//
// Start runs initdb in a temporary directory and the postgres server as a child
// of the test process on a free 127.0.0.1 port, with durability turned off for
// speed. The cluster is stopped and its directory removed when the test ends;
// if the test process dies first, the server is killed with it (parent-death
// signal), so no cluster outlives its tests.
//
// The binaries are looked up in $PGTEST_BIN, then /usr/lib/postgresql/*/bin
// (newest version first), then $PATH. When none is found the test is skipped
// with the reason. PostgreSQL refuses to run as root: under root the cluster
// runs as the "postgres" user (or "nobody").
//
// StartCluster starts one outside a test, for a benchmark's own stack, with
// PostgreSQL's durable settings if asked.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/longhaul-dev/longhaul/internal/freeport"
)

// StartTimeout bounds initdb plus server start-up.
const StartTimeout = 60 * time.Second

// Start starts a new cluster and returns the DSN of an empty database named
// "test" in it, as postgres://postgres@127.0.0.1:PORT/test?sslmode=disable.
// Everything is removed when t ends. It skips t when no PostgreSQL binaries
// are installed and fails it when the cluster cannot start.
func Start(t testing.TB) string {
	t.Helper()
	return StartWith(t, ClusterOptions{})
}

// StartWith is Start with options (Settings; Dir and Bin as StartCluster).
func StartWith(t testing.TB, opts ClusterOptions) string {
	t.Helper()
	bin := opts.Bin
	var err error
	if bin == "" {
		if bin, err = findBin(); err != nil {
			t.Skipf("pgtest: %v", err)
		}
	}
	c, err := start(bin, opts)
	if c != nil {
		t.Cleanup(c.Stop)
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := c.Exec("postgres", "CREATE DATABASE test"); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return c.DSN("test")
}

var dbSeq atomic.Int64

// NewDatabase creates another empty database in the cluster that dsn points
// into and returns its DSN. It is dropped when t ends.
func NewDatabase(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest: parse dsn: %v", err)
	}
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := execDSN(dsn, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		// The cluster may already be gone; dropping is best effort.
		_ = execDSN(dsn, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u.Path = "/" + name
	return u.String()
}

// findBin returns the directory holding initdb and postgres.
func findBin() (string, error) {
	if d := os.Getenv("PGTEST_BIN"); d != "" {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
		return "", fmt.Errorf("PGTEST_BIN=%s has no initdb and postgres", d)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres) in $PGTEST_BIN, /usr/lib/postgresql/*/bin or $PATH; install postgresql to run these tests")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// ClusterOptions shape a cluster started by StartCluster.
type ClusterOptions struct {
	// Durable keeps PostgreSQL's own settings (fsync, synchronous commit,
	// full-page writes, 100 connections, 128 MB of shared buffers) instead
	// of the fast, crash-unsafe ones tests run with: for a benchmark whose
	// figures should hold for a real server.
	Durable bool
	// Dir holds the cluster (it must not exist, or be empty); "" makes a
	// temporary directory. Stop removes it either way.
	Dir string
	// Bin is the directory of initdb and postgres; "" looks them up as
	// Start does.
	Bin string
	// Settings are more server settings, "name=value" each (postgres -c).
	Settings []string
}

// Cluster is a running private cluster.
type Cluster struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *bytes.Buffer
}

// StartCluster starts a cluster outside a test (a benchmark's own stack),
// with the binaries Start would use; the caller stops it. A non-nil Cluster
// comes back whenever something needs stopping, even with an error.
func StartCluster(opts ClusterOptions) (*Cluster, error) {
	bin := opts.Bin
	if bin == "" {
		var err error
		if bin, err = findBin(); err != nil {
			return nil, err
		}
	}
	return start(bin, opts)
}

// DSN is the URL of database db in the cluster, as the superuser postgres.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// PID is the server's (the postmaster's) process id.
func (c *Cluster) PID() int { return c.cmd.Process.Pid }

// Exec runs one statement in database db.
func (c *Cluster) Exec(db, stmt string) error { return execDSN(c.DSN(db), stmt) }

func execDSN(dsn, stmt string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return fmt.Errorf("open %s: %w", dsn, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// start creates and starts a cluster. A non-nil cluster is returned whenever
// something needs cleaning up, even with an error.
func start(bin string, opts ClusterOptions) (*Cluster, error) {
	cred, uid, gid, err := runAs()
	if err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		dir, err = os.MkdirTemp("", "pgtest-")
	} else {
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return nil, fmt.Errorf("make cluster directory: %w", err)
	}
	c := &Cluster{dir: dir, log: &bytes.Buffer{}}
	if cred != nil {
		if err := os.Chown(dir, uid, gid); err != nil {
			return c, fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()

	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return c, fmt.Errorf("initdb: %w\n%s", err, out)
	}

	// The port is picked by binding :0 and closing it; another process could
	// take it in between, so a failed start is retried on a new port.
	for attempt := 0; ; attempt++ {
		c.port, err = freeport.Loopback()
		if err != nil {
			return c, err
		}
		c.log.Reset()
		argv := []string{"-D", data, "-p", strconv.Itoa(c.port), "-k", dir, "-c", "listen_addresses=127.0.0.1"}
		if !opts.Durable {
			argv = append(argv, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
				"-c", "max_connections=50", "-c", "shared_buffers=32MB")
		}
		for _, kv := range opts.Settings {
			argv = append(argv, "-c", kv)
		}
		c.cmd = exec.Command(filepath.Join(bin, "postgres"), argv...)
		c.cmd.Dir = dir
		c.cmd.Stdout = c.log
		c.cmd.Stderr = c.log
		// Pdeathsig: if the test process dies, the server gets SIGQUIT
		// (immediate shutdown) and its backends follow it.
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
		if err := c.cmd.Start(); err != nil {
			return c, fmt.Errorf("start postgres: %w", err)
		}
		c.done = make(chan struct{})
		go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(c.cmd, c.done)
		err = c.waitReady(ctx)
		if err == nil {
			return c, nil
		}
		c.kill()
		if attempt == 2 || ctx.Err() != nil || !strings.Contains(c.log.String(), "could not bind") {
			return c, err
		}
	}
}

// waitReady polls until the server accepts a query.
func (c *Cluster) waitReady(ctx context.Context) error {
	for {
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited during start-up:\n%s", c.log.String())
		default:
		}
		if err := c.ping(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready after %s:\n%s", StartTimeout, c.log.String())
		case <-c.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) ping(ctx context.Context) error {
	db, err := sql.Open("pgx", c.DSN("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return db.PingContext(pctx)
}

// kill stops the server: SIGINT (fast shutdown), then SIGKILL after 10 s.
func (c *Cluster) kill() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// Stop stops the server and removes the cluster's directory.
func (c *Cluster) Stop() {
	c.kill()
	_ = os.RemoveAll(c.dir)
}

// runAs returns the credential to run PostgreSQL with: nil unless we are root.
func runAs() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
	}
	return nil, 0, 0, errors.New("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")
}
