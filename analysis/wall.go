package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// Causes of a throughput_limit finding (Evidence.Cause): the resource the
// ramp ran into, read from the thread probe's windows beyond the knee
// (window.Probes.HottestThread and the fields after it).
const (
	// CauseSingleThread: one of the target's threads was busy (running or
	// waiting for a CPU) nearly the whole time: a single-threaded wall.
	CauseSingleThread = "single_thread"
	// CauseTargetCores: the target kept every core it may use busy.
	CauseTargetCores = "target_cores"
	// CauseDatabaseCPU: the database's processes were the busy ones.
	CauseDatabaseCPU = "database_cpu"
	// CauseNoCPU: nothing was short of CPU while latency grew: a pool, a
	// lock or something downstream.
	CauseNoCPU = "no_cpu_saturated"
)

// Thresholds of the wall's evidence. A thread busy 0.9 of the window has
// nowhere to go: the rest is the probe's resolution and the scheduler's
// jitter. Busy time alone is not enough on a saturated machine, where every
// wake-up waits for a CPU: a thread woken a few hundred times a second can
// read busy while doing almost nothing. So each rule also asks for real
// work: a quarter of a core on the CPU (the busy thread, the database) or a
// quarter of the allowed cores (the target).
//
// The driver's own wait for a CPU is spread over the requests it timed: at
// a quarter of the p50 latency or more, the latencies are the driver's as
// much as the target's, and the measurement is not valid. So is one whose
// driver used nearly all the cores itself.
const (
	wallBusy         = 0.9
	wallMinCPU       = 0.25
	driverWaitShare  = 0.25
	driverMinWaitCPU = 0.05
)

// wallScope says where a wall is looked for and how it is told.
type wallScope struct {
	// on places the windows in the text: "from 24 VUs on" (beyond a
	// ramp's knee), "in the last quarter's windows" (a collapse), "in B's
	// rounds" (a comparison).
	on string
	// ramp adds "more VUs only queue" to a saturated resource: true of a
	// concurrency ramp only.
	ramp bool
	// latencyRose allows "no CPU was saturated": latency grew in those
	// windows, so something was; with no CPU busy it was a pool, a lock or
	// something downstream.
	latencyRose bool
}

