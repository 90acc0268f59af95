package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The images scripts/offline-images.sh builds.
const (
	offlinePostgresImage = "longhaul/postgres:15-offline"
	demoTargetImage      = "longhaul/demo-target:latest"
)

// docker runs the docker CLI and returns its trimmed stdout.
func docker(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// requireOfflineImages skips t unless a Docker engine answers and both images exist.
func requireOfflineImages(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := docker(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Skipf("no Docker engine answers: %v", err)
	}
	for _, img := range []string{offlinePostgresImage, demoTargetImage} {
		if _, err := docker(ctx, "image", "inspect", img); err != nil {
			t.Skipf("image %s is absent: run scripts/offline-images.sh", img)
		}
	}
}

// TestOfflineImages starts the offline PostgreSQL image and the demo target
// image on a private network, as the docker provider does, and drives the API.
func TestOfflineImages(t *testing.T) {
	requireOfflineImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var raw [4]byte
	rand.Read(raw[:])
	name := "longhaul-demo-test-" + hex.EncodeToString(raw[:])
	label := "dev.longhaul.test=" + name

	// Cleanups run last-in first-out: containers go before the network.
	cleanup := func(args ...string) {
		t.Cleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer ccancel()
			if _, err := docker(cctx, args...); err != nil && !strings.Contains(err.Error(), "No such") {
				t.Errorf("clean up: %v", err)
			}
		})
	}
	if _, err := docker(ctx, "network", "create", "--label", label, name); err != nil {
		t.Fatal(err)
	}
	cleanup("network", "rm", name)

	start := time.Now()
	phase := func(what string) { t.Logf("%s after %.1f s", what, time.Since(start).Seconds()) }
	// Registered before the run: a container created by a run that then
	// failed is removed too.
	cleanup("rm", "-f", "-v", name+"-db")
	pg, err := docker(ctx, "run", "-d", "--name", name+"-db", "--label", label, "--network", name, "--network-alias", "db",
		"-e", "POSTGRES_PASSWORD=x", "-p", "127.0.0.1::5432", offlinePostgresImage)
	if err != nil {
		t.Fatal(err)
	}
	// Like testcontainers' postgres module: the line appears twice on a first
	// start (the init server, then the real one).
	waitFor(ctx, t, "PostgreSQL ready", func() error {
		logs, err := exec.CommandContext(ctx, "docker", "logs", pg).CombinedOutput()
		if err != nil {
			return err
		}
		if n := strings.Count(string(logs), "database system is ready to accept connections"); n < 2 {
			return fmt.Errorf("ready line seen %d times; logs:\n%s", n, logs)
		}
		return nil
	})
	pgPort := mappedPort(ctx, t, pg, "5432/tcp")
	conn, err := pgx.Connect(ctx, "postgres://postgres:x@127.0.0.1:"+pgPort+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatalf("connect to the offline PostgreSQL image from the host: %v", err)
	}
	defer conn.Close(context.Background())
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil || !strings.HasPrefix(version, "PostgreSQL 15") {
		t.Fatalf("SELECT version(): %q, %v", version, err)
	}
	if _, err := pgx.Connect(ctx, "postgres://postgres:wrong@127.0.0.1:"+pgPort+"/postgres?sslmode=disable"); err == nil {
		t.Errorf("a wrong password was accepted: want scram-sha-256 auth for remote hosts")
	}

	phase("PostgreSQL ready")
	cleanup("rm", "-f", "-v", name+"-target")
	target, err := docker(ctx, "run", "-d", "--name", name+"-target", "--label", label, "--network", name,
		"-e", "DATABASE_URL=postgres://postgres:x@db:5432/postgres?sslmode=disable",
		"-p", "127.0.0.1::8080", demoTargetImage)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + mappedPort(ctx, t, target, "8080/tcp")
	waitFor(ctx, t, "demo target healthy", func() error {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /health: %s", resp.Status)
		}
		return nil
	})

	phase("demo target healthy")
	c := &apiClient{t: t, base: base, http: http.DefaultClient}
	token, _ := c.signUp("alice")
	var it apiItem
	c.mustDo("POST", "/items", token, `{"bucket":3,"title":"in a container","payload":{"k":"v"}}`, http.StatusCreated, &it)
	var list struct{ Items []apiItem }
	c.mustDo("GET", "/items?bucket=3", "", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != it.ID {
		t.Errorf("GET /items?bucket=3: got %+v, want the item just created", list.Items)
	}

	// The rows are in the containerised PostgreSQL, with the list index.
	var rows int
	var indexes int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM items), (SELECT count(*) FROM pg_indexes WHERE indexname = 'items_bucket_created_at_idx')`).Scan(&rows, &indexes); err != nil {
		t.Fatalf("query the target's tables: %v", err)
	}
	if rows != 1 || indexes != 1 {
		t.Errorf("items rows %d, list index %d; want 1 and 1", rows, indexes)
	}

	// SIGTERM reaches the target (PID 1 in a scratch image) and it stops cleanly.
	if _, err := docker(ctx, "stop", "-t", "10", target); err != nil {
		t.Fatal(err)
	}
	if code, err := docker(ctx, "inspect", "-f", "{{.State.ExitCode}}", target); err != nil || code != "0" {
		t.Errorf("demo target exit code after docker stop: %q, %v; want 0", code, err)
	}
	phase("demo target stopped")
}

func mappedPort(ctx context.Context, t *testing.T, container, port string) string {
	t.Helper()
	out, err := docker(ctx, "port", container, port)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out, "\n")
	i := strings.LastIndex(first, ":")
	if i < 0 {
		t.Fatalf("docker port %s %s: %q", container, port, out)
	}
	return first[i+1:]
}

// waitFor polls check every 200 ms until it succeeds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
