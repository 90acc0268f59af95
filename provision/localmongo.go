package provision

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/internal/mongoserver"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// startMongo starts a mongod (or FerretDB over a private PostgreSQL
// cluster: startFerretDBBackend) with its data in a new temp dir on a free
// loopback port and returns the endpoint. The server
// runs without authentication (as the docker image does without its
// MONGO_INITDB_* variables): it listens on 127.0.0.1 only, and
// {{.Database.URL}} is mongodb://127.0.0.1:PORT/NAME. The database itself
// is created by the first write, as MongoDB does. onStart records the
// process as soon as it exists, so a worker killed meanwhile leaves nothing
// a retry's (or the sweeper's) teardown cannot find.
func (l *Local) startMongo(ctx context.Context, envID, envDir string, spec scenarios.Database, onStart func(Process)) (localDB, error) {
	const kind = "mongodb"
	log := l.opts.Logger.With("env", envID)
	srv, err := mongoserver.Find()
	if err != nil {
		return localDB{}, fmt.Errorf("%w: database.kind mongodb on the local provider: %v, or use provider: docker", ErrInvalidSpec, err)
	}
	dir, err := os.MkdirTemp(l.opts.TempDir, "longhaul-mongodb-")
	if err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	if err := os.WriteFile(filepath.Join(dir, dirMarkerFile), []byte(envID+"\n"), 0o644); err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	proc := Process{DataDir: dir}
	onStart(proc) // the directory is recorded before anything can fail
	logPath := filepath.Join(envDir, kind+".log")
	server := srv.Name()

	start := time.Now()
	name, usr, pw := dbNames(spec)
	args := func(port int) []string { return srv.Args(dir, filepath.Join(dir, "data"), port) }
	var backendURL string
	if srv.FerretDB {
		if backendURL, err = l.startFerretDBBackend(ctx, log, envID, envDir, dir); err != nil {
			return localDB{}, fmt.Errorf("start %s (%s): %w", kind, server, err)
		}
		args = func(port int) []string { return srv.ArgsOverPostgres(dir, backendURL, port) }
	} else if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	var port int
	for attempt := 1; ; attempt++ {
		if port, err = freePort(); err != nil {
			return localDB{}, fmt.Errorf("start %s: pick a port: %w", kind, err)
		}
		exited, err := l.start(args(port), dir, nil, markerFor(envID, kind), logPath, nil, func(pid int) {
			proc.PID = pid
			onStart(proc)
		})
		if err != nil {
			return localDB{}, fmt.Errorf("start %s (%s): %w", kind, server, err)
		}
		err = waitMongo(ctx, mongoURL("127.0.0.1", port, ""), server, DefaultHealthTimeout, exited)
		if err == nil {
			break
		}
		tail := lastLines(logPath, 20)
		// The free port may have been taken between the pick and the bind.
		if attempt < 3 && strings.Contains(strings.ToLower(tail), "address already in use") {
			log.Info(server+" port taken; retrying", "port", port)
			continue
		}
		return localDB{}, fmt.Errorf("start %s (%s): %w", kind, server, errWithTail(err, "its log", tail))
	}
	u := mongoURL("127.0.0.1", port, name)
	log.Info(kind+" ready", "server", server, "port", port, "seconds", time.Since(start).Seconds())
	return localDB{
		endpoint: DatabaseEndpoint{Kind: kind, URL: u, TargetURL: u, Process: proc, BackendURL: backendURL},
		template: templateDB{URL: u, DSN: u, Host: "127.0.0.1", Port: port, Name: name, User: usr, Password: pw},
	}, nil
}

// ferretDBDatabase is the PostgreSQL database FerretDB keeps its
// databases in (one schema each) in the cluster startFerretDBBackend makes.
const ferretDBDatabase = "ferretdb"

// startFerretDBBackend starts the private PostgreSQL cluster FerretDB
// stores its collections in, in dir/pg with its output in
// envDir/ferretdb-postgres.log, prepared with mongoserver.BackendSetup, and
// returns the URL FerretDB and the database probe connect with (the
// superuser, over 127.0.0.1 only). Its processes carry the mongodb marker,
// as FerretDB's do: teardown and the sweep stop both as one database, and
// the directory goes with the mongodb directory. (Its PID is not recorded:
// the marker finds it.)
func (l *Local) startFerretDBBackend(ctx context.Context, log *slog.Logger, envID, envDir, dir string) (string, error) {
	// The postgres account must reach dir/pg through dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	pgDir := filepath.Join(dir, "pg")
	if err := os.Mkdir(pgDir, 0o700); err != nil {
		return "", err
	}
	pg, err := l.startCluster(ctx, log, pgDir, filepath.Join(envDir, "ferretdb-postgres.log"), markerFor(envID, "mongodb"), func(int) {})
	if err != nil {
		return "", fmt.Errorf("its PostgreSQL: %w", err)
	}
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
	if err := execAll(ctx, admin, "CREATE DATABASE "+pgx.Identifier{ferretDBDatabase}.Sanitize()); err != nil {
		return "", fmt.Errorf("its PostgreSQL: %w", err)
	}
	backend := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.port, ferretDBDatabase)
	if err := execAll(ctx, backend, mongoserver.BackendSetup(ferretDBDatabase)...); err != nil {
		return "", fmt.Errorf("prepare its PostgreSQL: %w", err)
	}
	return backend, nil
}

// waitMongo waits until the server at uri answers a ping.
func waitMongo(ctx context.Context, uri, server string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		last = pingMongo(ctx, uri)
		if last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%w: %s exited before it was ready", ErrNotReady, server)
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not answering after %s (last: %s)", ErrNotReady, server, timeout, oneLine(last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pingMongo connects to uri once and runs ping.
func pingMongo(ctx context.Context, uri string) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(2 * time.Second).SetConnectTimeout(2 * time.Second))
	if err != nil {
		return err
	}
	defer c.Disconnect(context.WithoutCancel(ctx))
	err = c.Database("admin").RunCommand(pctx, bson.D{{Key: "ping", Value: 1}}).Err()
	if err != nil && errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("no answer to ping within 2s: %w", err)
	}
	return err
}

// mongoURL is the database's URL in MongoDB's scheme, as {{.Database.URL}}
// renders it: no credentials, since the servers run without authentication.
func mongoURL(host string, port int, name string) string {
	u := url.URL{Scheme: "mongodb", Host: net.JoinHostPort(host, strconv.Itoa(port)), Path: "/" + name}
	return u.String()
}
