package driver

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// Setup retries back off from setupBackoffMin, doubling up to setupBackoffMax.
// After skipStreak consecutive picks that found their pool empty, a VU naps
// for skipNap rather than spin on the CPU it shares with the target.
const (
	// ConnectBackoffMin and ConnectBackoffMax bound a VU's wait after a
	// request that could not open its connection (see the package doc).
	ConnectBackoffMin = time.Millisecond
	ConnectBackoffMax = time.Second

	setupBackoffMin = 100 * time.Millisecond
	setupBackoffMax = 5 * time.Second
	skipStreak      = 16
	skipNap         = 10 * time.Millisecond
)

// vu is one virtual user: its scenario state, its connection, its random
// source. Only its own goroutine touches it.
type vu struct {
	r     *run
	idx   int // 0-based; scenarios number VUs from 1
	shard int
	state *scenarios.VU
	rng   rng
	conn  exchanger
	req   scenarios.Rendered
	timer *time.Timer
	skips int
	ready bool // setup done
	// connBackoff is the wait before the next dial after a connect
	// failure; 0 while connections open.
	connBackoff time.Duration

	wsc *http.Client       // websocket upgrades (websocket.go)
	msg scenarios.Rendered // websocket messages
}

func (r *run) newVU(i int) *vu {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &vu{
		r:     r,
		idx:   i,
		shard: i % len(r.rec.shards),
		state: r.plan.NewVU(i + 1),
		rng:   newRNG(r.seed + uint64(i)*0x9e3779b97f4a7c15),
		conn:  r.ep.newConn(),
		timer: t,
	}
}

// runClosed is the closed model: the next op starts when the last returned
// (plus think time), while this VU is within the active count.
func (v *vu) runClosed(wg *sync.WaitGroup) {
	defer wg.Done()
	r := v.r
	for {
		if !v.waitActive() {
			return
		}
		if !v.ready && !v.setup() {
			return
		}
		if r.isStopping() {
			return
		}
		v.iterate(time.Time{})
	}
}

// waitActive blocks while the ramp has this VU parked; false means stop.
func (v *vu) waitActive() bool {
	r := v.r
	for {
		if int64(v.idx) < r.active.Load() {
			return true
		}
		ch := r.gateChan()
		if int64(v.idx) < r.active.Load() {
			return true
		}
		select {
		case <-ch:
		case <-r.stopping:
			return false
		}
	}
}

// runOpen is the open model: set up, then run one iteration per job, timed
// from the job's intended start.
func (v *vu) runOpen(wg *sync.WaitGroup, jobs <-chan time.Time) {
	defer wg.Done()
	r := v.r
	if !v.setup() {
		return
	}
	for {
		select {
		case <-r.stopping:
			return
		case due := <-jobs:
			r.busy.Add(1)
			v.iterate(due)
			r.busy.Add(-1)
		}
	}
}

// setup runs the scenario's setup steps once, retrying a failed step with
// backoff. False means the run stopped first.
func (v *vu) setup() bool {
	r := v.r
	backoff := setupBackoffMin
	for i, a := range r.plan.Setup {
		for {
			if r.isStopping() {
				return false
			}
			c, status := v.exchange(a, r.setupAt+i, time.Time{})
			if c == window.OK {
				break
			}
			if r.warned[i].CompareAndSwap(false, true) {
				r.log.Warn("setup step failed; retrying with backoff (logged once per step)",
					"step", a.Name, "vu", v.idx+1, "class", c.String(), "status", status)
			}
			if !v.sleep(backoff) {
				return false
			}
			backoff = min(2*backoff, setupBackoffMax)
		}
		if d := a.ThinkTime(v.state); d > 0 && !v.sleep(d) {
			return false
		}
	}
	v.ready = true
	return true
}

