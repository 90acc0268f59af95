package main

import (
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// cpuBurner burns a fixed amount of CPU work per request: the
// DEMO_CPU_BURN_US switch, a known per-request cost that a comparison must
// find in the target's CPU per request. The work is a loop of iterations
// calibrated once against the calling thread's own CPU time (not wall
// time), so a request burns about the same CPU however busy the machine is.
type cpuBurner struct {
	iters int // per request; 0 burns nothing
}

// burnSink keeps the loop's result alive so the compiler cannot drop it.
var burnSink uint64

// spin runs n iterations of a multiply-xorshift loop.
func spin(n int) uint64 {
	x := uint64(0x9e3779b97f4a7c15)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		x *= 0x2545f4914f6cdd1d
	}
	return x
}

var (
	calibrateOnce sync.Once
	itersPerMicro float64
)

// threadCPU is the calling OS thread's CPU time, from the scheduler's
// exact accounting (CLOCK_THREAD_CPUTIME_ID; getrusage's is tick-sampled
// and far too coarse for runs of milliseconds).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// calibrate measures iterations per CPU microsecond: the median of several
// ~5 ms runs on one locked thread. Thread CPU time does not count the time
// the thread waited for a core, so a busy machine does not skew it.
func calibrate() float64 {
	calibrateOnce.Do(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		n := 100_000
		var rates []float64
		for range 9 {
			t0 := threadCPU()
			burnSink += spin(n)
			d := threadCPU() - t0
			if d <= 0 {
				continue
			}
			rate := float64(n) / (float64(d) / float64(time.Microsecond))
			rates = append(rates, rate)
			n = max(100_000, int(rate*5000))
		}
		if len(rates) == 0 {
			itersPerMicro = 100 // no thread clock: a rough guess beats none
			return
		}
		slices.Sort(rates)
		itersPerMicro = rates[len(rates)/2]
	})
	return itersPerMicro
}

func newCPUBurner(micros int) cpuBurner {
	if micros <= 0 {
		return cpuBurner{}
	}
	return cpuBurner{iters: int(float64(micros) * calibrate())}
}

func (b cpuBurner) burn() {
	if b.iters > 0 {
		burnSink += spin(b.iters)
	}
}
