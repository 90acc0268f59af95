package probes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// ThreadCPU reads, once per window, where the CPU went thread by thread:
// the target's busiest thread (its name and its share of one core), the
// cores the target may use, the cores its database's processes used, and
// how much CPU longhaul's own process — the driver — got and how long its
// threads waited for one. These name the resource a throughput limit ran
// into (see analysis: a single thread pinned near a full core, every allowed
// core busy, the database busy, the driver short of CPU, or no CPU at all).
//
// Sources: /proc/<pid>/stat for every process (one pass over /proc to find
// the target's and the database's processes: a local process tree — the
// root, its descendants and its process group, as ProcessTree — or a
// container's processes by their cgroup, seen through the host's /proc),
// and then, for each thread of the target's, the database's and longhaul's
// own processes, /proc/<pid>/task/<tid>/stat (its name, comm, and its
// utime+stime in clock ticks) and /proc/<pid>/task/<tid>/schedstat (its time
// on a CPU and its time runnable but waiting for one, in nanoseconds; the
// more precise, so it wins). A thread that exits between two samples loses
// its last partial window; one that starts counts from zero.
//
// Linux only. A ThreadCPU is not safe for concurrent use.
type ThreadCPU struct {
	proc  string
	hz    float64
	self  int
	cores float64 // configured cores allowed; 0: read them

	target, database selector

	primed bool
	at     time.Time
	prevT  map[procKey]threadTimes // target threads by (tid, start)
	prevD  map[procKey]threadTimes // database threads
	prevS  map[procKey]threadTimes // driver threads
	next   map[procKey]threadTimes // the map being filled, swapped with a prev
	cgroup map[cgroupKey]bool      // container membership, by process and container
	buf    []byte
	procs  []threadStat
	byPID  map[int]int // index in procs
}

// ThreadCPUConfig names the processes to read.
type ThreadCPUConfig struct {
	// PID is a local target's root process; ContainerID a container
	// target (its processes are found by cgroup). ContainerID wins.
	PID         int
	ContainerID string
	// DatabasePID and DatabaseContainerID are the database's, the same
	// way; both empty: no database reading.
	DatabasePID         int
	DatabaseContainerID string
	// CoresAllowed is how many cores the target may use (the scenario's
	// target.resources.cpus); 0 means read them: the target's CPU
	// affinity, capped by its cgroup's cpu.max quota where there is one.
	CoresAllowed float64
	// Proc is the proc filesystem's root (default /proc) and Self the
	// driver's process (default this one); tests point them elsewhere.
	Proc string
	Self int
}

// ThreadReading is one interval's reading (between two Samples).
//
// Two figures are given for each party: the CPU it got ("cores": CPU time
// over Seconds, 1 = one full core) and how busy it was ("busy": the time its
// threads were running or runnable but waiting for a CPU, over Seconds —
// the CPU it wanted). They differ when the machine is short of CPU: a
// single-threaded target that never blocks is busy 1.0 however little of a
// core the scheduler gives it. Busy figures come from schedstat and are 0
// where the kernel has none (HasBusy false).
type ThreadReading struct {
	// Seconds is the interval's wall-clock length.
	Seconds float64
	// HasBusy is set when the busy figures were read (schedstat).
	HasBusy bool
	// HottestThread is the name (comm) of the target's busiest thread (by
	// busy time, else by CPU time), HottestThreadMain whether it is a
	// process's main thread (tid = pid: a Node.js target's JavaScript
	// thread), HottestThreadID its tid. Threads is how many of the target's
	// threads were read.
	HottestThread      string
	HottestThreadCores float64
	HottestThreadBusy  float64
	HottestThreadMain  bool
	HottestThreadID    int
	Threads            int
	// TargetCores and TargetBusyCores are the sums over all of the
	// target's threads; CoresAllowed the cores it may use (0: unknown).
	TargetCores     float64
	TargetBusyCores float64
	CoresAllowed    float64
	// DatabaseCores and DatabaseBusyCores are the database's processes'
	// (each process's main thread: PostgreSQL runs one thread per process);
	// Database is false when there is no database to read.
	DatabaseCores     float64
	DatabaseBusyCores float64
	Database          bool
	// DriverCores and DriverBusyCores are longhaul's own process's (every
	// thread): a driver short of CPU waits about as long as it runs.
	// Driver is false where its threads could not be read.
	DriverCores     float64
	DriverBusyCores float64
	Driver          bool
}

