// Package mongoserver knows how to run a private MongoDB-protocol server
// from this host's binaries: MongoDB's mongod when it is on PATH, else
// FerretDB (a MongoDB wire-protocol server written in Go, Apache-2.0) over
// SQLite. The local provider (provision) and the tests' servers
// (internal/mongotest) start it the same way.
package mongoserver

import (
	"fmt"
	"os/exec"
	"strconv"
)

// FerretDBInstall is how to install FerretDB, the server used when there is
// no mongod.
// (plain `go install` of its command builds a binary without the version
// file its own build generates, which panics at start).
const FerretDBInstall = "scripts/install-ferretdb.sh (FerretDB v1.24.2 from the Go module proxy)"

// Server is a MongoDB-protocol server binary.
type Server struct {
	// Path is the binary; FerretDB is set when it is FerretDB rather than
	// MongoDB's own mongod.
	Path     string
	FerretDB bool
}

// Name is the server's name for logs and errors: mongod or ferretdb.
func (s Server) Name() string {
	if s.FerretDB {
		return "ferretdb"
	}
	return "mongod"
}

// Find returns mongod from PATH, else ferretdb, else an error that names
// both and how to get them.
func Find() (Server, error) {
	if p, err := exec.LookPath("mongod"); err == nil {
		return Server{Path: p}, nil
	}
	if p, err := exec.LookPath("ferretdb"); err == nil {
		return Server{Path: p, FerretDB: true}, nil
	}
	return Server{}, fmt.Errorf("neither mongod nor ferretdb is on PATH: install MongoDB's server, or FerretDB with `%s`", FerretDBInstall)
}

// Args is the server's command line: its data in the existing directory
// data, its state files in dir, listening on 127.0.0.1:port only (no Unix
// socket, no other listener), without authentication.
func (s Server) Args(dir, data string, port int) []string {
	if s.FerretDB {
		return []string{s.Path,
			"--handler=sqlite", "--sqlite-url=file:" + data + "/",
			"--listen-addr=127.0.0.1:" + strconv.Itoa(port),
			"--state-dir=" + dir,
			// Its HTTP debug listener takes a fixed port (127.0.0.1:8088) by
			// default, which a second server on the host could not have.
			"--debug-addr=-",
			"--telemetry=disable",
			"--log-level=warn",
		}
	}
	return []string{s.Path, "--dbpath", data, "--port", strconv.Itoa(port),
		"--bind_ip", "127.0.0.1", "--nounixsocket",
		"--setParameter", "diagnosticDataCollectionEnabled=false"}
}
