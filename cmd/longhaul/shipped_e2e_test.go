package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
)

// TestShippedScenariosRun: every scenario shipped in scenarios/ runs as
// shipped on this machine, for 5 seconds each: one with an environment under
// longhaul run (on the provider it names), a target-less one — a load
// description — under longhaul drive against the demo target. What this
// host cannot serve (scenario validate says why) is skipped with that
// reason, never failed: CI installs what every one of them needs.
func TestShippedScenariosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end runs")
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("found %d shipped scenarios (%v), want at least 5", len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := scenarios.LoadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			perr := provision.Preflight(context.Background(), s.Environment, "", provision.Options{Logger: discard})
			switch {
			case perr == nil:
				runShipped(t, file)
			case strings.Contains(perr.Error(), provision.ErrNoTarget.Error()):
				driveShipped(t, file)
			default:
				t.Skipf("this host cannot serve it: %v", perr)
			}
		})
	}
}

// runShipped runs file as shipped for 5 s in 1 s windows.
func runShipped(t *testing.T, file string) {
	data := t.TempDir()
	code, rep, stderr := runReport(t, file, "--data", data, "--duration", "5s", "--window", "1s")
	if code != exitOK || rep.Status != store.Completed {
		t.Fatalf("exit %d, status %s (%s), want 0 and completed; stderr:\n%s", code, rep.Status, rep.Reason, stderr)
	}
	if rep.Windows+rep.Gaps != 5 {
		t.Errorf("%d windows, want 5", rep.Windows)
	}
	checkRequested(t, data)
}

// driveShipped drives file for 5 s at the demo target on a free port.
func driveShipped(t *testing.T, file string) {
	url := startDemoTarget(t)
	data := t.TempDir()
	code, _, stderr := runCommand(t, "drive", "--scenario", file, "--target", url, "--duration", "5s", "--window", "1s", "--data", data, "--format", "json")
	if code != exitOK {
		t.Fatalf("drive: exit %d, want 0; stderr:\n%s", code, stderr)
	}
	checkRequested(t, data)
}

// checkRequested fails unless the run under data sent requests that the
// target answered.
func checkRequested(t *testing.T, data string) {
	t.Helper()
	st := storeOf(t, data)
	run := onlyRun(t, st)
	ws := runWindows(t, st, run.ID)
	var requests, ok int64
	for _, w := range ws {
		requests += w.Requests
		ok += w.OK
	}
	if requests == 0 || ok == 0 {
		t.Errorf("%d requests, %d ok over %d windows; want the target answering", requests, ok, len(ws))
	}
}

// startDemoTarget runs the demo target (SQLite) on a free loopback port
// until the test ends and returns its URL.
func startDemoTarget(t *testing.T) string {
	t.Helper()
	bin := buildDemoTarget(t)
	port := freeport.ForTest(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "DEMO_SQLITE="+filepath.Join(t.TempDir(), "demo.db"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo target did not answer /health within 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