// Fill sets p's thread fields (window.Probes.HottestThread and the
// others) from r; the busy figures only when HasBusy.
func (r ThreadReading) Fill(p *window.Probes) {
	f := func(v float64) *float64 { return &v }
	p.HottestThread, p.HottestThreadMain = r.HottestThread, r.HottestThreadMain
	p.HottestThreadCores = f(r.HottestThreadCores)
	if r.CoresAllowed > 0 {
		p.CoresAllowed = f(r.CoresAllowed)
	}
	if r.Database {
		p.DatabaseCores = f(r.DatabaseCores)
	}
	if r.Driver {
		p.DriverCores = f(r.DriverCores)
	}
	if !r.HasBusy {
		return
	}
	p.HottestThreadBusy, p.TargetBusyCores = f(r.HottestThreadBusy), f(r.TargetBusyCores)
	if r.Database {
		p.DatabaseBusyCores = f(r.DatabaseBusyCores)
	}
	if r.Driver {
		p.DriverBusyCores = f(r.DriverBusyCores)
	}
}

type selector struct {
	pid       int
	container string // first 12 characters of the id
}

func (s selector) set() bool { return s.pid > 0 || s.container != "" }

type threadStat struct {
	pid, ppid, pgrp int
	start           uint64
	ticks           uint64 // utime + stime
}

// ErrNoThreads is returned by Sample when none of the target's processes
// was found in /proc.
var ErrNoThreads = errors.New("no process of the target found")

// NewThreadCPU returns a ThreadCPU; its first Sample only primes it.
func NewThreadCPU(cfg ThreadCPUConfig) *ThreadCPU {
	hz, _ := ClockTicksPerSecond()
	t := &ThreadCPU{
		proc: cfg.Proc, hz: float64(hz), self: cfg.Self, cores: cfg.CoresAllowed,
		target:   newSelector(cfg.PID, cfg.ContainerID),
		database: newSelector(cfg.DatabasePID, cfg.DatabaseContainerID),
		prevT:    map[procKey]threadTimes{}, prevD: map[procKey]threadTimes{}, prevS: map[procKey]threadTimes{}, next: map[procKey]threadTimes{},
		cgroup: map[cgroupKey]bool{}, buf: make([]byte, 0, 1024), byPID: map[int]int{},
	}
	if t.proc == "" {
		t.proc = "/proc"
	}
	if t.self == 0 {
		t.self = os.Getpid()
	}
	return t
}

// FollowDatabase points the database's reading at the database as it is
// after a restart: a local server's new process (pid), or the same
// container (a docker start keeps its id). The database's previous thread
// times are dropped: the new process's threads are new, and the next
// reading counts them from their start.
func (t *ThreadCPU) FollowDatabase(pid int, container string) {
	t.database = newSelector(pid, container)
	clear(t.prevD)
}

func newSelector(pid int, container string) selector {
	if len(container) >= 12 {
		return selector{container: container[:12]}
	}
	if pid > 0 {
		return selector{pid: pid}
	}
	return selector{}
}

// Sample reads the threads and returns the interval since the previous
// Sample. The first call only primes (ok false, nil error), as does a
// call after one that failed; ErrNoThreads (wrapped) when none of the
// target's processes is found.
func (t *ThreadCPU) Sample() (r ThreadReading, ok bool, err error) {
	return t.sampleAt(time.Now())
}

// threadTimes are a thread's cumulative times in nanoseconds: on a CPU, and
// on a CPU or runnable (busy; 0 without schedstat).
type threadTimes struct{ cpuNs, busyNs uint64 }