// iterate picks an op and runs it. due is the intended start (open model) or
// zero (closed model: now).
func (v *vu) iterate(due time.Time) {
	r := v.r
	slot := r.picker.pick(v.rng.next())
	a := r.plan.Ops[slot]
	c, _ := v.exchange(a, slot, due)
	if c == skipped {
		v.skips++
		if v.skips >= skipStreak {
			v.skips = 0
			v.sleep(skipNap)
		}
		return
	}
	v.skips = 0
	if d := a.ThinkTime(v.state); d > 0 {
		v.sleep(d)
	}
}

// skipped is exchange's result for an action whose pool was empty.
const skipped = window.NumClasses

// exchange renders a, sends it, checks the response and records the
// outcome under slot. It returns the class (or skipped) and the status.
func (v *vu) exchange(a *scenarios.Action, slot int, due time.Time) (window.Class, int) {
	r := v.r
	if err := a.Render(v.state, &v.req); err != nil {
		if errors.Is(err, scenarios.ErrPoolEmpty) {
			r.rec.skip(v.shard, slot)
			if r.live != nil {
				r.live.skipped[slot].Inc()
			}
			return skipped, 0
		}
		// Compile catches template problems; what is left is data-dependent
		// (say, a variable no capture has set). Nothing was sent.
		if r.renderWarned.CompareAndSwap(false, true) {
			r.log.Warn("request not rendered; counted as other (logged once)", "op", a.Name, "vu", v.idx+1, "err", err)
		}
		r.rec.record(v.shard, slot, window.Other, 0, false)
		if r.live != nil {
			r.live.requests[slot][window.Other].Inc()
		}
		return window.Other, 0
	}
	if a.WebSocket != nil {
		return v.session(a, slot, due), 0
	}

	start := time.Now()
	if due.IsZero() {
		due = start
	}
	n := r.inFlight.Add(1)
	for m := r.maxInFlight.Load(); n > m && !r.maxInFlight.CompareAndSwap(m, n); m = r.maxInFlight.Load() {
	}
	if r.live != nil {
		r.live.inFlight.Set(float64(n))
	}
	status, body, c := v.conn.do(&v.req, a.WantsBody(), start.Add(r.timeout))
	end := time.Now()
	n = r.inFlight.Add(-1)
	if c == window.OK {
		c = a.Check(v.state, status, body)
	} else if c == window.Timeout && r.isStopping() {
		// In flight when the run stopped and not done within the timeout.
		c = window.Interrupted
	}
	latency := end.Sub(due)
	timed := hasLatency(c)
	connFailed := v.conn.connectFailed()
	r.rec.recordConn(v.shard, slot, c, latency, timed, connFailed)
	if r.live != nil {
		r.live.inFlight.Set(float64(n))
		r.live.requests[slot][c].Inc()
		if timed {
			r.live.latency[slot].Update(latency.Seconds())
		}
		if connFailed {
			r.live.connectFailures.Inc()
		}
	}
	if connFailed {
		v.backOff()
	} else {
		v.connBackoff = 0
	}
	return c, status
}

// backOff waits after a request that could not open its connection, longer
// after each one in a row (ConnectBackoffMin doubling to ConnectBackoffMax).
func (v *vu) backOff() {
	v.connBackoff = min(max(2*v.connBackoff, ConnectBackoffMin), ConnectBackoffMax)
	v.sleep(v.connBackoff)
}

// hasLatency reports whether a request of class c has a latency worth
// recording: a response arrived (whatever its status) or the request timed
// out (its latency is at least the timeout). Refused, reset, other and
// interrupted requests would only pull the percentiles down.
func hasLatency(c window.Class) bool {
	switch c {
	case window.OK, window.Status4xx, window.Status5xx, window.Unexpected, window.Timeout:
		return true
	}
	return false
}

// sleep pauses for d; false means the run is stopping.
func (v *vu) sleep(d time.Duration) bool {
	v.timer.Reset(d)
	select {
	case <-v.timer.C:
		return true
	case <-v.r.stopping:
		v.timer.Stop()
		return false
	}
}
