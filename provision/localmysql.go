package provision

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql"

	"github.com/longhaul-dev/longhaul/internal/mysqlserver"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// startMySQL initialises a data directory in a new temp dir, starts a
// MariaDB (or MySQL) server on a free loopback port, creates the database
// and user, and returns the endpoint. onStart records the process as soon as
// it exists, so a worker killed meanwhile leaves nothing a retry's teardown
// cannot find.
func (l *Local) startMySQL(ctx context.Context, envID, envDir string, spec scenarios.Database, onStart func(Process)) (localDB, error) {
	kind := dbKind(spec)
	role := kind
	log := l.opts.Logger.With("env", envID)
	srv, err := mysqlserver.Find()
	if err != nil {
		return localDB{}, fmt.Errorf("%w: database.kind %s on the local provider: %v, or use provider: docker", ErrInvalidSpec, kind, err)
	}
	cred, err := serverCredential("mysql", "MySQL/MariaDB")
	if err != nil {
		return localDB{}, err
	}
	dir, err := os.MkdirTemp(l.opts.TempDir, "longhaul-"+kind+"-")
	if err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	if err := os.WriteFile(filepath.Join(dir, dirMarkerFile), []byte(envID+"\n"), 0o644); err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	proc := Process{DataDir: dir}
	onStart(proc)
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return localDB{}, fmt.Errorf("start %s: %w", kind, err)
		}
	}
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(envDir, kind+".log")

	start := time.Now()
	asUser := ""
	if cred != nil {
		asUser = "mysql"
	}
	initArgs := srv.InitArgs(data, asUser)
	initCmd := exec.CommandContext(ctx, initArgs[0], initArgs[1:]...)
	initCmd.Dir = dir
	initCmd.Env = append(os.Environ(), markerEnv+"="+markerFor(envID, role))
	var out tailBuffer
	out.n = 20
	initCmd.Stdout, initCmd.Stderr = &out, &out
	initCmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := initCmd.Run(); err != nil {
		return localDB{}, fmt.Errorf("start %s: initialise the data directory: %s", kind, withTail(oneLine(err), "its output", out.String()))
	}

	name, usr, pw := dbNames(spec)
	var port int
	for attempt := 1; ; attempt++ {
		if port, err = freePort(); err != nil {
			return localDB{}, fmt.Errorf("start %s: pick a port: %w", kind, err)
		}
		exited, err := l.start(srv.Args(dir, data, port), dir, []string{"LC_ALL=C"}, markerFor(envID, role), logPath, cred, func(pid int) {
			proc.PID = pid
			onStart(proc)
		})
		if err != nil {
			return localDB{}, fmt.Errorf("start %s: %w", kind, err)
		}
		err = waitMySQL(ctx, mysqlserver.SocketDSN(mysqlserver.Socket(dir)), kind, DefaultHealthTimeout, exited)
		if err == nil {
			break
		}
		tail := lastLines(logPath, 20)
		if attempt < 3 && strings.Contains(tail, "Address already in use") {
			log.Info(kind+" port taken; retrying", "port", port)
			continue
		}
		return localDB{}, fmt.Errorf("start %s: %w", kind, errWithTail(err, "its log", tail))
	}

	// The root account exists only on the Unix socket (root@localhost with
	// name resolution off); the user the target connects as is made here.
	admin, err := sql.Open("mysql", mysqlserver.SocketDSN(mysqlserver.Socket(dir)))
	if err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	defer admin.Close()
	if err := createMySQLDatabase(ctx, admin, name, usr, pw); err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	dsn := mysqlURL(kind, usr, pw, "127.0.0.1", port, name)
	log.Info(kind+" ready", "port", port, "seconds", time.Since(start).Seconds())
	return localDB{
		endpoint: DatabaseEndpoint{Kind: kind, URL: dsn, TargetURL: dsn, Process: proc},
		template: templateDB{URL: dsn, DSN: mysqlserver.DriverDSN(usr, pw, "127.0.0.1", port, name), Host: "127.0.0.1", Port: port, Name: name, User: usr, Password: pw},
	}, nil
}

// createMySQLDatabase creates the database and a user that may use it from
// any host (the docker target connects from its own address) and read the
// performance schema (the database probe connects as that user).
func createMySQLDatabase(ctx context.Context, admin *sql.DB, name, usr, pw string) error {
	q := func(id string) string { return "`" + strings.ReplaceAll(id, "`", "``") + "`" }
	lit := func(s string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
	}
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS " + q(name),
		"CREATE USER IF NOT EXISTS " + lit(usr) + "@'%' IDENTIFIED BY " + lit(pw),
		"GRANT ALL PRIVILEGES ON " + q(name) + ".* TO " + lit(usr) + "@'%'",
		"GRANT SELECT ON performance_schema.* TO " + lit(usr) + "@'%'",
	}
	for _, s := range stmts {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create the database and user: %w", err)
		}
	}
	return nil
}

// waitMySQL waits until the server answers a query on dsn.
func waitMySQL(ctx context.Context, dsn, kind string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		db, err := sql.Open("mysql", dsn)
		if err == nil {
			err = db.PingContext(ctx)
			db.Close()
		}
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("%w: %s exited before it was ready", ErrNotReady, kind)
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not accepting connections after %s (last: %s)", ErrNotReady, kind, timeout, oneLine(last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mysqlURL is the database's URL in its own scheme (mysql:// or
// mariadb://), as {{.Database.URL}} renders it.
func mysqlURL(kind, usr, pw, host string, port int, name string) string {
	u := url.URL{
		Scheme: kind,
		User:   url.UserPassword(usr, pw),
		Host:   net.JoinHostPort(host, strconv.Itoa(port)),
		Path:   "/" + name,
	}
	return u.String()
}
