package analysis

import (
	"fmt"
	"math"
	"slices"
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
// jitter. The driver counts as short of CPU when its threads waited for a
// CPU at least as long as they ran, and at least 0.2 of a core: its
// latencies then include that wait, whatever the target did.
const (
	wallBusy          = 0.9
	driverWaitMin     = 0.2
	driverWaitPerCore = 1.0
)

// wall names the resource behind a throughput limit from the windows at
// pos (those beyond the knee). It returns "" when those windows have no
// thread readings: without them it says nothing. latencyRose says whether
// latency grew beyond the knee (the condition for "no CPU was saturated").
// The driver's warning is separate: a wall can be named and the
// measurement still be disturbed.
func (a *analyzer) wall(inc *incarnation, pos []int, from float64, unit string, latencyRose bool, ev *Evidence) (text, driver string) {
	var hot, hotCores, tgt, allowed, db, dbCPU, drv, drvBusy []float64
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
			drv = append(drv, *p.DriverCores)
			drvBusy = append(drvBusy, *p.DriverBusyCores)
		}
	}
	if len(hot) == 0 {
		return "", ""
	}
	if ev.Notes == nil {
		ev.Notes = map[string]float64{}
	}
	med := func(xs []float64) float64 { return a.medianOf(xs) }
	hotBusy, hotCPU := med(hot), med(hotCores)
	ev.Notes["hottest_thread_cores"] = hotCPU
	if busy {
		ev.Notes["hottest_thread_busy"] = hotBusy
	}
	ev.Thread = mostOften(threads)
	tgtBusy, cores := math.NaN(), math.NaN()
	if len(tgt) > 0 {
		tgtBusy = med(tgt)
		ev.Notes["target_busy_cores"] = tgtBusy
	}
	if len(allowed) > 0 {
		cores = med(allowed)
		ev.Notes["cores_allowed"] = cores
	}
	dbBusy := math.NaN()
	if len(db) > 0 {
		dbBusy = med(db)
		ev.Notes["database_cores"] = med(dbCPU)
		ev.Notes["database_busy_cores"] = dbBusy
	}

	// The driver short of CPU: the measurement itself is not valid.
	if len(drv) > 0 {
		run, b := med(drv), med(drvBusy)
		wait := b - run
		ev.Notes["driver_cores"], ev.Notes["driver_busy_cores"] = run, b
		if wait >= driverWaitMin && wait >= driverWaitPerCore*run {
			ev.Notes["driver_short_of_cpu"] = 1
			driver = fmt.Sprintf("MEASUREMENT NOT VALID: longhaul's own driver was short of CPU beyond the knee (it ran %s of a core and waited %s more for one), so these latencies include its wait: free the machine (other work took %s of it) or give the target fewer cores",
				fmtCores(run), fmtCores(wait), a.foreignText(inc, pos))
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
	on := fmt.Sprintf("from %s %s on", fmtCount(from), unit)
	switch {
	case !math.IsNaN(cores) && !math.IsNaN(tgtBusy) && cores > 1 && tgtBusy >= wallBusy*cores:
		ev.Cause = CauseTargetCores
		return fmt.Sprintf("the target kept all %s of its allowed cores busy %s (%s cores): it is CPU-bound — more VUs only queue; its busiest thread, %s, %s",
			fmtCores(cores), on, fmtCores(tgtBusy), ev.Thread, ranText()), driver
	case hotBusy >= wallBusy:
		ev.Cause = CauseSingleThread
		return fmt.Sprintf("the target's %s %s %s: a single-threaded wall — more VUs only queue", name, ranText(), on), driver
	case !math.IsNaN(cores) && !math.IsNaN(tgtBusy) && tgtBusy >= wallBusy*cores:
		ev.Cause = CauseTargetCores
		return fmt.Sprintf("the target kept its %s allowed core busy %s (%s): it is CPU-bound — more VUs only queue", fmtCores(cores), on, fmtCores(tgtBusy)), driver
	case !math.IsNaN(dbBusy) && dbBusy >= wallBusy && (math.IsNaN(tgtBusy) || dbBusy > tgtBusy):
		ev.Cause = CauseDatabaseCPU
		return fmt.Sprintf("the database's processes were busy %s cores %s, more than the target's %s: the database is the wall — look at its queries (rows read and transactions per request)",
			fmtCores(dbBusy), on, fmtCores(tgtBusy)), driver
	case latencyRose && driver == "":
		ev.Cause = CauseNoCPU
		var parts []string
		parts = append(parts, fmt.Sprintf("the target's busiest thread %s %s of the time", ev.Thread, busyWord(busy, hotBusy)))
		if !math.IsNaN(tgtBusy) && !math.IsNaN(cores) {
			parts = append(parts, fmt.Sprintf("the target %s of %s cores", fmtCores(tgtBusy), fmtCores(cores)))
		}
		if !math.IsNaN(dbBusy) {
			parts = append(parts, fmt.Sprintf("the database %s", fmtCores(dbBusy)))
		}
		return fmt.Sprintf("no CPU was saturated %s (%s) — look for a pool or a lock (a connection pool too small for the VUs, a mutex, a downstream call)",
			on, joinAnd(parts)), driver
	}
	return "", driver
}

func busyWord(busy bool, v float64) string {
	if busy {
		return "busy " + fmtCores(v)
	}
	return "on a CPU " + fmtCores(v)
}

// foreignText is the median foreign load of the host in the windows at
// pos, as "12 %", or "an unknown share".
func (a *analyzer) foreignText(inc *incarnation, pos []int) string {
	var f []float64
	for _, i := range pos {
		if v := inc.ws[i].Probes.HostForeignCPU; v != nil {
			f = append(f, *v)
		}
	}
	if len(f) == 0 {
		return "an unknown share"
	}
	return fmtPct(a.medianOf(f))
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
