package driver

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// TEMPORARY experiment harness; removed before hand-off.
func TestRawLoop(t *testing.T) {
	addr := os.Getenv("RAWLOOP")
	if addr == "" {
		t.Skip()
	}
	secs, _ := strconv.Atoi(os.Getenv("RAWSECS"))
	u, _ := url.Parse("http://" + addr)
	ep, err := newEndpoint(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(0, &ru0)
	t0 := time.Now()
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := newHTTPConn(ep)
			req := scenarios.Rendered{Method: "GET", PathQuery: []byte("/")}
			var c int64
			for !stop.Load() {
				s := time.Now()
				_, _, cl := h.do(&req, false, s.Add(time.Second))
				_ = time.Since(s)
				if cl != 0 {
					t.Error("class", cl)
					return
				}
				c++
			}
			n.Add(c)
		}()
	}
	time.Sleep(time.Duration(secs) * time.Second)
	stop.Store(true)
	wg.Wait()
	el := time.Since(t0)
	syscall.Getrusage(0, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano())
	t.Logf("requests %d  rps %.0f  cpu %v  us/req %.2f  user %v sys %v", n.Load(), float64(n.Load())/el.Seconds(), cpu, float64(cpu.Microseconds())/float64(n.Load()),
		time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()), time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano()))
}