// delta returns the times since prev (all of them for a thread new since).
func (c threadTimes) delta(prev threadTimes, seen bool) threadTimes {
	if !seen {
		return c
	}
	return threadTimes{c.cpuNs - min(c.cpuNs, prev.cpuNs), c.busyNs - min(c.busyNs, prev.busyNs)}
}

func (t *ThreadCPU) sampleAt(now time.Time) (ThreadReading, bool, error) {
	if err := t.scan(); err != nil {
		t.primed = false
		return ThreadReading{}, false, err
	}
	var r ThreadReading
	r.HasBusy = true

	// The target's threads.
	nextT := t.swap()
	var target, hottest threadTimes
	found := false
	for i := range t.procs {
		p := &t.procs[i]
		if !t.in(t.target, p.pid) {
			continue
		}
		found = true
		t.readThreads(p.pid, func(tid int, comm []byte, start uint64, c threadTimes, busy bool) {
			k := procKey{tid, start}
			nextT[k] = c
			old, seen := t.prevT[k]
			d := c.delta(old, seen)
			r.Threads++
			r.HasBusy = r.HasBusy && busy
			target.cpuNs += d.cpuNs
			target.busyNs += d.busyNs
			if r.HottestThread == "" || d.busyNs > hottest.busyNs || (d.busyNs == hottest.busyNs && d.cpuNs > hottest.cpuNs) {
				hottest = d
				r.HottestThread, r.HottestThreadMain, r.HottestThreadID = string(comm), tid == p.pid, tid
			}
		})
		if r.CoresAllowed == 0 {
			r.CoresAllowed = t.coresAllowed(p.pid)
		}
	}
	t.prevT, t.next = nextT, t.prevT
	if !found || r.Threads == 0 {
		t.primed = false
		return ThreadReading{}, false, fmt.Errorf("thread cpu: %w", ErrNoThreads)
	}

	// The database's processes.
	var db threadTimes
	if t.database.set() {
		nextD := t.swap()
		for i := range t.procs {
			p := &t.procs[i]
			if !t.in(t.database, p.pid) {
				continue
			}
			t.sumThreads(p.pid, t.prevD, nextD, &db, &r.HasBusy)
		}
		r.Database = len(nextD) > 0
		t.prevD, t.next = nextD, t.prevD
	}

	// The driver: this process's threads.
	nextS := t.swap()
	var drv threadTimes
	t.sumThreads(t.self, t.prevS, nextS, &drv, &r.HasBusy)
	r.Driver = len(nextS) > 0
	t.prevS, t.next = nextS, t.prevS

	primed, since := t.primed, now.Sub(t.at).Seconds()
	t.primed, t.at = true, now
	if !primed || since <= 0 {
		return ThreadReading{}, false, nil
	}
	r.Seconds = since
	cores := func(ns uint64) float64 { return float64(ns) / 1e9 / since }
	r.HottestThreadCores, r.TargetCores = cores(hottest.cpuNs), cores(target.cpuNs)
	r.DatabaseCores, r.DriverCores = cores(db.cpuNs), cores(drv.cpuNs)
	if r.HasBusy {
		r.HottestThreadBusy, r.TargetBusyCores = cores(hottest.busyNs), cores(target.busyNs)
		r.DatabaseBusyCores, r.DriverBusyCores = cores(db.busyNs), cores(drv.busyNs)
	}
	if t.cores > 0 {
		r.CoresAllowed = t.cores
	}
	return r, true, nil
}

// swap returns the spare map, emptied, to fill as the next readings; the
// caller puts it in place of a prev map and keeps that as the spare.
// sumThreads reads the threads of pid into next and adds their CPU and busy
// time since prev to sum; hasBusy stays true only while every thread had
// its busy time.
func (t *ThreadCPU) sumThreads(pid int, prev, next map[procKey]threadTimes, sum *threadTimes, hasBusy *bool) {
	t.readThreads(pid, func(tid int, _ []byte, start uint64, c threadTimes, busy bool) {
		k := procKey{tid, start}
		next[k] = c
		old, seen := prev[k]
		d := c.delta(old, seen)
		sum.cpuNs += d.cpuNs
		sum.busyNs += d.busyNs
		*hasBusy = *hasBusy && busy
	})
}

