package probes

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeThread is one thread of a fake process: its name and CPU ticks.
type fakeThread struct {
	comm   string
	ticks  uint64
	waitNs uint64
}

type fakeTask struct {
	ppid, pgrp int
	cgroup     string
	threads    map[int]fakeThread // tid → thread; the main thread's tid is the pid
}

func statLine(pid int, comm string, ppid, pgrp int, ticks uint64) string {
	// utime = ticks, stime = 0; starttime (field 22) = 100 + pid.
	return fmt.Sprintf("%d (%s) S %d %d 0 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 1000 10\n", pid, comm, ppid, pgrp, ticks, 100+pid)
}

// writeThreadProc writes a fake /proc: per process its stat (the sum of its
// threads' ticks), cgroup, status and task/<tid>/{stat,schedstat}.
func writeThreadProc(t *testing.T, dir string, procs map[int]fakeTask) {
	t.Helper()
	hz, _ := ClockTicksPerSecond()
	for pid, p := range procs {
		d := filepath.Join(dir, fmt.Sprint(pid))
		var sum uint64
		for tid, th := range p.threads {
			sum += th.ticks
			td := filepath.Join(d, "task", fmt.Sprint(tid))
			if err := os.MkdirAll(td, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(td, "stat"), []byte(statLine(tid, th.comm, p.ppid, p.pgrp, th.ticks)), 0o644)
			os.WriteFile(filepath.Join(td, "schedstat"), fmt.Appendf(nil, "%d %d 7\n", th.ticks*1e9/uint64(hz), th.waitNs), 0o644)
		}
		os.WriteFile(filepath.Join(d, "stat"), []byte(statLine(pid, p.threads[pid].comm, p.ppid, p.pgrp, sum)), 0o644)
		os.WriteFile(filepath.Join(d, "cgroup"), []byte(p.cgroup+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "status"), []byte("Name:\tx\nCpus_allowed_list:\t0-3\n"), 0o644)
	}
}

func TestThreadCPUFakeProc(t *testing.T) {
	hz, _ := ClockTicksPerSecond()
	const container = "0123456789abcdef0123"
	const self = 40000
	procs := func(step uint64) map[int]fakeTask {
		return map[int]fakeTask{
			// longhaul: ran 0.5 s and waited 0.25 s per second.
			self: {ppid: 1, pgrp: self, threads: map[int]fakeThread{self: {"longhaul", step * 50 * uint64(hz) / 100, step * 2.5e8}}},
			// The target: a main thread (node) and a helper; a child
			// process with one thread.
			50001: {ppid: 1, pgrp: 50001, threads: map[int]fakeThread{
				50001: {"node", step * 60 * uint64(hz) / 100, step * 3.5e8},
				50011: {"V8 Worker (1)", step * 10 * uint64(hz) / 100, 0},
			}},
			50002: {ppid: 50001, pgrp: 50001, threads: map[int]fakeThread{50002: {"sh", step * 5 * uint64(hz) / 100, 0}}},
			// The database in a container: two processes.
			50003: {ppid: 1, pgrp: 50003, cgroup: "0::/system.slice/docker-" + container + ".scope",
				threads: map[int]fakeThread{50003: {"postgres", step * 20 * uint64(hz) / 100, 0}}},
			50004: {ppid: 50003, pgrp: 50003, cgroup: "0::/system.slice/docker-" + container + ".scope",
				threads: map[int]fakeThread{50004: {"postgres: longhaul", step * 30 * uint64(hz) / 100, step * 1e8}}},
			// Someone else's busy process: neither.
			50005: {ppid: 1, pgrp: 50005, threads: map[int]fakeThread{50005: {"cc1", step * uint64(hz), 0}}},
		}
	}
	dir := t.TempDir()
	writeThreadProc(t, dir, procs(1))
	tc := NewThreadCPU(ThreadCPUConfig{Proc: dir, Self: self, PID: 50001, DatabaseContainerID: container})
	t0 := time.Unix(1000, 0)
	if _, ok, err := tc.sampleAt(t0); ok || err != nil {
		t.Fatalf("first sample: ok %v, err %v; want priming only", ok, err)
	}
	// Two seconds pass: every figure above doubles.
	writeThreadProc(t, dir, procs(3))
	r, ok, err := tc.sampleAt(t0.Add(2 * time.Second))
	if !ok || err != nil {
		t.Fatalf("second sample: ok %v, err %v", ok, err)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.011 {
			t.Errorf("%s = %.3f, want %.3f", name, got, want)
		}
	}
	if r.HottestThread != "node" || !r.HottestThreadMain {
		t.Errorf("hottest thread %q (main %v), want node (main)", r.HottestThread, r.HottestThreadMain)
	}
	// node ran 0.6 s a second and waited for a CPU 0.35 s: busy 0.95.
	near("hottest thread cores", r.HottestThreadCores, 0.60)
	near("hottest thread busy", r.HottestThreadBusy, 0.95)
	near("target cores", r.TargetCores, 0.75)
	near("target busy cores", r.TargetBusyCores, 1.10)
	near("database cores", r.DatabaseCores, 0.50)
	near("database busy cores", r.DatabaseBusyCores, 0.60)
	near("driver cores", r.DriverCores, 0.50)
	near("driver busy cores", r.DriverBusyCores, 0.75)
	if r.Threads != 3 || !r.Database || !r.Driver || !r.HasBusy || r.CoresAllowed != 4 || r.Seconds != 2 || r.HottestThreadID != 50001 {
		t.Errorf("threads %d, database %v, driver %v, busy %v, cores allowed %v, seconds %v, hottest tid %d; want 3, true, true, true, 4, 2, 50001",
			r.Threads, r.Database, r.Driver, r.HasBusy, r.CoresAllowed, r.Seconds, r.HottestThreadID)
	}

	// The target gone: an error, and the next reading primes again.
	os.RemoveAll(filepath.Join(dir, "50001"))
	os.RemoveAll(filepath.Join(dir, "50002"))
	if _, ok, err := tc.sampleAt(t0.Add(3 * time.Second)); ok || err == nil {
		t.Errorf("target gone: ok %v, err %v; want ErrNoThreads", ok, err)
	}
}