// wall names the resource behind a throughput limit, a collapse or a
// slower build from the windows at pos (beyond the knee, the late windows,
// a side's rounds). It returns "" when those windows have no thread
// readings: without them it says nothing. The driver's warning is
// separate: a wall can be named and the measurement still be disturbed.
func (a *analyzer) wall(inc *incarnation, pos []int, sc wallScope, ev *Evidence) (text, driver string) {
	var hot, hotCores, tgt, tgtCPU, allowed, db, dbCPU, drv, drvWait, waitShare []float64
	threads := map[string]int{}
	mainThread := 0
	busy := true
	for _, i := range pos {
		w := inc.ws[i]
		p := w.Probes
		secs := w.Duration().Seconds()
		if p.HottestThreadCores == nil || secs <= 0 {
			continue
		}
		threads[p.HottestThread]++
		if p.HottestThreadMain {
			mainThread++
		}
		hotCores = append(hotCores, *p.HottestThreadCores)
		// Busy figures where schedstat gave them, else the CPU got.
		if p.HottestThreadBusy != nil {
			hot = append(hot, *p.HottestThreadBusy)
		} else {
			busy = false
			hot = append(hot, *p.HottestThreadCores)
		}
		if p.CPUSeconds != nil {
			tgtCPU = append(tgtCPU, *p.CPUSeconds/secs)
		}
		switch {
		case p.TargetBusyCores != nil:
			tgt = append(tgt, *p.TargetBusyCores)
		case p.CPUSeconds != nil:
			tgt = append(tgt, *p.CPUSeconds/secs)
		}
		if p.CoresAllowed != nil {
			allowed = append(allowed, *p.CoresAllowed)
		}
		if p.DatabaseCores != nil {
			dbCPU = append(dbCPU, *p.DatabaseCores)
			if p.DatabaseBusyCores != nil {
				db = append(db, *p.DatabaseBusyCores)
			} else {
				db = append(db, *p.DatabaseCores)
			}
		}
		if p.DriverCores != nil && p.DriverBusyCores != nil {
			wait := max(*p.DriverBusyCores-*p.DriverCores, 0)
			drv = append(drv, *p.DriverCores)
			drvWait = append(drvWait, wait)
			if w.Requests > 0 && w.LatencyMs.P50 > 0 {
				waitShare = append(waitShare, wait*secs*1000/float64(w.Requests)/w.LatencyMs.P50)
			}
		}
	}
	if len(hot) == 0 {
		return "", ""
	}
	if ev.Notes == nil {
		ev.Notes = map[string]float64{}
	}
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return math.NaN()
		}
		return a.medianOf(xs)
	}
	note := func(k string, v float64) {
		if !math.IsNaN(v) {
			ev.Notes[k] = v
		}
	}
	hotBusy, hotCPU := med(hot), med(hotCores)
	tgtBusy, tgtGot, cores := med(tgt), med(tgtCPU), med(allowed)
	dbBusy, dbGot := med(db), med(dbCPU)
	note("hottest_thread_cores", hotCPU)
	if busy {
		note("hottest_thread_busy", hotBusy)
	}
	note("target_busy_cores", tgtBusy)
	note("target_cores", tgtGot)
	note("cores_allowed", cores)
	note("database_cores", dbGot)
	note("database_busy_cores", dbBusy)
	ev.Thread = mostOften(threads)

	// The driver short of CPU: the measurement itself is not valid.
	if len(drv) > 0 {
		run, wait, share := med(drv), med(drvWait), med(waitShare)
		note("driver_cores", run)
		note("driver_wait_cores", wait)
		note("driver_wait_p50_share", share)
		switch {
		case wait >= driverMinWaitCPU && share >= driverWaitShare:
			driver = fmt.Sprintf("MEASUREMENT NOT VALID: longhaul's own driver was short of CPU %s: its threads waited for a CPU %s s per second, %s of the p50 latency per request, so these latencies are partly its own wait — %s",
				sc.on, fmtCores(wait), fmtPct(share), a.driverAdvice(inc, pos))
		case !math.IsNaN(cores) && run >= wallBusy*cores:
			driver = fmt.Sprintf("MEASUREMENT NOT VALID: longhaul's own driver used %s of the %s cores itself %s, so the load it offered was capped by its own CPU — lower the load, or run the driver on a machine with more cores",
				fmtCores(run), fmtCores(cores), sc.on)
		}
		if driver != "" {
			ev.Notes["driver_short_of_cpu"] = 1
		}
	}

	name := fmt.Sprintf("thread %q", ev.Thread)
	if mainThread*2 > len(hot) {
		name = fmt.Sprintf("main thread (%s)", ev.Thread)
	}
	ranText := func() string {
		if !busy || hotCPU >= wallBusy {
			return fmt.Sprintf("ran at %s of a core", fmtCores(hotCPU))
		}
		// On a loaded machine the thread gets less than a core but still
		// never waits for anything but a CPU.
		return fmt.Sprintf("was busy %s of the time (it ran at %s of a core and waited for a CPU the rest)", fmtCores(hotBusy), fmtCores(hotCPU))
	}
	// The target's real work, for the rules' second condition: its CPU
	// from the process probe, else the threads' busy time.
	work := tgtGot
	if math.IsNaN(work) {
		work = tgtBusy
	}
	on, queue := sc.on, ""
	if sc.ramp {
		queue = " — more VUs only queue"
	}
	allCores := !math.IsNaN(cores) && !math.IsNaN(tgtBusy) && tgtBusy >= wallBusy*cores && work >= wallMinCPU*cores
	switch {
	case allCores && cores > 1:
		ev.Cause = CauseTargetCores
		return fmt.Sprintf("the target kept all %s of its allowed cores busy %s (%s cores): it is CPU-bound%s; its busiest thread, %s, %s",
			fmtCores(cores), on, fmtCores(tgtBusy), queue, ev.Thread, ranText()), driver
	case hotBusy >= wallBusy && hotCPU >= wallMinCPU:
		ev.Cause = CauseSingleThread
		return fmt.Sprintf("the target's %s %s %s: a single-threaded wall%s", name, ranText(), on, queue), driver
	case allCores:
		ev.Cause = CauseTargetCores
		return fmt.Sprintf("the target kept its %s allowed core busy %s (%s): it is CPU-bound%s", fmtCores(cores), on, fmtCores(tgtBusy), queue), driver
	case !math.IsNaN(dbBusy) && dbBusy >= wallBusy && dbGot >= wallMinCPU && (math.IsNaN(tgtBusy) || dbBusy > tgtBusy):
		ev.Cause = CauseDatabaseCPU
		return fmt.Sprintf("the database's processes were busy %s cores %s, more than the target's %s: the database is the wall — look at its queries (rows read and transactions per request)",
			fmtCores(dbBusy), on, fmtCores(tgtBusy)), driver
	case sc.latencyRose && driver == "":
		ev.Cause = CauseNoCPU
		parts := []string{fmt.Sprintf("the target's busiest thread %s %s of the time", ev.Thread, busyWord(busy, hotBusy))}
		if !math.IsNaN(tgtBusy) && !math.IsNaN(cores) {
			parts = append(parts, fmt.Sprintf("the target %s of %s cores", fmtCores(tgtBusy), fmtCores(cores)))
		}
		if !math.IsNaN(dbBusy) {
			parts = append(parts, fmt.Sprintf("the database %s", fmtCores(dbBusy)))
		}
		return fmt.Sprintf("no CPU was saturated %s (%s) — look for a pool or a lock (a connection pool too small for the VUs, a mutex, a downstream call)%s",
			on, joinAnd(parts), a.foreignNote(inc, pos)), driver
	}
	return "", driver
}

