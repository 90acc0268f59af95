package analysis

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// This file simulates soak runs of the demo target (a Go REST API over
// PostgreSQL, 16 closed-loop VUs, the parse-mix scenario) and of a Node.js
// target, to test the detectors against realistic noise rather than clean
// curves. What it models, and why:
//
//   - Throughput: a base rate (randomised per run) times window-to-window
//     white jitter of ±10–30 % (the amplitude itself is random per run), times
//     an AR(1) drift (a shared 2-core machine whose other tenants come and go),
//     times background-load episodes that take 15–45 % of the capacity for
//     a stretch of the run (another helper's build), which also raise the
//     target's CPU per request by ~10 % (cache contention).
//   - The Go heap: a live base with slow AR(1) wander, in-flight request data,
//     optional early warm-up growth, an optional cache that fills and levels
//     off, and an optional leak (bytes retained per request). The GC is
//     simulated (GOGC=100: a cycle when the heap reaches twice the live heap of
//     the last cycle, 4 MiB minimum), so the passive "live heap after the last
//     GC" metric is stale between cycles — with a big leaking heap it becomes a
//     staircase. Forced-GC checkpoints every few windows read the live heap
//     exactly (±0.5 %).
//   - The database: items grows by the creates (20 % of requests) minus the
//     deletes (4 %). With the index the list query (40 % of requests) fetches
//     ≤ 20 rows; without it, it seq-scans the whole table, and the time per
//     request grows with the table — the collapse. pg_stat deltas spill
//     partly into the next window (the statistics flush ~1 s late) and
//     n_live_tup lags by up to 1.5 s.
//   - Errors: a background rate of rare timeouts/resets, an optional surge of
//     one class, and the requests interrupted at the end of the run.
//   - Ramps: VUs rising linearly; throughput follows a smooth saturation curve
//     X(c) = perVU·c / (1 + (perVU·c/capacity)^4)^(1/4), latency = c/X
//     (Little's law).

type model struct {
	name      string
	windows   int
	windowSec float64
	dt        float64 // simulation step, seconds (0: 0.25)
	vus       int

	baseRPS   float64 // before per-run randomisation (±20 %)
	jitterMin float64 // white jitter amplitude drawn from [jitterMin, jitterMax]
	jitterMax float64
	// logJitter > 0 replaces the uniform jitter by a log-normal factor
	// exp(σ·N(0,1)) with σ drawn from [logJitter/2, logJitter]: what a
	// 2-core machine at load 20 gave on real runs (205 to 2,447 req/s in one
	// clean 90-second run, σ ≈ 0.45).
	logJitter    float64
	interference bool // background-load episodes on some runs

	// Heap.
	node        bool    // Node.js target: inspector checkpoint every window, no passive metric
	passive     bool    // passive live-heap metric every window
	forcedEvery int     // forced-GC checkpoint every N windows (0: none)
	leakPerReq  float64 // bytes retained per request
	cacheMin    float64 // cache that fills and levels off: size drawn from [cacheMin, cacheMax] bytes
	cacheMax    float64
	cacheTauMin float64 // its time constant, as a fraction of the run, from [cacheTauMin, cacheTauMax]
	cacheTauMax float64

	// Database.
	db       bool
	sqlite   bool    // a SQLite file's table rows instead of pg_stat (no rows-read statistics)
	noOps    bool    // no per-op figures in the windows
	noIndex  bool    // list query seq-scans items
	rowCostK float64 // rows at which a request costs twice the base (no index): collapse speed
	cpu      bool    // process probe

	// Errors.
	baseErrRate float64
	surgeAt     float64 // fraction of the run where a surge starts (0: none)
	surgeRate   float64
	surgeClass  window.Class

	// Ramp (closed model): VUs rise linearly from 1 to rampTo.
	rampTo   int
	perVU    float64 // req/s per VU before saturation
	capacity float64 // req/s at saturation (0: none)

	incarnations int // > 1: the environment is replaced, with a gap window in between

	// Memory outside the heap and pauses (drawn from their own random
	// stream). The process probe (cpu) also reads the RSS: runtime overhead
	// plus about 2× (Go) or 1.2× (Node.js) the live heap, plus the off-heap
	// memory, which never shrinks much (a ratchet). Node.js targets report
	// process.memoryUsage().external and the event-loop delay p99 (1–5 ms,
	// more during a noisy-neighbour episode) every window.
	offHeapPerReq float64 // bytes retained outside the heap per request (Buffers, native)
	loopDelayRise float64 // ms the event-loop delay p99 gains, linearly, over the run; the latency tail follows

	// starved is the fraction of windows in which the driver and the target
	// are starved of CPU by other processes: every request, of every op,
	// waits 40–280 ms more (drawn from the per-op stream). What a 2-core
	// machine at load 30 did to real SQLite runs.
	starved float64

	// sharedCores: on every run, one stretch of the second half (from 45–60 %
	// of the run to 80–90 %) where the target shares its cores with a job the
	// host probe does not see (short-lived compiler and test processes):
	// throughput loses 25–45 % and the target's CPU per request rises
	// 1.4–1.8× (descheduled mid request, cold caches), then both recover
	// before the run ends. What a clean-clone CI on the same 2 cores did to
	// a real clean docker run (CPU per request 263 → 396 µs in the last
	// quarter, 327 µs at the end).
	sharedCores bool
}

