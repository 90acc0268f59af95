package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Counters are cumulative CPU seconds of each part of the machine at one
// moment. A part that is not found yet reads 0.
type counters struct {
	at           time.Time
	machineBusy  float64 // all CPUs, busy
	machineTotal float64 // all CPUs, busy + idle
	driver       float64 // the longhaul process (driver, embedded Temporal, worker, store)
	target       float64 // the target: its container's cgroup, or its process
	database     float64 // PostgreSQL: its container's cgroup, or its processes
	proxyOurs    float64 // docker-proxy of this run's published ports
	proxyAll     float64 // every docker-proxy on the machine
	shimOurs     float64 // containerd-shim of this run's containers
	shimAll      float64
	dockerd      float64
	containerd   float64
}

// fields lists the counters by name, in table order.
func (c counters) fields() []float64 {
	return []float64{c.machineBusy, c.machineTotal, c.driver, c.target, c.database,
		c.proxyOurs, c.proxyAll, c.shimOurs, c.shimAll, c.dockerd, c.containerd}
}

func fromFields(at time.Time, f []float64) counters {
	return counters{at: at, machineBusy: f[0], machineTotal: f[1], driver: f[2], target: f[3], database: f[4],
		proxyOurs: f[5], proxyAll: f[6], shimOurs: f[7], shimAll: f[8], dockerd: f[9], containerd: f[10]}
}

// tracker samples the counters of one soak every interval until stopped,
// finding the run's target and database (by the mark in the target's
// environment) as they appear.
type tracker struct {
	provider  string
	mark      string // BENCH_MARK value in the target's environment
	driverPID int

	// docker
	containers []string // the run's: target first once found
	hostPorts  []string // their published 127.0.0.1 ports
	// local
	targetPID int
	envID     string
	dataDir   string // longhaul's --data: the environment's state is under it
	dbPID     int    // the local cluster's postmaster

	mu      sync.Mutex
	samples []counters
	stop    chan struct{}
	done    chan struct{}
}

func startTracker(provider, mark string, driverPID int, dataDir string, every time.Duration) *tracker {
	t := &tracker{provider: provider, mark: mark, driverPID: driverPID, dataDir: dataDir, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			c := t.sample()
			t.mu.Lock()
			t.samples = append(t.samples, c)
			t.mu.Unlock()
			select {
			case <-t.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

func (t *tracker) finish() []counters {
	close(t.stop)
	<-t.done
	return t.samples
}

func (t *tracker) sample() counters {
	c := counters{at: time.Now()}
	c.machineBusy, c.machineTotal = machineCPU()
	c.driver, _ = procCPU(t.driverPID)
	procs := processes()
	if t.provider == "docker" {
		t.findContainers()
	} else {
		t.findLocal(procs)
	}
	for _, p := range procs {
		switch p.name() {
		case "docker-proxy":
			v, _ := procCPU(p.pid)
			c.proxyAll += v
			if slices.Contains(t.hostPorts, p.arg("-host-port")) {
				c.proxyOurs += v
			}
		case "containerd-shim-runc-v2", "containerd-shim":
			v, _ := procCPU(p.pid)
			c.shimAll += v
			if slices.Contains(t.containers, p.arg("-id")) {
				c.shimOurs += v
			}
		case "dockerd":
			c.dockerd, _ = procCPU(p.pid)
		case "containerd":
			c.containerd, _ = procCPU(p.pid)
		default:
			// The local cluster: the postmaster (its pid from the
			// environment's state) and its backends, whose titles read
			// "postgres: ...". PostgreSQL writes its process titles over
			// the environment, so /proc/PID/environ cannot name them; and
			// the backends live as long as the target's connections, so
			// their own counters are summed, not the reaped children's.
			if t.dbPID > 0 && strings.HasPrefix(p.name(), "postgres") && (p.pid == t.dbPID || parentPID(p.pid) == t.dbPID) {
				v, _ := procCPU(p.pid)
				c.database += v
			}
		}
	}
	switch {
	case t.provider == "docker" && len(t.containers) > 0:
		c.target, _ = cgroupCPU(t.containers[0])
		for _, id := range t.containers[1:] {
			v, _ := cgroupCPU(id)
			c.database += v
		}
	case t.provider == "local" && t.targetPID > 0:
		v, _ := procCPU(t.targetPID)
		c.target = v + procChildrenCPU(t.targetPID)
	}
	return c
}

// findContainers finds the run's containers through the target's mark.
func (t *tracker) findContainers() {
	if len(t.containers) > 0 && len(t.hostPorts) == len(t.containers) {
		return
	}
	var target string
	for _, id := range strings.Fields(dockerOut("ps", "-q", "--no-trunc", "--filter", "label=dev.longhaul=1")) {
		env := dockerOut("inspect", "--format", "{{range .Config.Env}}{{println .}}{{end}}", id)
		if slices.Contains(strings.Split(env, "\n"), "BENCH_MARK="+t.mark) {
			target = id
			break
		}
	}
	if target == "" {
		return
	}
	run := dockerOut("inspect", "--format", `{{index .Config.Labels "dev.longhaul.run"}}`, target)
	ids := []string{target}
	for _, id := range strings.Fields(dockerOut("ps", "-q", "--no-trunc", "--filter", "label=dev.longhaul.run="+run)) {
		if id != target {
			ids = append(ids, id)
		}
	}
	var ports []string
	for _, id := range ids {
		for _, ln := range strings.Split(dockerOut("port", id), "\n") {
			if _, hp, ok := strings.Cut(ln, "-> 127.0.0.1:"); ok {
				ports = append(ports, hp)
			}
		}
	}
	t.containers, t.hostPorts = ids, ports
}

// findLocal finds the local target (the process with the mark) and the
// environment it belongs to (its PostgreSQL carries the same id).
func (t *tracker) findLocal(procs []process) {
	if t.targetPID > 0 {
		if t.dbPID == 0 && t.envID != "" {
			t.dbPID = stateDatabasePID(filepath.Join(t.dataDir, "provision", t.envID, "environment.json"))
		}
		return
	}
	for _, p := range procs {
		if environHas(p.pid, "BENCH_MARK="+t.mark) {
			t.targetPID = p.pid
			t.envID = environValue(p.pid, "LONGHAUL_ENV_ID")
			return
		}
	}
}

// at interpolates the counters at time x from samples (sorted by time).
func at(samples []counters, x time.Time) (counters, bool) {
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if b.at.Before(x) {
			continue
		}
		if a.at.After(x) {
			return counters{}, false
		}
		frac := 0.0
		if d := b.at.Sub(a.at); d > 0 {
			frac = float64(x.Sub(a.at)) / float64(d)
		}
		fa, fb := a.fields(), b.fields()
		out := make([]float64, len(fa))
		for j := range fa {
			out[j] = fa[j] + frac*(fb[j]-fa[j])
		}
		return fromFields(x, out), true
	}
	return counters{}, false
}

// stateDatabasePID reads the database's pid from a local environment's
// state file (0 if there is none yet).
func stateDatabasePID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var env struct {
		Database *struct {
			Process struct {
				PID int `json:"pid"`
			} `json:"process"`
		} `json:"database"`
	}
	if json.Unmarshal(b, &env) != nil || env.Database == nil {
		return 0
	}
	return env.Database.Process.PID
}

// parentPID is pid's parent (0 if unknown).
func parentPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
