// Package mongoserver knows how to run a private MongoDB-protocol server
// from this host's binaries: MongoDB's mongod when it is on PATH, else
// FerretDB (a MongoDB wire-protocol server written in Go, Apache-2.0) over
// SQLite. The local provider (provision) and the tests' servers
// (internal/mongotest) start it the same way.
package mongoserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// Find returns mongod from PATH, else ferretdb from PATH or from where
// scripts/install-ferretdb.sh puts it (Go's bin directory, which is often
// not on PATH), else an error that names both and how to get them.
func Find() (Server, error) {
	if p, err := exec.LookPath("mongod"); err == nil {
		return Server{Path: p}, nil
	}
	if p, err := exec.LookPath("ferretdb"); err == nil {
		return Server{Path: p, FerretDB: true}, nil
	}
	for _, dir := range goBinDirs() {
		if p, err := exec.LookPath(filepath.Join(dir, "ferretdb")); err == nil {
			return Server{Path: p, FerretDB: true}, nil
		}
	}
	return Server{}, fmt.Errorf("neither mongod nor ferretdb is on PATH: install MongoDB's server, or FerretDB with `%s`", FerretDBInstall)
}

// goBinDirs are where `go install` and `go build -o $(go env GOPATH)/bin`
// put binaries: $GOBIN, each $GOPATH's bin, else ~/go/bin.
func goBinDirs() []string {
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		for _, d := range filepath.SplitList(gp) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	return dirs
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
	return s.mongodArgs(data, port)
}

// ArgsOverPostgres is FerretDB's command line over the PostgreSQL database
// at pgURL (prepared with BackendSetup), its state files in dir, listening
// on 127.0.0.1:port only, without authentication. For mongod it is Args
// with data under dir.
func (s Server) ArgsOverPostgres(dir, pgURL string, port int) []string {
	if !s.FerretDB {
		return s.mongodArgs(dir, port)
	}
	return []string{s.Path,
		"--handler=postgresql", "--postgresql-url=" + pgURL,
		"--listen-addr=127.0.0.1:" + strconv.Itoa(port),
		"--state-dir=" + dir,
		"--debug-addr=-",
		"--telemetry=disable",
		"--log-level=warn",
	}
}

func (s Server) mongodArgs(data string, port int) []string {
	return []string{s.Path, "--dbpath", data, "--port", strconv.Itoa(port),
		"--bind_ip", "127.0.0.1", "--nounixsocket",
		"--setParameter", "diagnosticDataCollectionEnabled=false"}
}

// BackendSetup prepares the PostgreSQL database FerretDB 1.24 stores its
// collections in (run as a superuser in that database before FerretDB
// starts), so that an index created through FerretDB serves equality
// filters as a MongoDB index does.
//
// FerretDB makes each index a B-tree on expressions (_jsonb->'field') and
// pushes every equality filter down as containment, _jsonb->$1 @> $2,
// which a B-tree cannot serve: every find scans its whole table, with or
// without the application's index (bench/ferretdb-pushdown/RESULTS.md).
// Without this, a MongoDB application's missing index cannot be told from
// a present one on FerretDB. An event trigger gives each such B-tree a
// companion GIN index (jsonb_path_ops, which serves @>) on its first key:
// the field an equality filter uses the index by, as MongoDB uses a
// compound index by its prefix. Dropping the index drops its companion.
// The filter's key is a parameter, so only a custom plan (the parameters'
// values planned in) can match the index's expression: plan_cache_mode
// force_custom_plan keeps PostgreSQL from settling on a generic plan.
//
// What stays unlike MongoDB: FerretDB sorts and limits in Go, so a find
// with an equality filter reads every document that matches it, where
// mongod would stop after the limit on a compound index.
func BackendSetup(database string) []string {
	return []string{
		`ALTER DATABASE ` + quoteIdent(database) + ` SET plan_cache_mode = force_custom_plan`,
		`CREATE FUNCTION longhaul_gin_companion() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
	cmd record;
	tbl regclass;
	ix name;
	key text;
BEGIN
	FOR cmd IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE object_type = 'index' LOOP
		SELECT i.indrelid::regclass, c.relname INTO tbl, ix
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
			WHERE i.indexrelid = cmd.objid AND am.amname = 'btree';
		CONTINUE WHEN tbl IS NULL;
		-- FerretDB's keys read (_jsonb -> 'field'::text); a dotted path
		-- (#>) is never pushed down to an index, so it gets none.
		key := pg_get_indexdef(cmd.objid, 1, true);
		CONTINUE WHEN key !~ '^\(_jsonb -> ''[^'']+''::text\)$';
		EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin (%s jsonb_path_ops)', left(ix, 59) || '_gin', tbl, key);
	END LOOP;
END $$`,
		`CREATE FUNCTION longhaul_gin_companion_drop() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
	obj record;
BEGIN
	FOR obj IN SELECT schema_name, object_name FROM pg_event_trigger_dropped_objects()
			WHERE object_type = 'index' AND object_name NOT LIKE '%\_gin' LOOP
		EXECUTE format('DROP INDEX IF EXISTS %I.%I', obj.schema_name, left(obj.object_name, 59) || '_gin');
	END LOOP;
END $$`,
		`CREATE EVENT TRIGGER longhaul_gin_companion ON ddl_command_end WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION longhaul_gin_companion()`,
		`CREATE EVENT TRIGGER longhaul_gin_companion_drop ON sql_drop WHEN TAG IN ('DROP INDEX') EXECUTE FUNCTION longhaul_gin_companion_drop()`,
	}
}

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
