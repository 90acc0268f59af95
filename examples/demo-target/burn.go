package main

import (
	"math"
	"runtime"
	"sync"
	"syscall"
	"time"
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

// threadCPU is the calling OS thread's CPU time.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// calibrate measures iterations per CPU microsecond: several short runs on
// one locked thread, keeping the fastest (the least disturbed).
func calibrate() float64 {
	calibrateOnce.Do(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		n := 200_000
		best := 0.0
		for range 7 {
			t0 := threadCPU()
			burnSink += spin(n)
			d := threadCPU() - t0
			if d <= 0 {
				n *= 4 // the thread clock ticks coarser than this run
				continue
			}
			best = max(best, float64(n)/float64(d.Microseconds()+1))
			// Aim each run at ~10 ms of CPU.
			n = int(math.Max(1e5, best*10_000))
		}
		itersPerMicro = best
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
