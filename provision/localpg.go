package provision

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// localDB is a started private PostgreSQL cluster.
type localDB struct {
	endpoint DatabaseEndpoint
	template templateDB
}

// PostgresBinDir returns the newest /usr/lib/postgresql/<version>/bin that
// holds initdb and postgres.
func PostgresBinDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	type cand struct {
		dir string
		ver float64
	}
	var cs []cand
	for _, m := range matches {
		dir := filepath.Dir(m)
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			cs = append(cs, cand{dir, v})
		}
	}
	if len(cs) == 0 {
		return "", fmt.Errorf("%w: database.kind postgres needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin/initdb): install postgresql, or use provider: docker", ErrInvalidSpec)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].ver > cs[j].ver })
	return cs[0].dir, nil
}

// serverCredential returns who runs a database server: this process's user,
// or, as root (which PostgreSQL, MySQL and MariaDB all refuse), the system
// user the server's package made (postgres, mysql). server names it in the
// error.
func serverCredential(account, server string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(account)
	if err != nil {
		return nil, fmt.Errorf("%w: running as root, a local %s needs the %s user (it refuses to run as root): %v", ErrInvalidSpec, server, account, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// startPostgres creates a cluster in a new temp dir, starts it on a free
// loopback port (no Unix socket), creates the role and database, and returns
// the endpoint. onStart records the process as soon as it exists.
func (l *Local) startPostgres(ctx context.Context, envID, envDir string, spec scenarios.Database, onStart func(Process)) (localDB, error) {
	log := l.opts.Logger.With("env", envID)
	dir, err := os.MkdirTemp(l.opts.TempDir, "longhaul-pg-")
	if err != nil {
		return localDB{}, fmt.Errorf("start postgres: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, dirMarkerFile), []byte(envID+"\n"), 0o644); err != nil {
		return localDB{}, fmt.Errorf("start postgres: %w", err)
	}
	proc := Process{DataDir: dir}
	onStart(proc) // the directory is recorded before anything can fail

	start := time.Now()
	name, usr, pw := dbNames(spec)
	pg, err := l.startCluster(ctx, log, dir, filepath.Join(envDir, "postgres.log"), markerFor(envID, "postgres"), func(pid int) {
		proc.PID = pid
		onStart(proc)
	})
	if err != nil {
		return localDB{}, fmt.Errorf("start postgres: %w", err)
	}
	port := pg.port
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	stmts := []string{}
	if usr != "postgres" {
		stmts = append(stmts, "CREATE ROLE "+pgx.Identifier{usr}.Sanitize()+" LOGIN PASSWORD "+quoteLiteral(pw))
	} else {
		stmts = append(stmts, "ALTER ROLE postgres PASSWORD "+quoteLiteral(pw))
	}
	if name != "postgres" {
		stmts = append(stmts, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" OWNER "+pgx.Identifier{usr}.Sanitize())
	}
	if err := execAll(ctx, admin, stmts...); err != nil {
		return localDB{}, fmt.Errorf("start postgres: create role and database: %w", err)
	}
	dsn := postgresURL(usr, pw, "127.0.0.1", port, name)
	if pg.statStatements {
		createStatStatements(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, url.PathEscape(name)), log)
	}
	log.Info("postgres ready", "port", port, "seconds", time.Since(start).Seconds())
	return localDB{
		endpoint: DatabaseEndpoint{Kind: "postgres", URL: dsn, TargetURL: dsn, Process: proc},
		template: templateDB{URL: dsn, DSN: dsn, Host: "127.0.0.1", Port: port, Name: name, User: usr, Password: pw},
	}, nil
}

// execAll runs stmts in order on one connection to dsn.
func execAll(ctx context.Context, dsn string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// cluster is a private PostgreSQL cluster startCluster started.
type cluster struct {
	port int
	// statStatements: the server loads pg_stat_statements (PostgreSQL's
	// contrib, in Debian's server package), which gives the database probe
	// the target's statements per request; a server without the module
	// still starts, and the probe says what is missing.
	statStatements bool
}

// startCluster makes a new PostgreSQL cluster in dir/data (initdb, the
// superuser postgres with trust on 127.0.0.1 only) and starts its server
// on a free loopback port, its output appended to logPath. dir must exist;
// it is given to the postgres account when the worker runs as root. Every
// process it starts carries marker, so a worker killed meanwhile leaves
// nothing teardown cannot find; onPID receives the server's PID as soon as
// it exists.
func (l *Local) startCluster(ctx context.Context, log *slog.Logger, dir, logPath, marker string, onPID func(int)) (cluster, error) {
	bin := l.opts.PostgresBinDir
	if bin == "" {
		var err error
		if bin, err = PostgresBinDir(); err != nil {
			return cluster{}, err
		}
	}
	cred, err := serverCredential("postgres", "PostgreSQL")
	if err != nil {
		return cluster{}, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return cluster{}, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	initdb.Dir = dir
	// The database's marker: an initdb orphaned by a worker killed meanwhile
	// is stopped by the retry's teardown before it removes the directory.
	initdb.Env = append(os.Environ(), markerEnv+"="+marker)
	var out tailBuffer
	out.n = 20
	initdb.Stdout, initdb.Stderr = &out, &out
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := initdb.Run(); err != nil {
		return cluster{}, fmt.Errorf("initdb: %s", withTail(oneLine(err), "its output", out.String()))
	}
	c := cluster{statStatements: hasStatStatements(bin)}
	for attempt := 1; ; attempt++ {
		if c.port, err = freePort(); err != nil {
			return cluster{}, fmt.Errorf("pick a port: %w", err)
		}
		exited, err := l.start(postgresArgs(bin, data, c.port, c.statStatements), dir, []string{"LC_ALL=C"}, marker, logPath, cred, onPID)
		if err != nil {
			return cluster{}, err
		}
		err = waitPostgres(ctx, c.port, DefaultHealthTimeout, exited)
		if err == nil {
			return c, nil
		}
		tail := lastLines(logPath, 20)
		// The free port may have been taken between the pick and the bind.
		if attempt < 3 && strings.Contains(tail, "could not create any TCP/IP sockets") {
			log.Info("postgres port taken; retrying", "port", c.port)
			continue
		}
		return cluster{}, errWithTail(err, "its log", tail)
	}
}

// postgresArgs is the argv of a private cluster's server: data directory
// data, on 127.0.0.1:port only, no Unix socket, pg_stat_statements loaded
// when the module is there. RestartDatabase starts it again with the same.
func postgresArgs(bin, data string, port int, statStatements bool) []string {
	argv := []string{filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="}
	if statStatements {
		argv = append(argv, "-c", "shared_preload_libraries=pg_stat_statements")
	}
	return argv
}

// hasStatStatements reports whether the PostgreSQL whose binaries are in
// bin has the pg_stat_statements module (its library beside them).
func hasStatStatements(bin string) bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(bin), "lib", "pg_stat_statements.so"))
	return err == nil
}

// createStatStatements creates pg_stat_statements in the target's database
// at superuserURL (the extension is not trusted: a superuser creates it;
// every user may read its view). A failure is logged, not fatal: the soak
// runs without statement counts, and the database probe says why.
func createStatStatements(ctx context.Context, superuserURL string, log *slog.Logger) {
	conn, err := pgx.Connect(ctx, superuserURL)
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		conn.Close(context.WithoutCancel(ctx))
	}
	if err != nil {
		log.Warn("pg_stat_statements not created: the windows will have no statement counts", "error", err)
	}
}

// waitPostgres waits until the server accepts a connection that completes
// the startup handshake (a TCP connect alone succeeds too early).
func waitPostgres(ctx context.Context, port int, timeout time.Duration, exited <-chan struct{}) error {
	return waitPostgresAt(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", port), timeout, exited)
}

// waitPostgresAt waits until dsn takes a connection (exited may be nil).
func waitPostgresAt(ctx context.Context, dsn string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("%w: postgres exited before it was ready", ErrNotReady)
		case <-ctx.Done():
			return fmt.Errorf("%w: postgres not accepting connections after %s (last: %s)", ErrNotReady, timeout, oneLine(last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dbNames returns the database name, user and password with defaults.
func dbNames(spec scenarios.Database) (name, usr, pw string) {
	name, usr, pw = spec.Name, spec.User, spec.Password
	if name == "" {
		name = "longhaul"
	}
	if usr == "" {
		usr = "longhaul"
	}
	if pw == "" {
		pw = "longhaul"
	}
	return name, usr, pw
}

func postgresURL(usr, pw, host string, port int, name string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(usr, pw),
		Host:     net.JoinHostPort(host, strconv.Itoa(port)),
		Path:     "/" + name,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
