package provision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/internal/mongoserver"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// startMongo starts a mongod (or FerretDB over SQLite) with its data in a
// new temp dir on a free loopback port and returns the endpoint. The server
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
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		return localDB{}, fmt.Errorf("start %s: %w", kind, err)
	}
	logPath := filepath.Join(envDir, kind+".log")
	server := srv.Name()

	start := time.Now()
	name, usr, pw := dbNames(spec)
	var port int
	for attempt := 1; ; attempt++ {
		if port, err = freePort(); err != nil {
			return localDB{}, fmt.Errorf("start %s: pick a port: %w", kind, err)
		}
		exited, err := l.start(srv.Args(dir, data, port), dir, nil, markerFor(envID, kind), logPath, nil, func(pid int) {
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
		endpoint: DatabaseEndpoint{Kind: kind, URL: u, TargetURL: u, Process: proc},
		template: templateDB{URL: u, DSN: u, Host: "127.0.0.1", Port: port, Name: name, User: usr, Password: pw},
	}, nil
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
