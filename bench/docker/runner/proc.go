package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime/stime in /proc/PID/stat (USER_HZ, 100 on
// every Linux this runs on).
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time (user+system) of pid, without its children;
// ok is false when the process is gone.
func procCPU(pid int) (seconds float64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return float64(u+k) * clockTick.Seconds(), true
}

// procChildrenCPU is the CPU time of pid's reaped children (cutime+cstime).
func procChildrenCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:])
	if len(f) < 15 {
		return 0
	}
	u, _ := strconv.ParseInt(f[13], 10, 64)
	k, _ := strconv.ParseInt(f[14], 10, 64)
	return float64(u+k) * clockTick.Seconds()
}

// machineCPU is the machine's busy and total CPU time since boot, from
// /proc/stat (busy: everything but idle and iowait).
func machineCPU() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i >= 8 { // guest, guest_nice are already in user
			break
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy * clockTick.Seconds(), total * clockTick.Seconds()
}

// process is one entry of the process table.
type process struct {
	pid  int
	args []string
}

// processes lists every process with its command line.
func processes() []process {
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	out := make([]process, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		out = append(out, process{pid: pid, args: strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")})
	}
	return out
}

func (p process) name() string { return filepath.Base(p.args[0]) }

// arg returns the value after flag in p's arguments ("" if none).
func (p process) arg(flag string) string {
	for i := 0; i+1 < len(p.args); i++ {
		if p.args[i] == flag {
			return p.args[i+1]
		}
	}
	return ""
}

// environ reports whether pid's environment holds kv ("K=V").
func environHas(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// environValue returns the value of key in pid's environment.
func environValue(pid int, key string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(e), "="); ok && k == key {
			return v
		}
	}
	return ""
}

// cgroupCPU is the CPU time of a container's cgroup (cgroup v1 cpuacct or
// v2 cpu.stat), found through its first process.
func cgroupCPU(containerID string) (float64, bool) {
	for _, p := range []string{
		"/sys/fs/cgroup/cpuacct/docker/" + containerID + "/cpuacct.usage",
		"/sys/fs/cgroup/cpu,cpuacct/docker/" + containerID + "/cpuacct.usage",
	} {
		if b, err := os.ReadFile(p); err == nil {
			ns, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
			return ns / 1e9, err == nil
		}
	}
	for _, p := range []string{
		"/sys/fs/cgroup/system.slice/docker-" + containerID + ".scope/cpu.stat",
		"/sys/fs/cgroup/docker/" + containerID + "/cpu.stat",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, ln := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(ln, "usage_usec "); ok {
				us, err := strconv.ParseFloat(v, 64)
				return us / 1e6, err == nil
			}
		}
	}
	return 0, false
}

// dockerOut runs the docker CLI and returns its trimmed output.
func dockerOut(args ...string) string {
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// load1 is the one-minute load average.
func load1() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
