package probes

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HostLoad measures foreign load: how much of the host's CPU, between two
// samples, went to processes that are neither the measured ones (the target,
// its database, longhaul itself) nor their descendants. A comparison marks a
// round disturbed when it is high: a compile or another test sharing the
// machine moves both latency and CPU figures more than the effects being
// compared.
//
// Busy time comes from the first line of /proc/stat; the measured processes'
// time from /proc/<pid>/stat (utime+stime, plus cutime+cstime so that
// children they reaped count too). A process counts as measured when its PID
// or an ancestor's is in Config.PIDs, when its cgroup names one of
// Config.Containers, when it is this process, when it is docker-proxy
// (it forwards the published ports' traffic: load, not foreign work), or
// when it is the fuse-overlayfs daemon that serves a measured container's
// root filesystem. Docker's fuse-overlayfs storage driver (rootless Docker,
// Docker inside a container) puts every file operation of the container
// through that daemon on the host; a target writing a SQLite file in its
// own filesystem kept one busy enough to read as 12–14 % of the host's
// foreign load on every docker round of a comparison (bench/compare). Under the
// kernel's overlayfs the same work is the container's own system time.
//
// A HostLoad is not safe for concurrent use. Linux only: elsewhere Sample
// reports no reading.
type HostLoad struct {
	proc       string
	pids       []int
	containers []string
	self       int
	primed     bool
	busy, all  uint64
	prev       map[procKey]uint64
	cgroupOurs map[procKey]bool
	// rootMounts are the host paths where the measured containers' root
	// filesystems are mounted, when a FUSE daemon serves them (keyed by
	// container id; resolved once per container, from one of its processes).
	rootMounts map[string]string
	fuseOurs   map[procKey]bool // daemons known to serve one of them
}

// HostLoadConfig names the measured processes.
type HostLoadConfig struct {
	// PIDs are the measured process trees' roots (target, database).
	PIDs []int
	// Containers are the measured containers' ids (full or ≥ 12 characters).
	Containers []string
	// Proc is the proc filesystem's root (default /proc); tests point it elsewhere.
	Proc string
}

type procKey struct {
	pid   int
	start uint64 // start time in ticks: a recycled PID is another process
}

// NewHostLoad returns a HostLoad; call Sample once to prime it.
func NewHostLoad(cfg HostLoadConfig) *HostLoad {
	h := &HostLoad{proc: cfg.Proc, self: os.Getpid(), prev: map[procKey]uint64{}, cgroupOurs: map[procKey]bool{},
		rootMounts: map[string]string{}, fuseOurs: map[procKey]bool{}}
	if h.proc == "" {
		h.proc = "/proc"
	}
	for _, p := range cfg.PIDs {
		if p > 0 {
			h.pids = append(h.pids, p)
		}
	}
	for _, c := range cfg.Containers {
		if len(c) >= 12 {
			h.containers = append(h.containers, c[:12])
		}
	}
	return h
}

// FollowPID replaces the measured root old with new: a database that was
// restarted runs as a new process, which would otherwise count as foreign
// load. With old not among the roots (0: none was known), new is added.
// The processes seen at the last Sample keep their ticks, so the new tree's
// first interval counts from its start, as for any process started since.
func (h *HostLoad) FollowPID(old, new int) {
	if new <= 0 || old == new {
		return
	}
	for i, p := range h.pids {
		if p == old {
			h.pids[i] = new
			return
		}
	}
	h.pids = append(h.pids, new)
}

// Sample returns the share (0–1, of all cores) of the host's CPU that was
// busy with foreign work since the previous Sample. The first call only
// primes and reports ok false, as does a host without /proc/stat.
func (h *HostLoad) Sample() (foreign float64, ok bool) {
	busy, all, err := h.readStat()
	if err != nil {
		return 0, false
	}
	procs := h.readProcs()
	ours := h.measured(procs)
	var oursDelta uint64
	next := make(map[procKey]uint64, len(ours))
	for _, p := range ours {
		next[p.key] = p.ticks
		if old, seen := h.prev[p.key]; seen && h.primed {
			if p.ticks > old {
				oursDelta += p.ticks - old
			}
		} else if h.primed {
			oursDelta += p.ticks // started since the last sample
		}
	}
	primed := h.primed
	db, da := busy-h.busy, all-h.all
	h.busy, h.all, h.prev, h.primed = busy, all, next, true
	if !primed || da == 0 || busy < db {
		return 0, false
	}
	if oursDelta >= db {
		return 0, true
	}
	return min(1, float64(db-oursDelta)/float64(da)), true
}

// readStat returns busy and all ticks summed over every CPU.
func (h *HostLoad) readStat() (busy, all uint64, err error) {
	b, err := os.ReadFile(filepath.Join(h.proc, "stat"))
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, os.ErrInvalid
	}
	// user nice system idle iowait irq softirq steal (guest is inside user).
	for i, s := range f[1:] {
		if i >= 8 {
			break
		}
		v, _ := strconv.ParseUint(s, 10, 64)
		all += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, all, nil
}