// ExplainWalls names the saturated resource on each worse latency or
// throughput verdict of vs (p50, p95, p99, rps: B slower), from the thread
// readings of B's rounds (roundsB, each round's windows; warm-up left out
// as the verdicts' values leave it out), by the rules a throughput limit
// uses: it sets Verdict.Wall and WallCause and adds the wall to Summary.
// Only a saturated resource is named (a single thread, the target's cores,
// the database's processes) or longhaul's driver short of CPU: a slower
// build with nothing saturated is told by its CPU verdict and profiles,
// not by a guess at a pool or a lock. Verdicts are left as they are
// without thread readings.
func ExplainWalls(vs []Verdict, roundsB [][]window.Window, warmup time.Duration) {
	var worse []int
	for i, v := range vs {
		switch v.Metric {
		case MetricP50Ms, MetricP95Ms, MetricP99Ms, MetricRPS:
			if v.Outcome == Worse {
				worse = append(worse, i)
			}
		}
	}
	if len(worse) == 0 {
		return
	}
	a := &analyzer{opts: Options{Warmup: warmup}}
	side := &incarnation{}
	for _, ws := range roundsB {
		for _, inc := range a.split(ws) {
			side.ws = append(side.ws, inc.ws...)
		}
	}
	pos := make([]int, len(side.ws))
	for i := range pos {
		pos[i] = i
	}
	var ev Evidence
	wall, driver := a.wall(side, pos, wallScope{on: "in B's rounds"}, &ev)
	if driver != "" {
		wall, ev.Cause = strings.TrimSpace(driver+". "+wall), CauseDriverCPU
	}
	if wall == "" {
		return
	}
	for _, i := range worse {
		vs[i].Wall, vs[i].WallCause = wall, ev.Cause
		vs[i].Summary += " — " + wall
	}
}

// driverAdvice says what to do about a driver short of CPU.
func (a *analyzer) driverAdvice(inc *incarnation, pos []int) string {
	if f := a.foreign(inc, pos); !math.IsNaN(f) && f >= 0.25 {
		return fmt.Sprintf("other work took %s of the machine: run when it is quiet", fmtPct(f))
	}
	return "the target and its database left it too little: give them fewer cores (target.resources.cpus) or run longhaul on a machine with cores to spare"
}

// foreignNote is ", while other work took N % of the machine" when that was
// a quarter or more: everything is slower then, the wall included.
func (a *analyzer) foreignNote(inc *incarnation, pos []int) string {
	if f := a.foreign(inc, pos); !math.IsNaN(f) && f >= 0.25 {
		return fmt.Sprintf("; other work took %s of the machine meanwhile, which slows every wait", fmtPct(f))
	}
	return ""
}

func busyWord(busy bool, v float64) string {
	if busy {
		return "busy " + fmtCores(v)
	}
	return "on a CPU " + fmtCores(v)
}

// foreign is the median foreign load of the host in the windows at pos
// (window.Probes.HostForeignCPU), NaN without readings.
func (a *analyzer) foreign(inc *incarnation, pos []int) float64 {
	var f []float64
	for _, i := range pos {
		if v := inc.ws[i].Probes.HostForeignCPU; v != nil {
			f = append(f, *v)
		}
	}
	if len(f) == 0 {
		return math.NaN()
	}
	return a.medianOf(f)
}

// fmtCores formats a number of cores or a share of one: "0.98", "1.9".
func fmtCores(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// mostOften returns the key counted most (ties: the first by name).
func mostOften(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	best := ""
	for _, k := range keys {
		if best == "" && m[k] > 0 || m[k] > m[best] {
			best = k
		}
	}
	return best
}

func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	s := ""
	for i, p := range parts {
		switch {
		case i == 0:
			s = p
		case i == len(parts)-1:
			s += " and " + p
		default:
			s += ", " + p
		}
	}
	return s
}