func (t *ThreadCPU) swap() map[procKey]threadTimes {
	clear(t.next)
	return t.next
}

// scan reads every process's stat: one pass over /proc.
func (t *ThreadCPU) scan() error {
	pids, err := listPIDs(t.proc)
	if err != nil {
		return err
	}
	t.procs = t.procs[:0]
	clear(t.byPID)
	for pid, name := range pids {
		b, ok := t.read(t.proc + "/" + name + "/stat")
		if !ok {
			continue // exited during the scan
		}
		_, st, ok := parseThreadStat(b)
		if !ok {
			continue
		}
		st.pid = pid
		t.byPID[pid] = len(t.procs)
		t.procs = append(t.procs, st)
	}
	// Forget the container membership of processes that are gone.
	if len(t.cgroup) > 2*len(t.procs)+64 {
		for k := range t.cgroup {
			if i, ok := t.byPID[k.pid]; !ok || t.procs[i].start != k.start {
				delete(t.cgroup, k)
			}
		}
	}
	return nil
}

// cgroupKey is a process and a container asked about.
type cgroupKey struct {
	procKey
	container string
}

// in reports whether pid is one of sel's processes.
func (t *ThreadCPU) in(sel selector, pid int) bool {
	if sel.container != "" {
		st := t.procs[t.byPID[pid]]
		// Keyed by the container too: the target's and the database's
		// containers are asked about the same processes, and a process
		// outside one may be inside the other.
		k := cgroupKey{procKey{pid, st.start}, sel.container}
		v, ok := t.cgroup[k]
		if !ok {
			b, _ := os.ReadFile(t.proc + "/" + strconv.Itoa(pid) + "/cgroup")
			v = bytes.Contains(b, []byte(sel.container))
			t.cgroup[k] = v
		}
		return v
	}
	if sel.pid <= 0 {
		return false
	}
	// The root, its process group, its descendants: walk up the parents.
	p := pid
	for steps := 0; steps <= len(t.procs); steps++ {
		if p == sel.pid {
			return true
		}
		i, ok := t.byPID[p]
		if !ok || p <= 1 {
			return false
		}
		if t.procs[i].pgrp == sel.pid {
			return true
		}
		p = t.procs[i].ppid
	}
	return false
}

// readThreads calls fn for each thread of process pid: its name, start
// time and times, from task/<tid>/stat (CPU time in clock ticks) and
// task/<tid>/schedstat (CPU and wait time in nanoseconds, when busy is true;
// it is the more precise, so it wins).
func (t *ThreadCPU) readThreads(pid int, fn func(tid int, comm []byte, start uint64, c threadTimes, busy bool)) {
	dir := t.proc + "/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		var c threadTimes
		busy := false
		if b, ok := t.read(dir + "/" + name + "/schedstat"); ok {
			if f := bytes.Fields(b); len(f) >= 2 {
				run, wait := uint64(atoi(f[0])), uint64(atoi(f[1]))
				c, busy = threadTimes{cpuNs: run, busyNs: run + wait}, true
			}
		}
		b, ok := t.read(dir + "/" + name + "/stat")
		if !ok {
			continue
		}
		comm, st, ok := parseThreadStat(b)
		if !ok {
			continue
		}
		if !busy {
			c.cpuNs = uint64(float64(st.ticks) * 1e9 / t.hz)
		}
		fn(tid, comm, st.start, c, busy)
	}
}

// read reads a small /proc file into t.buf.
func (t *ThreadCPU) read(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	t.buf = t.buf[:cap(t.buf)]
	n, err := io.ReadFull(f, t.buf)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, false
	}
	return t.buf[:n], true
}

