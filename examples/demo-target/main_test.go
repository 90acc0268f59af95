package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// runMainEnv makes the test binary act as the demo-target command, so tests
// can run the real main (env parsing, logging, signals) as a child process.
const runMainEnv = "DEMO_TARGET_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// startTarget runs the demo target as a child process with env added, waits
// until it listens and returns its base URL. It is stopped with SIGTERM (and
// must exit cleanly) when t ends.
func startTarget(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "PORT=0", "DEMO_SQLITE="+filepath.Join(t.TempDir(), "demo.db"))
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start demo target: %v", err)
	}
	addr := make(chan string, 1)
	var logMu sync.Mutex
	var logLines []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logLines = append(logLines, sc.Text())
			logMu.Unlock()
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
	}()
	logs := func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Join(logLines, "\n")
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("demo target exited with %v after SIGTERM; log:\n%s", err, logs())
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Errorf("demo target did not stop within 15 s of SIGTERM")
		}
	})
	select {
	case a := <-addr:
		_, port, _ := strings.Cut(a, "]:")
		return "http://127.0.0.1:" + port
	case err := <-exited:
		t.Fatalf("demo target exited before listening: %v; log:\n%s", err, logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("demo target did not listen within 30 s; log:\n%s", logs())
	}
	return ""
}

// postGCHeap forces a GC in the target and returns its live heap.
func postGCHeap(t *testing.T, base string) uint64 {
	t.Helper()
	resp, err := http.Post(base+"/debug/gc", "", nil)
	if err != nil {
		t.Fatalf("POST /debug/gc: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		HeapBytes uint64 `json:"heap_bytes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.HeapBytes == 0 {
		t.Fatalf("POST /debug/gc: %+v, %v", out, err)
	}
	return out.HeapBytes
}

// hammer sends n GET requests to url from 4 keep-alive connections.
func hammer(t *testing.T, url string, n int) {
	t.Helper()
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/workers; i++ {
				resp, err := http.Get(url)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestLeakSwitch runs the real command: with DEMO_LEAK_BYTES the post-GC heap
// grows by about requests × bytes; without it, it stays flat.
func TestLeakSwitch(t *testing.T) {
	const requests = 4000
	tests := []struct {
		name                   string
		env                    []string
		wantMinMiB, wantMaxMiB float64
	}{
		{"clean", nil, -64, 1},
		{"DEMO_LEAK_BYTES=4096", []string{"DEMO_LEAK_BYTES=4096"}, 0.9 * requests * 4096 / (1 << 20), 1.5 * requests * 4096 / (1 << 20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := startTarget(t, tt.env...)
			hammer(t, base+"/health", 500) // warm up pools and buffers
			before := postGCHeap(t, base)
			hammer(t, base+"/health", requests)
			after := postGCHeap(t, base)
			growthMiB := (float64(after) - float64(before)) / (1 << 20)
			t.Logf("post-GC heap %d → %d bytes (%+.2f MiB) over %d requests", before, after, growthMiB, requests)
			if growthMiB < tt.wantMinMiB || growthMiB > tt.wantMaxMiB {
				t.Errorf("post-GC heap grew %.2f MiB, want %.2f to %.2f", growthMiB, tt.wantMinMiB, tt.wantMaxMiB)
			}
			// The heap probe reads the same figure from /metrics.
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var gauge uint64
			for _, line := range strings.Split(string(body), "\n") {
				if v, ok := strings.CutPrefix(line, "go_gc_heap_live_bytes "); ok {
					fmt.Sscan(v, &gauge)
				}
			}
			if gauge == 0 || float64(gauge) < 0.9*float64(after) || float64(gauge) > 1.1*float64(after)+(1<<20) {
				t.Errorf("go_gc_heap_live_bytes = %d, want about the last post-GC heap %d", gauge, after)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    config
		wantErr string
	}{
		{env: nil, want: config{Port: 8080, IndexBucket: true}},
		{env: map[string]string{"PORT": "9000", "DATABASE_URL": "postgres://x", "DEMO_INDEX_BUCKET": "false", "DEMO_LEAK_BYTES": "2048"},
			want: config{Port: 9000, DatabaseURL: "postgres://x", IndexBucket: false, LeakBytes: 2048}},
		{env: map[string]string{"DEMO_SQLITE": "/data/x.db", "DEMO_INDEX_BUCKET": "1"}, want: config{Port: 8080, SQLitePath: "/data/x.db", IndexBucket: true}},
		{env: map[string]string{"PORT": "http"}, wantErr: `PORT="http"`},
		{env: map[string]string{"PORT": "70000"}, wantErr: `PORT="70000"`},
		{env: map[string]string{"DEMO_INDEX_BUCKET": "no-thanks"}, wantErr: `DEMO_INDEX_BUCKET="no-thanks"`},
		{env: map[string]string{"DEMO_LEAK_BYTES": "-1"}, wantErr: `DEMO_LEAK_BYTES="-1"`},
		{env: map[string]string{"DEMO_LEAK_BYTES": "2k"}, wantErr: `DEMO_LEAK_BYTES="2k"`},
		{env: map[string]string{"DEMO_CPU_BURN_US": "40", "DEMO_RESPONSE_VARIANT": "1"}, want: config{Port: 8080, IndexBucket: true, CPUBurnUs: 40, Variant: 1}},
		{env: map[string]string{"DEMO_CPU_BURN_US": "-5"}, wantErr: `DEMO_CPU_BURN_US="-5"`},
		{env: map[string]string{"DEMO_DB_SLEEP_MS": "20", "DATABASE_URL": "postgres://x/y"}, want: config{Port: 8080, IndexBucket: true, DatabaseURL: "postgres://x/y", DBSleep: 20 * time.Millisecond}},
		{env: map[string]string{"DEMO_DB_SLEEP_MS": "20"}, wantErr: "DEMO_DB_SLEEP_MS needs a database server"},
		{env: map[string]string{"DEMO_DB_SLEEP_MS": "20", "DATABASE_URL": "mongodb://127.0.0.1:27017/demo"}, wantErr: "DEMO_DB_SLEEP_MS needs PostgreSQL or MySQL"},
		{env: map[string]string{"DEMO_RESPONSE_VARIANT": "2"}, wantErr: `DEMO_RESPONSE_VARIANT="2"`},
		{env: map[string]string{"DEMO_WS_UNCLOSED": "true"}, want: config{Port: 8080, IndexBucket: true, WebSocket: wsOptions{Unclosed: true}}},
		{env: map[string]string{"DEMO_WS_UNCLOSED": "sometimes"}, wantErr: `DEMO_WS_UNCLOSED="sometimes"`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.env), func(t *testing.T) {
			got, err := configFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want a usage error mentioning %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestBadInputExitCode checks that bad configuration is one line and exit code 2.
func TestBadInputExitCode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "DEMO_LEAK_BYTES=lots")
	out, err := cmd.CombinedOutput()
	exitErr, ok := err.(*exec.ExitError)
	if !ok || exitErr.ExitCode() != 2 {
		t.Fatalf("got %v, want exit code 2; output %s", err, out)
	}
	if lines := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; lines != 1 || !strings.Contains(string(out), "DEMO_LEAK_BYTES") {
		t.Errorf("got output %q, want one line naming DEMO_LEAK_BYTES", out)
	}
}
