package probes

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// fakeProc writes a /proc with a cpu line and processes pid → (ppid, comm, ticks, cgroup).
type fakeProcess struct {
	ppid   int
	comm   string
	ticks  uint64
	cgroup string
}

func writeFakeProc(t *testing.T, dir string, busy, idle uint64, procs map[int]fakeProcess) {
	t.Helper()
	// user nice system idle iowait irq softirq steal
	stat := fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 1 2 3 4\n", busy, idle)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	for pid, p := range procs {
		d := filepath.Join(dir, fmt.Sprint(pid))
		os.MkdirAll(d, 0o755)
		// utime stime cutime cstime = ticks 0 0 0; starttime (field 22) = 100 + pid.
		line := fmt.Sprintf("%d (%s) S %d 0 0 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 1000 10\n", pid, p.comm, p.ppid, p.ticks, 100+pid)
		os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644)
		os.WriteFile(filepath.Join(d, "cgroup"), []byte(p.cgroup+"\n"), 0o644)
	}
}

func TestHostLoad(t *testing.T) {
	dir := t.TempDir()
	self := os.Getpid()
	const container = "0123456789abcdef0123"
	procs := map[int]fakeProcess{
		self:  {ppid: 1, comm: "longhaul", ticks: 10},
		50001: {ppid: 1, comm: "demo-target", ticks: 10},
		50002: {ppid: 50001, comm: "worker (child)", ticks: 10},
		50003: {ppid: 1, comm: "postgres", ticks: 10},
		50004: {ppid: 1, comm: "cc1", ticks: 10},                                                            // a compile: foreign
		50005: {ppid: 1, comm: "app", ticks: 10, cgroup: "0::/system.slice/docker-" + container + ".scope"}, // our container
		50006: {ppid: self, comm: "other soak's target", ticks: 10},                                         // a child of longhaul, not measured
		50007: {ppid: 1, comm: "docker-proxy", ticks: 10},
	}
	writeFakeProc(t, dir, 1000, 1000, procs)
	h := NewHostLoad(HostLoadConfig{Proc: dir, PIDs: []int{50001, 50003}, Containers: []string{container}})
	if _, ok := h.Sample(); ok {
		t.Error("first sample should only prime")
	}
	// 200 ticks pass on the machine (all cores): 120 busy. Ours: self 10,
	// target 20 + child 10, postgres 5, container 15, docker-proxy 10 = 70.
	// Foreign: the compile 30 + the other child 20 = 50 → 50/200.
	procs[self] = fakeProcess{ppid: 1, comm: "longhaul", ticks: 20}
	procs[50001] = fakeProcess{ppid: 1, comm: "demo-target", ticks: 30}
	procs[50002] = fakeProcess{ppid: 50001, comm: "worker (child)", ticks: 20}
	procs[50003] = fakeProcess{ppid: 1, comm: "postgres", ticks: 15}
	procs[50004] = fakeProcess{ppid: 1, comm: "cc1", ticks: 40}
	procs[50005] = fakeProcess{ppid: 1, comm: "app", ticks: 25, cgroup: "0::/system.slice/docker-" + container + ".scope"}
	procs[50006] = fakeProcess{ppid: self, comm: "other soak's target", ticks: 30}
	procs[50007] = fakeProcess{ppid: 1, comm: "docker-proxy", ticks: 20}
	writeFakeProc(t, dir, 1120, 1080, procs)
	got, ok := h.Sample()
	if !ok || math.Abs(got-50.0/200) > 1e-9 {
		t.Errorf("foreign = %v, %v; want 0.25", got, ok)
	}
	// An idle interval with only our work: 0.
	procs[50001] = fakeProcess{ppid: 1, comm: "demo-target", ticks: 130}
	writeFakeProc(t, dir, 1220, 1180, procs)
	if got, ok := h.Sample(); !ok || got != 0 {
		t.Errorf("foreign = %v, %v; want 0", got, ok)
	}
}

