package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/testbin"
)

// helperEnv switches the test binary into a helper process (see TestMain).
const helperEnv = "LONGHAUL_PROVISION_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "provision":
		// Provision an environment (local, or docker with
		// LONGHAUL_TEST_PROVIDER=docker) from the JSON request on stdin,
		// print the Environment, then wait to be killed: the "worker" that
		// dies under its target.
		var req Request
		if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		opts := Options{DataDir: os.Getenv("LONGHAUL_TEST_DATA"), StopGrace: time.Second}
		var p Provisioner = NewLocal(opts)
		if os.Getenv("LONGHAUL_TEST_PROVIDER") == "docker" {
			d, err := NewDocker(context.Background(), opts)
			if err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			p = d
		}
		env, err := p.Provision(context.Background(), req)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		b, _ := json.Marshal(env)
		fmt.Println(string(b))
		select {}
	}
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// targetBinary builds testdata/target (a module of its own) statically
// (CGO_ENABLED=0: it runs FROM scratch too) once per test process.
func targetBinary(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, filepath.Join("testdata", "target"), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
}

// testLogger sends provider logs to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// get returns the body of GET url, failing the test on a non-200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return string(b)
}

// testContext bounds a test.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
