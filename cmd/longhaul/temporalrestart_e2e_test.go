package main

import (
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
)

// TestSoakRidesOutATemporalServerRestart: `longhaul server` on PostgreSQL
// is stopped mid-soak and started again on the same address; the worker's
// drive heartbeats through the gap and the run completes with every slot
// stored once, no gap.
func TestSoakRidesOutATemporalServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak through a restarted longhaul server (~45 s)")
	}
	const windows = 36
	cluster := pgtest.Start(t)
	u, err := url.Parse(cluster)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/temporal" // the server creates it
	persistence := u.String()
	results := pgtest.NewDatabase(t, cluster)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeport.ForTest(t)))
	server := func() *proc {
		s := startProc(t, "server", "--persistence", persistence, "--addr", addr, "--store", results)
		s.waitFor("temporal server at", 3*time.Minute)
		return s
	}
	s1 := server()
	w := startProc(t, "worker", "--temporal", addr, "--data", t.TempDir(), "--store", results)
	w.waitFor("worker on", time.Minute)

	r := startSoakRun(t, localScenario(t, windows), "--temporal", addr, "--store", results, "--format", "json")
	st, run := runInStore(t, results, 3)
	s1.stop()
	time.Sleep(5 * time.Second)
	restarted := time.Now()
	server()
	t.Logf("the server was answering again %.1f s after it was stopped", time.Since(restarted).Seconds()+5)
	_, ws := r.completed(t, st, run.ID)
	if gaps := checkWindows(t, ws, windows); gaps != 0 {
		t.Errorf("%d gaps, want 0: the drive heartbeats through the server's restart", gaps)
	}
}