type procInfo struct {
	key   procKey
	ppid  int
	comm  string
	ticks uint64 // utime + stime + cutime + cstime
}

func (h *HostLoad) readProcs() []procInfo {
	entries, err := os.ReadDir(h.proc)
	if err != nil {
		return nil
	}
	out := make([]procInfo, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(h.proc, e.Name(), "stat"))
		if err != nil {
			continue // exited
		}
		if p, ok := parseProcStat(pid, b); ok {
			out = append(out, p)
		}
	}
	return out
}

// parseProcStat reads /proc/<pid>/stat: "pid (comm) state ppid ... utime
// stime cutime cstime ... starttime". comm may contain spaces and parens.
func parseProcStat(pid int, b []byte) (procInfo, bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 {
		return procInfo{}, false
	}
	num := func(n int) uint64 { v, _ := strconv.ParseUint(f[n-3], 10, 64); return v }
	ppid, _ := strconv.Atoi(f[4-3])
	return procInfo{
		key:   procKey{pid: pid, start: num(22)},
		ppid:  ppid,
		comm:  string(b[open+1 : end]),
		ticks: num(14) + num(15) + num(16) + num(17),
	}, true
}

// measured returns the processes that are ours: self, the PIDs' trees, the
// containers' processes and docker-proxy.
func (h *HostLoad) measured(procs []procInfo) []procInfo {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.key.pid] = p.ppid
	}
	roots := map[int]bool{h.self: true}
	for _, p := range h.pids {
		roots[p] = true
	}
	underRoot := func(pid int) bool {
		for i := 0; pid > 1 && i < 64; i++ {
			if roots[pid] && (pid != h.self || i == 0) {
				return true // self counts, its other children do not
			}
			pid = parent[pid]
		}
		return false
	}
	var out []procInfo
	var fuse []procInfo
	seen := make(map[procKey]bool, len(h.cgroupOurs))
	for _, p := range procs {
		ours := p.comm == "docker-proxy" || underRoot(p.key.pid)
		if !ours && p.comm == "fuse-overlayfs" {
			fuse = append(fuse, p) // decided once the containers' mounts are known
			continue
		}
		if !ours && len(h.containers) > 0 {
			v, cached := h.cgroupOurs[p.key]
			if !cached {
				var id string
				id, v = h.inContainers(p.key.pid)
				if _, known := h.rootMounts[id]; v && !known {
					h.rootMounts[id] = h.fuseRootMount(p.key.pid)
				}
			}
			seen[p.key] = v
			ours = v
		}
		if ours {
			out = append(out, p)
		}
	}
	h.cgroupOurs = seen
	// A daemon found not to serve ours is asked again next time: its
	// container's mount may not have been known yet.
	fuseSeen := make(map[procKey]bool, len(h.fuseOurs))
	for _, p := range fuse {
		if h.fuseOurs[p.key] || h.servesOurs(p.key.pid) {
			fuseSeen[p.key] = true
			out = append(out, p)
		}
	}
	h.fuseOurs = fuseSeen
	return out
}

// fuseRootMount returns where on the host the root filesystem of the
// container that pid runs in is mounted, if a FUSE daemon serves it: the
// mount of the host's mount table with the same device as the "/" of the
// process's (the container's) mount table. "" otherwise.
func (h *HostLoad) fuseRootMount(pid int) string {
	var root mount
	for _, m := range mounts(filepath.Join(h.proc, strconv.Itoa(pid), "mountinfo")) {
		if m.point == "/" {
			root = m // the last mount at "/" is the one in effect
		}
	}
	if !strings.HasPrefix(root.fstype, "fuse") {
		return ""
	}
	for _, m := range mounts(filepath.Join(h.proc, "self", "mountinfo")) {
		if m.dev == root.dev && m.point != "/" {
			return m.point
		}
	}
	return ""
}

// mount is one line of a mountinfo file: "36 35 98:0 / /mnt rw - ext4 /dev/sda1 rw".
type mount struct{ dev, point, fstype string }

func mounts(path string) []mount {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []mount
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		for i := 5; i+1 < len(f); i++ {
			if f[i] == "-" {
				out = append(out, mount{dev: f[2], point: f[4], fstype: f[i+1]})
				break
			}
		}
	}
	return out
}

// servesOurs reports whether the fuse-overlayfs daemon pid serves one of
// the measured containers' root filesystems: its last argument is the
// mount point.
func (h *HostLoad) servesOurs(pid int) bool {
	if len(h.rootMounts) == 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join(h.proc, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	last := args[len(args)-1]
	for _, m := range h.rootMounts {
		if m != "" && m == last {
			return true
		}
	}
	return false
}

// inContainers returns the measured container (its 12-character id) that
// pid runs in, by its cgroup.
func (h *HostLoad) inContainers(pid int) (string, bool) {
	b, err := os.ReadFile(filepath.Join(h.proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return "", false
	}
	for _, c := range h.containers {
		if bytes.Contains(b, []byte(c)) {
			return c, true
		}
	}
	return "", false
}
