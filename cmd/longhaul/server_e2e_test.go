package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
	"github.com/longhaul-dev/longhaul/store"
)

// startServer starts `longhaul server` with args on a free port of
// 127.0.0.1 and returns it with the frontend's address; it does not wait.
func startServerProc(t *testing.T, persistence string) (*proc, string) {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeport.ForTest(t)))
	return startProc(t, "server", "--persistence", persistence, "--addr", addr), addr
}

// TestServerOnPostgres: two `longhaul server`s started at once on one new
// PostgreSQL database both come up (one migrates the schema, the other
// waits for the lock and finds it done); after both stop, a server started
// again on it serves a soak run by a worker (--host-id team-host-1, which the
// run records as its host), with results in a PostgreSQL results database.
func TestServerOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak through longhaul server (~40 s)")
	}
	cluster := pgtest.Start(t)
	u, err := url.Parse(cluster)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/temporal" // not there yet: the servers create it
	persistence := u.String()
	results := pgtest.NewDatabase(t, cluster)

	s1, _ := startServerProc(t, persistence)
	s2, _ := startServerProc(t, persistence)
	s1.waitFor("temporal server at", 3*time.Minute)
	s2.waitFor("temporal server at", 3*time.Minute)
	s1.stop()
	s2.stop()

	pushes := make(chan string, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(zr)
		select {
		case pushes <- string(b):
		default:
		}
	}))
	defer receiver.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeport.ForTest(t)))
	s3 := startProc(t, "server", "--persistence", persistence, "--addr", addr, "--store", results, "--push-url", receiver.URL+"/api/v1/import/prometheus")
	s3.waitFor("temporal server at", 2*time.Minute)
	select {
	case body := <-pushes:
		if !strings.Contains(body, `longhaul_fleet_runs{host=`) || !strings.Contains(body, `process_cpu_seconds_total{host=`) {
			t.Errorf("the server's push lacks the fleet's or the process's metrics:\n%s", body)
		}
	case <-time.After(30 * time.Second):
		t.Error("no push from longhaul server --push-url within 30 s")
	}
	data := t.TempDir()
	w := startProc(t, "worker", "--temporal", addr, "--data", data, "--store", results, "--host-id", "team-host-1")
	w.waitFor("worker on", time.Minute)

	r := startSoakRun(t, localScenario(t, 3), "--temporal", addr, "--store", results, "--format", "json")
	if code := r.wait(t); code != exitOK {
		t.Fatalf("longhaul run exit %d, want 0; stderr:\n%s", code, r.stderr.String())
	}
	st := openStore(t, results)
	run, err := st.GetRun(context.Background(), onlyRun(t, st).ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.Completed {
		t.Errorf("status %s (%s), want completed", run.Status, run.Reason)
	}
	ws := runWindows(t, st, run.ID)
	checkWindows(t, ws, 3)
	var env struct {
		Host string `json:"host"`
	}
	if err := json.Unmarshal(run.Environment, &env); err != nil || env.Host != "team-host-1" {
		t.Errorf("environment host %q (%v), want the worker's --host-id team-host-1", env.Host, err)
	}
}
