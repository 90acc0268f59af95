package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
)

// pgCtlCluster is a private PostgreSQL cluster the test stops and starts
// with pg_ctl, as the postgres user when the test runs as root.
type pgCtlCluster struct {
	t         *testing.T
	bin, data string
	port      int
}

func (c *pgCtlCluster) run(args ...string) {
	c.t.Helper()
	if os.Geteuid() == 0 {
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
		c.t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func (c *pgCtlCluster) start() {
	c.run(filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-l", filepath.Join(c.data, "server.log"), "-w",
		"-o", "-p "+strconv.Itoa(c.port)+" -c listen_addresses=127.0.0.1 -c unix_socket_directories=", "start")
}

func (c *pgCtlCluster) stop() {
	c.run(filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-m", "fast", "-w", "stop")
}

// newPgCtlCluster makes and starts one; it is stopped when t ends.
func newPgCtlCluster(t *testing.T) *pgCtlCluster {
	t.Helper()
	bin, err := provision.PostgresBinDir()
	if err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "longhaul-store-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755) // the postgres user reaches its cluster under it
	c := &pgCtlCluster{t: t, bin: bin, data: filepath.Join(dir, "data"), port: freeport.ForTest(t)}
	if err := os.Mkdir(c.data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root, the cluster needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.data, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c.run(filepath.Join(bin, "initdb"), "-D", c.data, "-A", "trust", "-U", "postgres", "--no-sync")
	c.start()
	t.Cleanup(func() {
		_ = exec.Command("runuser", "-u", "postgres", "--", filepath.Join(bin, "pg_ctl"), "-D", c.data, "-m", "immediate", "-w", "stop").Run()
		_ = exec.Command(filepath.Join(bin, "pg_ctl"), "-D", c.data, "-m", "immediate", "-w", "stop").Run()
	})
	return c
}

// runInStore opens the results store at dsn (closed when t ends) and
// returns it with its one run, once the run's window index is stored.
func runInStore(t *testing.T, dsn string, index int) (store.Store, store.Run) {
	t.Helper()
	st := openStore(t, dsn)
	run := onlyRun(t, st)
	waitWindow(t, st, run.ID, index)
	return st, run
}

// TestSoakRidesOutAStoreOutage: the results store is a private PostgreSQL
// (--store postgres://…), stopped for 10 s mid-soak and started again: the
// run completes, every slot is stored once with no gap (the windows waited
// in memory and were written late, in order), and a store_behind finding
// says so.
func TestSoakRidesOutAStoreOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak (~45 s)")
	}
	const windows = 24
	c := newPgCtlCluster(t)
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	r := startSoakRun(t, localScenario(t, windows), "--store", dsn, "--data", t.TempDir(), "--format", "json")
	st, run := runInStore(t, dsn, 3)
	c.stop()
	time.Sleep(10 * time.Second)
	c.start()
	run, ws := r.completed(t, st, run.ID)
	if gaps := checkWindows(t, ws, windows); gaps != 0 {
		t.Errorf("%d gaps, want 0: no window is lost while the store is down", gaps)
	}
	fs, err := st.Findings(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	behind := false
	for _, f := range fs {
		behind = behind || f.Kind == analysis.KindStoreBehind
	}
	if !behind {
		t.Errorf("findings %+v: want store_behind", fs)
	}
}