var t0 = time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)

// generate simulates one run. The same seed always gives the same windows.
func (m model) generate(seed uint64) []window.Window {
	r := rand.New(rand.NewPCG(seed, 0x10ad))
	// The per-op figures draw from their own stream, so that adding them
	// left every other figure of a seed as it was.
	ro := rand.New(rand.NewPCG(seed, 0x0b5))
	// So does the memory outside the heap and the event-loop delay.
	rm := rand.New(rand.NewPCG(seed, 0x0ff))
	incs := max(m.incarnations, 1)
	var out []window.Window
	index := 0
	start := t0
	for inc := 0; inc < incs; inc++ {
		ws := m.simulate(r, ro, rm, inc, index, start)
		out = append(out, ws...)
		index += len(ws)
		start = ws[len(ws)-1].End
		if inc < incs-1 {
			// The lost window.
			out = append(out, window.Window{Incarnation: inc, Index: index, Gap: true,
				Start: start, End: start.Add(time.Duration(m.windowSec * float64(time.Second)))})
			index++
			start = start.Add(time.Duration(2 * m.windowSec * float64(time.Second)))
		}
	}
	return out
}

func (m model) simulate(r, ro, rm *rand.Rand, inc, firstIndex int, start time.Time) []window.Window {
	dt := m.dt
	if dt == 0 {
		dt = 0.25
	}
	total := float64(m.windows) * m.windowSec
	base := m.baseRPS * (0.8 + 0.4*r.Float64())
	jit := m.jitterMin + (m.jitterMax-m.jitterMin)*r.Float64()
	sigma := m.logJitter * (0.5 + 0.5*r.Float64())

	// Background-load episodes: on about half of the runs, one or two.
	type episode struct{ from, to, loss float64 }
	var episodes []episode
	if m.interference && r.Float64() < 0.5 {
		for k := 1 + r.IntN(2); k > 0; k-- {
			from := r.Float64() * total
			episodes = append(episodes, episode{from, from + (0.1+0.5*r.Float64())*total, 0.15 + 0.30*r.Float64()})
		}
	}
	var shared episode
	sharedCPU := 1.0
	if m.sharedCores {
		from, to := (0.45+0.15*r.Float64())*total, (0.80+0.10*r.Float64())*total
		shared = episode{from, to, 0.25 + 0.20*r.Float64()}
		episodes = append(episodes, shared)
		sharedCPU = 1.4 + 0.4*r.Float64()
	}
	loss := func(t float64) float64 {
		l := 0.0
		for _, e := range episodes {
			if t >= e.from && t < e.to {
				l = math.Max(l, e.loss)
			}
		}
		return l
	}

	// Heap parameters.
	heapBase := (4 + 8*r.Float64()) * (1 << 20)
	if m.node {
		heapBase = (5 + 5*r.Float64()) * (1 << 20)
	}
	warmBytes := (0.3 + 2.5*r.Float64()) * (1 << 20) // early warm-up growth, every target
	warmTau := 2 + 8*r.Float64()
	cacheBytes, cacheTau := 0.0, 1.0
	if m.cacheMax > 0 {
		cacheBytes = m.cacheMin + (m.cacheMax-m.cacheMin)*r.Float64()
		cacheTau = (m.cacheTauMin + (m.cacheTauMax-m.cacheTauMin)*r.Float64()) * total
	}
	allocPerReq := (8 + 32*r.Float64()) * 1024
	inflightPerVU := (10 + 40*r.Float64()) * 1024
	forcedPhase := 0
	if m.forcedEvery > 0 {
		forcedPhase = r.IntN(m.forcedEvery)
	}

	var (
		drift, heapWander         float64
		cumReq, rows, lastGCLive  float64
		allocSince                float64
		users                     = float64(m.vus)
		sessions                  = float64(m.vus)
		spill                     pgDeltas
		cpuPerReq                 = 200 + 150*r.Float64()
		ws                        []window.Window
		rowsHist                  []float64 // rows at each step, for the n_live_tup lag
		stepsPerWindow            = int(math.Round(m.windowSec / dt))
		latNoise                  = 0.05 + 0.1*r.Float64()
		trueLive                  func(t float64) float64
		tablesEnabled, cpuEnabled = m.db, m.cpu
		surgeStart                = m.surgeAt * total
		interruptedAtEnd          = int64(m.vus)
		elapsed                   float64
	)
	if m.rampTo > 0 {
		interruptedAtEnd = int64(m.rampTo)
	}
	trueLive = func(t float64) float64 {
		return heapBase*(1+heapWander) + warmBytes*(1-math.Exp(-t/warmTau)) +
			cacheBytes*(1-math.Exp(-t/cacheTau)) + m.leakPerReq*cumReq
	}
	lastGCLive = trueLive(0)
	rssBase, rssPerHeap := (8+7*rm.Float64())*(1<<20), 2.0
	extBase := 0.0
	if m.node {
		rssBase, rssPerHeap = (35+15*rm.Float64())*(1<<20), 1.2
		extBase = (1 + 2*rm.Float64()) * (1 << 20)
	}
	var prevRSS, extWander float64

	for wi := 0; wi < m.windows; wi++ {
		drift = 0.7*drift + 0.06*r.NormFloat64()
		heapWander = 0.6*heapWander + 0.02*r.NormFloat64()
		white := 1 + jit*(2*r.Float64()-1)
		if sigma > 0 {
			white = math.Exp(sigma * r.NormFloat64())
		}
		var reqs, seqRead, idxFetch, seqScans, idxScans, cpuSec, errCount float64
		var errs window.Errors
		var vusNow int
		var latSum float64
		for s := 0; s < stepsPerWindow; s++ {
			t := elapsed + float64(s)*dt
			c := float64(m.vus)
			if m.rampTo > 0 {
				c = math.Ceil(1 + float64(m.rampTo-1)*t/total)
			}
			vusNow = int(c)
			f := math.Max(0.05, (1-loss(t))*(1+drift)*white)
			var rate float64
			switch {
			case m.rampTo > 0 && m.capacity > 0:
				x := m.perVU * c
				rate = x / math.Pow(1+math.Pow(x/m.capacity, 4), 0.25) * f
			case m.rampTo > 0:
				rate = m.perVU * c * f
			default:
				rate = base * f
			}
			if m.noIndex {
				rate /= 1 + rows/m.rowCostK
			}
			n := rate * dt
			reqs += n
			cumReq += n
			latSum += n * c / rate // Little's law: mean latency in seconds
			// Database effects of this step's requests.
			lists, byID := 0.40*n, 0.38*n // gets, updates, deletes by id
			rows += 0.16 * n
			users += 0.0005 * n
			sessions += 0.01 * n
			if m.noIndex {
				seqScans += lists
				seqRead += lists * rows
			} else {
				idxScans += lists
				idxFetch += lists * math.Min(20, rows/16+1)
			}
			idxScans += byID
			idxFetch += byID
			scan := 1.0
			if m.sqlite && m.noIndex {
				scan = 1 + rows/m.rowCostK // SQLite scans in the target's own process
			}
			block := 1.0
			if m.loopDelayRise > 0 {
				block = 1 + 1.5*t/total // the synchronous work that blocks the loop is CPU
			}
			contention := 1 + 0.1*math.Ceil(loss(t))
			if t >= shared.from && t < shared.to {
				contention = sharedCPU
			}
			cpuSec += n * cpuPerReq * scan * block * contention * 1e-6
			// Errors.
			if m.surgeRate > 0 && surgeStart > 0 && t >= surgeStart {
				k := poisson(r, n*m.surgeRate)
				errs.Add(m.surgeClass, k)
				errCount += float64(k)
			}
			if k := poisson(r, n*m.baseErrRate); k > 0 {
				cls := window.Timeout
				if r.IntN(2) == 0 {
					cls = window.Reset
				}
				errs.Add(cls, k)
				errCount += float64(k)
			}
			// The GC.
			allocSince += n * allocPerReq
			goal := math.Max(4<<20, 2*lastGCLive)
			if !m.node && lastGCLive+allocSince >= goal {
				lastGCLive = trueLive(t) + float64(m.vus)*inflightPerVU*(0.5+r.Float64())
				allocSince = 0
			}
			rowsHist = append(rowsHist, rows)
		}
		elapsed += float64(stepsPerWindow) * dt
		end := elapsed
		if wi == m.windows-1 {
			errs.Add(window.Interrupted, interruptedAtEnd)
			errCount += float64(interruptedAtEnd)
		}
		requests := int64(math.Round(reqs + float64(errs.Interrupted)))
		ok := max(requests-int64(errCount), 0)
		wStart := start.Add(time.Duration((end - m.windowSec) * float64(time.Second)))
		w := window.Window{
			Incarnation: inc,
			Index:       firstIndex + wi,
			Start:       wStart,
			End:         start.Add(time.Duration(end * float64(time.Second))),
			Requests:    requests,
			OK:          ok,
			Errors:      errs,
			RPS:         float64(requests) / m.windowSec,
			VUs:         vusNow,
			InFlight:    vusNow,
		}
		if m.rampTo > 0 {
			w.Target = float64(vusNow)
		}
		meanLatMs := latSum / math.Max(reqs, 1) * 1000
		w.LatencyMs = window.Latency{P50: 0.8 * meanLatMs * (1 + latNoise*r.NormFloat64()), P99: 3 * meanLatMs}
		if w.LatencyMs.P50 <= 0 {
			w.LatencyMs.P50 = 0.1 * meanLatMs
		}

		// Heap readings.
		forced := m.forcedEvery > 0 && (wi+forcedPhase)%m.forcedEvery == 0
		switch {
		case m.node || forced:
			v := int64(trueLive(end) * (1 + 0.005*r.NormFloat64()))
			if m.node {
				// V8's usedSize after a full GC still wobbles with compiled
				// code and feedback vectors.
				v = int64(trueLive(end) * (1 + 0.03*r.NormFloat64()))
			}
			w.Probes.HeapBytes, w.Probes.HeapForcedGC = &v, true
			lastGCLive, allocSince = float64(v), 0
		case m.passive:
			v := int64(lastGCLive)
			w.Probes.HeapBytes = &v
		}

		// Memory outside the heap, and the event-loop delay.
		offHeap := m.offHeapPerReq * cumReq
		extWander = 0.7*extWander + 0.01*rm.NormFloat64()
		ext := (extBase + offHeap) * (1 + extWander)
		rss := (rssBase + rssPerHeap*trueLive(end) + offHeap) * (1 + 0.01*rm.NormFloat64())
		if extBase > 0 {
			rss += extBase
		}
		rss = math.Max(rss, prevRSS*0.998)
		prevRSS = rss
		if cpuEnabled {
			v := int64(rss)
			w.Probes.RSSBytes = &v
		}
		w.LatencyMs.P999 = 5 * meanLatMs
		if m.node {
			v := int64(0)
			if w.Probes.HeapBytes != nil {
				v = *w.Probes.HeapBytes
			}
			w.Probes.Node = &window.NodeMemory{HeapUsedBytes: v, HeapTotalBytes: v * 3 / 2, ExternalBytes: int64(ext),
				ArrayBuffersBytes: int64(ext * 0.6), RSSBytes: int64(rss)}
			p99 := 1 + 4*math.Abs(rm.NormFloat64()) + 20*loss(end) + m.loopDelayRise*end/total
			w.Probes.EventLoopDelay = &window.Pauses{P50Ms: p99 / 4, P99Ms: p99, MaxMs: 1.5 * p99, Count: int64(m.windowSec * 90)}
			if m.loopDelayRise > 0 {
				// Requests queued behind a blocked loop wait for it.
				w.LatencyMs.P99 += p99
				w.LatencyMs.P999 += 1.5 * p99
			}
		}

		if !m.noOps && requests > 0 {
			w.Ops = simulateOps(ro, m, requests, meanLatMs, latNoise, rowsHist[len(rowsHist)-1-stepsPerWindow/2])
			if m.starved > 0 && ro.Float64() < m.starved {
				stall := 40 + 240*ro.Float64()
				for name, st := range w.Ops {
					st.LatencyMs.P50 += stall * (1 + 0.1*ro.NormFloat64())
					st.LatencyMs.P99 += 2 * stall
					w.Ops[name] = st
				}
				w.LatencyMs.P50 += stall
				w.LatencyMs.P99 += 2 * stall
			}
		}
		if m.sqlite {
			w.Probes.SQLite = &window.SQLite{FileBytes: int64(4096 + 320*rows), Tables: []window.SQLiteTable{
				{Name: "items", Rows: int64(rows)}, {Name: "sessions", Rows: int64(sessions)}, {Name: "users", Rows: int64(users)},
			}}
		}
		if cpuEnabled && requests > 0 {
			c := cpuSec * (1 + 0.03*r.NormFloat64())
			us := c * 1e6 / float64(requests)
			w.Probes.CPUSeconds, w.Probes.CPUMicrosPerRequest = &c, &us
		}
		if tablesEnabled {
			// pg_stat: a random part of this window's deltas is only flushed in
			// the next one; n_live_tup lags by up to 1.5 s.
			frac := 0.3 * r.Float64()
			cur := pgDeltas{seqRead, idxFetch, seqScans, idxScans}
			rep := pgDeltas{
				cur.seq*(1-frac) + spill.seq, cur.idx*(1-frac) + spill.idx,
				cur.seqScans*(1-frac) + spill.seqScans, cur.idxScans*(1-frac) + spill.idxScans,
			}
			spill = pgDeltas{cur.seq * frac, cur.idx * frac, cur.seqScans * frac, cur.idxScans * frac}
			lag := int(1.5 * r.Float64() / dt)
			live := rowsHist[max(len(rowsHist)-1-lag, 0)]
			perReq := func(x float64) float64 { return x / math.Max(float64(requests), 1) }
			items := window.Table{Name: "items", LiveRows: int64(live), SeqScans: int64(rep.seqScans), SeqTuplesRead: int64(rep.seq),
				IndexScans: int64(rep.idxScans), IndexTuplesFetched: int64(rep.idx), RowsReadPerRequest: perReq(rep.seq + rep.idx)}
			login := 0.01 * reqs
			userT := window.Table{Name: "users", LiveRows: int64(users), IndexScans: int64(login), IndexTuplesFetched: int64(login),
				RowsReadPerRequest: perReq(login)}
			auth := 0.85 * reqs
			sessT := window.Table{Name: "sessions", LiveRows: int64(sessions), IndexScans: int64(auth), IndexTuplesFetched: int64(auth),
				RowsReadPerRequest: perReq(auth)}
			all := rep.seq + rep.idx + login + auth
			w.Probes.Database = &window.Database{
				TuplesReturned:     int64(all),
				Commits:            int64(0.45 * reqs),
				RowsReadPerRequest: perReq(all),
				Tables:             []window.Table{items, userT, sessT},
			}
		}
		ws = append(ws, w)
	}
	return ws
}