func TestParseThreadStat(t *testing.T) {
	comm, st, ok := parseThreadStat([]byte(statLine(7, "a (b) c", 3, 4, 42)))
	if !ok || string(comm) != "a (b) c" || st.ppid != 3 || st.pgrp != 4 || st.ticks != 42 || st.start != 107 {
		t.Errorf("got %q %+v %v", comm, st, ok)
	}
	if _, _, ok := parseThreadStat([]byte("7 (x) S 1 2")); ok {
		t.Error("a truncated line parsed")
	}
}

func TestCountCPUList(t *testing.T) {
	for s, want := range map[string]int{"0-3": 4, "0": 1, "0-1,4,6-7": 5, "": 0} {
		if got := countCPUList(s); got != want {
			t.Errorf("countCPUList(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestThreadCPUSpinningThread reads this test process's own threads while
// a goroutine spins on a locked OS thread: that thread is the busiest, busy
// nearly the whole interval (running, or waiting for a CPU on a loaded
// machine), and its CPU time agrees with what the thread measures itself
// (CLOCK_THREAD_CPUTIME_ID).
func TestThreadCPUSpinningThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	var stop atomic.Bool
	var tid atomic.Int64
	cpu := make(chan [2]float64)
	start := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid.Store(int64(unix.Gettid()))
		close(start)
		var c0, c1 unix.Timespec
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &c0)
		for n := 0; !stop.Load(); n++ {
		}
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &c1)
		cpu <- [2]float64{float64(c0.Nano()) / 1e9, float64(c1.Nano()) / 1e9}
	}()
	<-start
	born := time.Now()
	time.Sleep(100 * time.Millisecond)

	tc := NewThreadCPU(ThreadCPUConfig{PID: os.Getpid()})
	if _, _, err := tc.Sample(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	r, ok, err := tc.Sample()
	stop.Store(true)
	own := <-cpu
	life := time.Since(born).Seconds()
	if !ok || err != nil {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	t.Logf("hottest %q (tid %d, main %v) of %d threads: %.2f cores, busy %.2f; process %.2f cores, busy %.2f, of %.0f allowed; the spinner measured %.2f s of CPU in %.2f s of life",
		r.HottestThread, r.HottestThreadID, r.HottestThreadMain, r.Threads, r.HottestThreadCores, r.HottestThreadBusy,
		r.TargetCores, r.TargetBusyCores, r.CoresAllowed, own[1]-own[0], life)
	if r.HottestThreadID != int(tid.Load()) {
		t.Errorf("hottest thread %d, want the spinner %d", r.HottestThreadID, tid.Load())
	}
	if !r.HasBusy {
		t.Skip("no schedstat on this kernel: the busy figures are not read")
	}
	// Running or runnable all the time: busy near 1 whatever the load.
	if r.HottestThreadBusy < 0.9 || r.HottestThreadBusy > 1.05 {
		t.Errorf("spinner busy %.2f of the interval, want near 1", r.HottestThreadBusy)
	}
	// Its CPU in the interval is at most what it measured over its whole
	// life, and most of the interval's share of that.
	ran, measured := r.HottestThreadCores*r.Seconds, own[1]-own[0]
	if ran > measured+0.02 || ran < 0.8*measured*r.Seconds/life {
		t.Errorf("spinner ran %.2f s in the %.2f s interval; it measured %.2f s over its %.2f s", ran, r.Seconds, measured, life)
	}
	if r.CoresAllowed < 1 || !r.Driver || r.DriverCores < r.HottestThreadCores-0.02 {
		t.Errorf("cores allowed %v, driver (this process) read %v at %.2f cores; want ≥ 1 and at least the spinner's", r.CoresAllowed, r.Driver, r.DriverCores)
	}
}

// BenchmarkThreadCPU is one window's reading of this process's threads: a
// pass over /proc plus the target's tasks.
func BenchmarkThreadCPU(b *testing.B) {
	tc := NewThreadCPU(ThreadCPUConfig{PID: os.Getpid()})
	tc.Sample()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := tc.Sample(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestThreadCPUContainer reads a container's threads through the host's
// /proc (found by cgroup) while it burns 0.5 s of CPU under --cpus 0.5: its
// busiest thread is the burner's, and the cores it may use are the quota.
func TestThreadCPUContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image and runs a container")
	}
	burn := startBurner(t, "--cpus", "0.5")
	tc := NewThreadCPU(ThreadCPUConfig{ContainerID: burn.id})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, _, err := tc.Sample(); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("prime: %v", err)
		}
	}
	burn.burn(t)
	r, ok, err := tc.Sample()
	if !ok || err != nil {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	t.Logf("hottest %q (main %v) of %d threads: %.2f cores, busy %.2f over %.2f s; container %.2f cores of %.2f allowed",
		r.HottestThread, r.HottestThreadMain, r.Threads, r.HottestThreadCores, r.HottestThreadBusy, r.Seconds, r.TargetCores, r.CoresAllowed)
	if r.HottestThread != "burn" {
		t.Errorf("hottest thread %q, want burn", r.HottestThread)
	}
	// 0.5 s of CPU (plus touching 32 MiB) at most 0.5 cores: at least a second.
	if cpu := r.TargetCores * r.Seconds; cpu < 0.45 || cpu > 0.9 {
		t.Errorf("container threads ran %.2f s, want the burner's 0.5 s", cpu)
	}
	if math.Abs(r.CoresAllowed-0.5) > 1e-9 {
		t.Errorf("cores allowed %v, want the quota 0.5", r.CoresAllowed)
	}
}

func TestCgroupQuota(t *testing.T) {
	root := t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// v2: the container's own max, and a tighter parent.
	write("v2/cpu.max", "max 100000\n")
	write("v2/system.slice/cpu.max", "150000 100000\n")
	write("v2/system.slice/docker-abc.scope/cpu.max", "200000 100000\n")
	if got := cgroupQuota(filepath.Join(root, "v2"), "/system.slice/docker-abc.scope", readCPUMax); got != 1.5 {
		t.Errorf("v2 quota %v, want the parent's 1.5", got)
	}
	// v1: quota -1 at the root, 50 ms per 100 ms in the container.
	write("cpu/cpu.cfs_quota_us", "-1\n")
	write("cpu/cpu.cfs_period_us", "100000\n")
	write("cpu/docker/abc/cpu.cfs_quota_us", "50000\n")
	write("cpu/docker/abc/cpu.cfs_period_us", "100000\n")
	if got := cgroupQuota(filepath.Join(root, "cpu"), "/docker/abc", readCFSQuota); got != 0.5 {
		t.Errorf("v1 quota %v, want 0.5", got)
	}
	if got := cgroupQuota(filepath.Join(root, "cpu"), "/", readCFSQuota); got != 0 {
		t.Errorf("no quota read as %v, want 0", got)
	}
}

// TestThreadCPUFollowsDatabase: with the target and its database both in
// containers, each container's processes are its own (the membership of a
// process is asked per container: one cache for both once counted the
// database's processes as the target's question's answer, "not in it",
// and the database read no CPU); and a local database restarted as a new
// process is followed (FollowDatabase): the old one's figures are gone,
// the new one's counted from its start.
func TestThreadCPUFollowsDatabase(t *testing.T) {
	hz, _ := ClockTicksPerSecond()
	const target, database = "aaaaaaaaaaaa0123456789", "bbbbbbbbbbbb0123456789"
	const self = 40000
	tick := func(step, pct uint64) uint64 { return step * pct * uint64(hz) / 100 }
	procs := func(step uint64, dbPID int, dbCgroup string) map[int]fakeTask {
		return map[int]fakeTask{
			self:  {ppid: 1, pgrp: self, threads: map[int]fakeThread{self: {"longhaul", tick(step, 10), 0}}},
			50001: {ppid: 1, pgrp: 50001, cgroup: "0::/system.slice/docker-" + target + ".scope", threads: map[int]fakeThread{50001: {"app", tick(step, 40), 0}}},
			dbPID: {ppid: 1, pgrp: dbPID, cgroup: dbCgroup, threads: map[int]fakeThread{dbPID: {"postgres", tick(step, 30), 0}}},
		}
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.011 {
			t.Errorf("%s = %.3f, want %.3f", name, got, want)
		}
	}
	t0 := time.Unix(1000, 0)

	dir := t.TempDir()
	dbCg := "0::/system.slice/docker-" + database + ".scope"
	writeThreadProc(t, dir, procs(1, 50003, dbCg))
	tc := NewThreadCPU(ThreadCPUConfig{Proc: dir, Self: self, ContainerID: target, DatabaseContainerID: database})
	if _, ok, err := tc.sampleAt(t0); ok || err != nil {
		t.Fatalf("prime: ok %v, err %v", ok, err)
	}
	writeThreadProc(t, dir, procs(3, 50003, dbCg))
	r, ok, err := tc.sampleAt(t0.Add(2 * time.Second))
	if !ok || err != nil {
		t.Fatalf("containers: ok %v, err %v", ok, err)
	}
	near("target cores (container)", r.TargetCores, 0.40)
	near("database cores (container)", r.DatabaseCores, 0.30)
	if !r.Database {
		t.Errorf("the database container's processes were not found")
	}

	// A local database (pid 60003) killed and started again as 60013.
	dir = t.TempDir()
	writeThreadProc(t, dir, procs(1, 60003, ""))
	tc = NewThreadCPU(ThreadCPUConfig{Proc: dir, Self: self, ContainerID: target, DatabasePID: 60003})
	if _, ok, err := tc.sampleAt(t0); ok || err != nil {
		t.Fatalf("prime: ok %v, err %v", ok, err)
	}
	os.RemoveAll(filepath.Join(dir, "60003"))
	writeThreadProc(t, dir, procs(2, 60013, ""))
	if r, _, _ := tc.sampleAt(t0.Add(time.Second)); r.Database {
		t.Errorf("the new server was counted before it was followed: %+v", r)
	}
	tc.FollowDatabase(60013, "")
	writeThreadProc(t, dir, procs(4, 60013, ""))
	r, ok, err = tc.sampleAt(t0.Add(3 * time.Second))
	if !ok || err != nil {
		t.Fatalf("after the restart: ok %v, err %v", ok, err)
	}
	// Its threads are new to the reading: everything they ran since their
	// start (4 × 0.3 s) counts in the 2 s interval.
	near("database cores (followed)", r.DatabaseCores, 0.60)
	if !r.Database {
		t.Errorf("the restarted database was not followed")
	}
}
