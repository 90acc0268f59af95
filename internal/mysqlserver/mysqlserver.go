// Package mysqlserver knows how to run a private MySQL-protocol server on
// this host: where Debian's MariaDB (or a MySQL) binaries are, how to
// initialise a data directory, and the flags a soak wants. The local
// provider (provision) and the tests' throw-away servers (internal/mysqltest)
// share it.
//
// Recipe:
//
//	srv, err := mysqlserver.Find()
//	init := srv.InitCommand(dataDir, asMySQLUser)  // run it once
//	argv := srv.Args(dir, dataDir, port)            // then start the server
//	admin := mysqlserver.SocketDSN(srv.Socket(dir)) // root, over the Unix socket
package mysqlserver

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Server is a MySQL-protocol server's binaries on this host.
type Server struct {
	// Path is the server (mariadbd or mysqld); InstallDB is MariaDB's
	// mariadb-install-db ("" for MySQL, whose server initialises itself).
	Path, InstallDB string
	// MariaDB is set for MariaDB's binaries, which is what Debian ships for
	// both database.kind mysql and mariadb.
	MariaDB bool
}

// ErrNotFound is returned by Find when no server is installed.
var ErrNotFound = errors.New("no MariaDB or MySQL server (mariadbd and mariadb-install-db, or mysqld) on this host: apt-get install mariadb-server")

// Find looks for MariaDB first (mariadbd with mariadb-install-db), then
// MySQL (mysqld), on PATH and in the sbin directories PATH often lacks.
func Find() (Server, error) {
	if s := look("mariadbd"); s != "" {
		if i := look("mariadb-install-db", "mysql_install_db"); i != "" {
			return Server{Path: s, InstallDB: i, MariaDB: true}, nil
		}
	}
	if s := look("mysqld"); s != "" {
		return Server{Path: s}, nil
	}
	return Server{}, ErrNotFound
}

func look(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"} {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	return ""
}

// InitArgs is the argv that initialises an empty data directory with a
// password-less root account reachable over the Unix socket only. asUser
// is the system user the server will run as ("" for the current user).
func (s Server) InitArgs(data, asUser string) []string {
	if s.MariaDB {
		args := []string{s.InstallDB, "--no-defaults", "--datadir=" + data,
			"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}
		if asUser != "" {
			args = append(args, "--user="+asUser)
		}
		return args
	}
	return []string{s.Path, "--no-defaults", "--initialize-insecure", "--datadir=" + data}
}

// Socket is the server's Unix socket in dir.
func Socket(dir string) string { return filepath.Join(dir, "mysqld.sock") }

// Args is the argv of a server for a soak: on 127.0.0.1:port only, no name
// resolution, the performance schema on (the database probe reads its
// per-table row counters), no binary log, and commits that do not fsync
// (the soak measures the target, not the disk). Its socket and pid file are
// in dir.
func (s Server) Args(dir, data string, port int) []string {
	args := []string{s.Path, "--no-defaults",
		"--datadir=" + data,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--socket=" + Socket(dir),
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--skip-name-resolve",
		"--performance-schema=ON",
		"--innodb-buffer-pool-size=128M",
		"--innodb-flush-log-at-trx-commit=2",
		"--max-connections=500",
		"--skip-log-bin",
	}
	if !s.MariaDB {
		args = append(args, "--mysqlx=OFF")
	}
	return args
}

// SocketDSN is the Go driver's DSN for root over the Unix socket sock.
func SocketDSN(sock string) string {
	c := mysql.NewConfig()
	c.User = "root"
	c.Net = "unix"
	c.Addr = sock
	c.Timeout = 2 * time.Second
	return c.FormatDSN()
}

// DriverDSN is a database in the form Go's MySQL driver
// (github.com/go-sql-driver/mysql) takes: user:password@tcp(host:port)/name.
func DriverDSN(usr, pw, host string, port int, name string) string {
	c := mysql.NewConfig()
	c.User, c.Passwd = usr, pw
	c.Net = "tcp"
	c.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	c.DBName = name
	c.ParseTime = true
	return c.FormatDSN()
}
