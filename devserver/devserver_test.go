package devserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
)

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 4}))
}

// greet sleeps for d (a durable timer) and answers.
func greet(ctx workflow.Context, name string, d time.Duration) (string, error) {
	if err := workflow.Sleep(ctx, d); err != nil {
		return "", err
	}
	return "hello " + name, nil
}

func dial(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.Address(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(quietLogger()),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", s.Address(), err)
	}
	return c
}

func startWorker(t *testing.T, c client.Client, queue string) worker.Worker {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	return w
}

func testPort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// takenPort returns a port of 127.0.0.1 that stays bound until the test ends.
func takenPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// TestRunStopRestart runs a workflow, then starts one with a timer, stops the
// server while it waits, and checks that a server restarted on the same file
// finishes it.
func TestRunStopRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := Options{DataDir: dir, Port: testPort(t), Logger: quietLogger()}

	t0 := time.Now()
	step := func(what string) { t.Logf("%6.2fs %s", time.Since(t0).Seconds(), what) }
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	step("started")
	if err := CheckHealth(ctx, s.Address()); err != nil {
		t.Errorf("CheckHealth of the running server: %v", err)
	}
	if got, want := s.Address(), "127.0.0.1:"+strconv.Itoa(opts.Port); got != want {
		t.Errorf("Address() = %q, want %q", got, want)
	}
	c := dial(t, s)
	w := startWorker(t, c, "q")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "quick", TaskQueue: "q"}, greet, "quick", time.Duration(0))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "hello quick"; got != want {
		t.Errorf("quick workflow = %q, want %q", got, want)
	}
	step("quick workflow done")

	// Start a workflow whose timer outlives this server.
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "durable", TaskQueue: "q"}, greet, "durable", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	c.Close()
	step("worker stopped")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	step("server stopped")
	if err := s.Stop(); err != nil { // idempotent
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, DBFileName)); err != nil {
		t.Fatalf("database file: %v", err)
	}

	opts.Port = 0 // any port will do the second time
	s2, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("restart on the same file: %v", err)
	}
	defer s2.Stop()
	step("restarted")
	c2 := dial(t, s2)
	defer c2.Close()
	w2 := startWorker(t, c2, "q")
	defer w2.Stop()
	if err := c2.GetWorkflow(ctx, "durable", "").Get(ctx, &got); err != nil {
		t.Fatalf("durable workflow after restart: %v", err)
	}
	if want := "hello durable"; got != want {
		t.Errorf("durable workflow = %q, want %q", got, want)
	}
	step("durable workflow done")
}

func TestStartErrors(t *testing.T) {
	taken := takenPort(t)

	tests := []struct {
		name string
		opts Options
	}{
		{"no data dir", Options{}},
		{"port taken", Options{DataDir: t.TempDir(), Port: taken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Start(ctx, tt.opts)
			if err == nil {
				s.Stop()
				t.Fatal("Start succeeded, want an error")
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Start timed out instead of failing fast: %v", err)
			}
		})
	}
}

func TestFrontendPortFallsBack(t *testing.T) {
	if !portFree(DefaultPort) {
		got, err := frontendPort(host, 0)
		if err != nil || got == DefaultPort || got == 0 {
			t.Fatalf("frontendPort(host, 0) with %d taken = %d, %v; want another free port", DefaultPort, got, err)
		}
		return
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(DefaultPort)))
	if err != nil {
		t.Skipf("cannot hold port %d: %v", DefaultPort, err)
	}
	defer l.Close()
	got, err := frontendPort(host, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got == DefaultPort || got == 0 {
		t.Errorf("frontendPort(host, 0) with %d taken = %d, want another free port", DefaultPort, got)
	}
}

// TestPortSetDistinct: the services' ports are distinct and never the
// frontend's, even when the frontend's port is the kernel's next pick.
func TestPortSetDistinct(t *testing.T) {
	frontend := testPort(t)
	ps := portSet{avoid: frontend}
	defer ps.close()
	seen := map[int]bool{frontend: true}
	for range 7 {
		p, err := ps.next()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice (frontend %d)", p, frontend)
		}
		seen[p] = true
	}
}

// TestServerFatalIsAnError: a frontend port taken after it was checked (by
// another process, in the gap before the server binds it) makes the server
// fail while it is built; that is an error naming the port, not a panic.
func TestServerFatalIsAnError(t *testing.T) {
	taken := takenPort(t)
	cfg, err := serverConfig(sqlitePersistence(filepath.Join(t.TempDir(), DBFileName)), host, taken)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlite.SetupSchema(cfg.Persistence.DataStores[sqliteplugin.PluginName].SQL); err != nil {
		t.Fatal(err)
	}
	srv, err := startServer(cfg, nil, newServerLogger(quietLogger(), new(atomic.Bool)))
	if err == nil {
		_ = srv.Stop()
		t.Fatalf("server started on taken port %d", taken)
	}
	if msg := err.Error(); !strings.Contains(msg, "address already in use") || !strings.Contains(msg, strconv.Itoa(taken)) {
		t.Errorf("error %q, want one naming the port and \"address already in use\"", msg)
	}
	t.Logf("error: %v", err)
}

// TestStartRetriesALostPort: the frontend port Start chose is bound by
// another process before the server binds it (two longhauls starting at
// once); Start chooses again instead of failing.
func TestStartRetriesALostPort(t *testing.T) {
	taken := takenPort(t)
	calls := 0
	pickFrontendPort = func(bindHost string, asked int) (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return frontendPort(bindHost, asked)
	}
	t.Cleanup(func() { pickFrontendPort = frontendPort })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{DataDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Start with its first port lost: %v", err)
	}
	defer s.Stop()
	if calls < 2 || strings.HasSuffix(s.Address(), ":"+strconv.Itoa(taken)) {
		t.Errorf("address %s after %d picks; want a second pick, not the lost port %d", s.Address(), calls, taken)
	}
}