type pgDeltas struct{ seq, idx, seqScans, idxScans float64 }

// The parse-mix ops: weight (%) and relative latency with the index.
var simOps = []struct {
	name         string
	weight, cost float64
}{
	{"list", 40, 1.0}, {"get", 15, 0.6}, {"create", 20, 1.2}, {"update", 19, 1.1},
	{"batch", 4, 3.0}, {"delete", 1, 0.8}, {"login", 1, 20},
}

// simulateOps splits a window's requests over the parse-mix ops. Without
// the index the extra time is in list, whose query scans items: its cost
// grows with the table, while the other ops queue a little behind it (a
// tenth of the slowdown). The mean latency over all ops is meanLatMs.
func simulateOps(r *rand.Rand, m model, requests int64, meanLatMs, latNoise, rows float64) map[string]window.OpStats {
	f := 1.0
	if m.noIndex {
		f = 1 + rows/m.rowCostK
	}
	const spill = 0.1
	var sumW, sumWC float64
	for _, o := range simOps {
		sumW += o.weight
		sumWC += o.weight * o.cost
	}
	list := simOps[0]
	mList := 1 + (f-1)*(sumWC-spill*(sumWC-list.weight*list.cost))/(list.weight*list.cost)
	mOther := 1 + spill*(f-1)
	var sumWCM float64
	for i, o := range simOps {
		mo := mOther
		if i == 0 {
			mo = mList
		}
		sumWCM += o.weight * o.cost * mo
	}
	ops := make(map[string]window.OpStats, len(simOps))
	for i, o := range simOps {
		mo := mOther
		if i == 0 {
			mo = mList
		}
		n := max(int64(math.Round(float64(requests)*o.weight/sumW)), 0)
		lat := meanLatMs * o.cost * mo * sumW / sumWCM
		sampling := 1 + 0.5*r.NormFloat64()/math.Sqrt(math.Max(float64(n), 1))
		p50 := 0.8 * lat * (1 + latNoise*r.NormFloat64()) * sampling
		if p50 <= 0 {
			p50 = 0.1 * lat
		}
		ops[o.name] = window.OpStats{Requests: n, OK: n, RPS: float64(n) / m.windowSec,
			LatencyMs: window.Latency{P50: p50, P99: 3 * lat * (1 + 0.1*r.NormFloat64())}}
	}
	return ops
}

// poisson draws a Poisson variate (normal approximation above 50).
func poisson(r *rand.Rand, mean float64) int64 {
	if mean <= 0 {
		return 0
	}
	if mean > 50 {
		return max(int64(math.Round(mean+math.Sqrt(mean)*r.NormFloat64())), 0)
	}
	l, k, p := math.Exp(-mean), int64(0), 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// The demo target as the accuracy bar runs it: 90 s, 3 s windows, 16 VUs, a
// passive heap metric every window and a forced-GC checkpoint every 5, the
// process and database probes on, on a busy shared machine.
var demo = model{
	name: "demo", windows: 30, windowSec: 3, vus: 16,
	baseRPS: 1950, jitterMin: 0.10, jitterMax: 0.30, interference: true,
	passive: true, forcedEvery: 5,
	db: true, cpu: true, rowCostK: 3000,
	baseErrRate: 2e-5,
}

func (m model) with(name string, f func(*model)) model {
	m.name = name
	f(&m)
	return m
}