// With Docker's fuse-overlayfs storage driver, the daemon serving a
// measured container's root filesystem is measured too; another
// container's daemon is foreign.
func TestHostLoadFuseOverlay(t *testing.T) {
	dir := t.TempDir()
	const ours, theirs = "0123456789abcdef0123", "fedcba9876543210fedc"
	procs := map[int]fakeProcess{
		50001: {ppid: 1, comm: "app", ticks: 10, cgroup: "4:memory:/docker/" + ours},
		50002: {ppid: 1, comm: "fuse-overlayfs", ticks: 10},
		50003: {ppid: 1, comm: "fuse-overlayfs", ticks: 10},
		50004: {ppid: 1, comm: "other app", ticks: 10, cgroup: "4:memory:/docker/" + theirs},
	}
	mounts := func() {
		write := func(path, text string) {
			if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		const merged = "/var/lib/docker/fuse-overlayfs/84da86b9/merged"
		write("50001/mountinfo", "107 58 0:50 / / rw,nodev,noatime master:3 - fuse.fuse-overlayfs fuse-overlayfs rw,user_id=0\n"+
			"108 107 0:52 / /proc rw,nosuid - proc proc rw\n")
		os.MkdirAll(filepath.Join(dir, "self"), 0o755)
		write("self/mountinfo", "20 1 8:1 / / rw - ext4 /dev/sda1 rw\n"+
			"46 45 0:40 / /var/lib/docker/fuse-overlayfs/46ae5cd7/merged rw,nodev shared:2 - fuse.fuse-overlayfs fuse-overlayfs rw\n"+
			"47 45 0:50 / "+merged+" rw,nodev shared:3 - fuse.fuse-overlayfs fuse-overlayfs rw\n")
		write("50002/cmdline", "fuse-overlayfs\x00-o\x00lowerdir=/a:/b,upperdir=/u,workdir=/w\x00"+merged+"\x00")
		write("50003/cmdline", "fuse-overlayfs\x00-o\x00lowerdir=/c\x00/var/lib/docker/fuse-overlayfs/46ae5cd7/merged\x00")
	}
	writeFakeProc(t, dir, 1000, 1000, procs)
	mounts()
	h := NewHostLoad(HostLoadConfig{Proc: dir, Containers: []string{ours}})
	h.Sample()
	// 200 ticks pass, 100 busy: our container 20 and its daemon 30 are
	// ours; the other container 25 and its daemon 25 are foreign.
	procs[50001] = fakeProcess{ppid: 1, comm: "app", ticks: 30, cgroup: "4:memory:/docker/" + ours}
	procs[50002] = fakeProcess{ppid: 1, comm: "fuse-overlayfs", ticks: 40}
	procs[50003] = fakeProcess{ppid: 1, comm: "fuse-overlayfs", ticks: 35}
	procs[50004] = fakeProcess{ppid: 1, comm: "other app", ticks: 35, cgroup: "4:memory:/docker/" + theirs}
	writeFakeProc(t, dir, 1100, 1100, procs)
	got, ok := h.Sample()
	if !ok || math.Abs(got-50.0/200) > 1e-9 {
		t.Errorf("foreign = %v, %v; want 0.25 (the other container and its daemon)", got, ok)
	}
}

func TestHostLoadReal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	h := NewHostLoad(HostLoadConfig{})
	h.Sample()
	// Spin for a fixed time, not a fixed count: /proc/stat counts in
	// 10 ms ticks, and a fast machine ran 20 M additions within one tick,
	// leaving the interval empty (seen in CI).
	x := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		for i := range 100_000 {
			x += i
		}
	}
	got, ok := h.Sample()
	if !ok || got < 0 || got > 1 {
		t.Errorf("foreign = %v, %v (x %d); want a share in [0, 1]", got, ok, x)
	}
	t.Logf("foreign load on this host while spinning: %.1f%%", 100*got)
}

// TestHostLoadFollowsPID: a database restarted as a new process (pid
// 50013 for 50003) is foreign load until it is followed (FollowPID), and
// ours after, its children with it.
func TestHostLoadFollowsPID(t *testing.T) {
	dir := t.TempDir()
	self := os.Getpid()
	procs := map[int]fakeProcess{
		self:  {ppid: 1, comm: "longhaul", ticks: 10},
		50001: {ppid: 1, comm: "demo-target", ticks: 10},
		50003: {ppid: 1, comm: "postgres", ticks: 10},
	}
	writeFakeProc(t, dir, 1000, 1000, procs)
	h := NewHostLoad(HostLoadConfig{Proc: dir, PIDs: []int{50001, 50003}})
	h.Sample()
	// The database is killed and started again as 50013 (a backend 50014):
	// 40 ticks of its own in 200, not followed yet: foreign.
	delete(procs, 50003)
	os.RemoveAll(filepath.Join(dir, "50003"))
	procs[50013] = fakeProcess{ppid: 1, comm: "postgres", ticks: 30}
	procs[50014] = fakeProcess{ppid: 50013, comm: "postgres: app shop", ticks: 10}
	writeFakeProc(t, dir, 1040, 1160, procs)
	if got, ok := h.Sample(); !ok || math.Abs(got-40.0/200) > 1e-9 {
		t.Errorf("before following: foreign = %v, %v; want 0.2 (the new server is not known yet)", got, ok)
	}
	h.FollowPID(50003, 50013)
	procs[50013] = fakeProcess{ppid: 1, comm: "postgres", ticks: 60}
	procs[50014] = fakeProcess{ppid: 50013, comm: "postgres: app shop", ticks: 30}
	writeFakeProc(t, dir, 1090, 1310, procs)
	if got, ok := h.Sample(); !ok || got != 0 {
		t.Errorf("after following: foreign = %v, %v; want 0 (only the database worked)", got, ok)
	}
	if len(h.pids) != 2 || h.pids[1] != 50013 {
		t.Errorf("measured roots %v, want the target and the new server", h.pids)
	}
}