// parseThreadStat parses /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat:
// the name (field 2, in parentheses, which may itself hold spaces and
// parentheses), ppid, pgrp, utime+stime and the start time. comm aliases b.
func parseThreadStat(b []byte) (comm []byte, st threadStat, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return nil, threadStat{}, false
	}
	comm = b[open+1 : end]
	b = b[end+1:]
	// Fields after the name, numbered as in proc(5): 4 ppid, 5 pgrp,
	// 14 utime, 15 stime, 22 starttime.
	for field, tok := range statFields(b) {
		switch field {
		case 4:
			st.ppid = int(atoi(tok))
		case 5:
			st.pgrp = int(atoi(tok))
		case 14, 15:
			st.ticks += uint64(atoi(tok))
		case 22:
			st.start = uint64(atoi(tok))
			return comm, st, true
		}
	}
	return nil, threadStat{}, false
}

// coresAllowed reads how many cores process pid may run on: the CPUs in its
// affinity mask (Cpus_allowed_list), capped by its cgroup v2 cpu.max quota
// (a container's --cpus). 0 when unknown.
func (t *ThreadCPU) coresAllowed(pid int) float64 {
	dir := t.proc + "/" + strconv.Itoa(pid)
	cores := 0.0
	if b, err := os.ReadFile(dir + "/status"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				cores = float64(countCPUList(strings.TrimSpace(v)))
				break
			}
		}
	}
	if t.proc != "/proc" {
		return cores // a test's /proc: the host's cgroups are not its
	}
	if cores == 0 {
		cores = float64(runtime.NumCPU())
	}
	if b, err := os.ReadFile(dir + "/cgroup"); err == nil {
		for line := range strings.Lines(string(b)) {
			// "0::/path" (v2) or "1:cpu,cpuacct:/path" (v1).
			f := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(f) != 3 {
				continue
			}
			var q float64
			switch {
			case f[0] == "0" && f[1] == "":
				q = cgroupQuota("/sys/fs/cgroup", f[2], readCPUMax)
			case slices.Contains(strings.Split(f[1], ","), "cpu"):
				q = cgroupQuota("/sys/fs/cgroup/"+f[1], f[2], readCFSQuota)
			}
			if q > 0 && (cores == 0 || q < cores) {
				cores = q
			}
		}
	}
	return cores
}

// cgroupQuota reads the tightest CPU quota, in cores, on the path from the
// cgroup at root+path up to root; 0 when none. read reads one directory's.
func cgroupQuota(root, path string, read func(dir string) float64) float64 {
	q := math.Inf(1)
	for d := strings.TrimSuffix(path, "/"); ; {
		if v := read(root + d); v > 0 {
			q = math.Min(q, v)
		}
		i := strings.LastIndexByte(d, '/')
		if i < 0 || d == "" {
			break
		}
		d = d[:i]
	}
	if math.IsInf(q, 1) {
		return 0
	}
	return q
}

// readCPUMax reads cgroup v2's cpu.max, "QUOTA PERIOD" or "max PERIOD".
func readCPUMax(dir string) float64 {
	b, err := os.ReadFile(dir + "/cpu.max")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	return ratio(f[0], f[1])
}

// readCFSQuota reads cgroup v1's cpu.cfs_quota_us (-1: none) over
// cpu.cfs_period_us.
func readCFSQuota(dir string) float64 {
	q, err1 := os.ReadFile(dir + "/cpu.cfs_quota_us")
	p, err2 := os.ReadFile(dir + "/cpu.cfs_period_us")
	if err1 != nil || err2 != nil {
		return 0
	}
	return ratio(strings.TrimSpace(string(q)), strings.TrimSpace(string(p)))
}

func ratio(a, b string) float64 {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil || x <= 0 || y <= 0 {
		return 0
	}
	return x / y
}

// countCPUList counts the CPUs in a list like "0-3,6,8-9".
func countCPUList(s string) int {
	n := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		if !isRange {
			n++
			continue
		}
		if b, err := strconv.Atoi(hi); err == nil && b >= a {
			n += b - a + 1
		}
	}
	return n
}
