// Command pingpong measures the CPU of a TCP request/response round trip
// on loopback: run its server and client on the host, or both inside a
// container's network namespace (pingpong.sh), to compare the two paths.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	listen := flag.String("listen", "", "serve on addr")
	connect := flag.String("connect", "", "client to addr")
	n := flag.Int("n", 100000, "round trips per conn")
	conns := flag.Int("conns", 4, "connections")
	size := flag.Int("size", 200, "bytes per message")
	flag.Parse()
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			panic(err)
		}
		fmt.Println("listening", ln.Addr())
		var wg sync.WaitGroup
		var total int64
		var mu sync.Mutex
		c0 := cpu()
		for i := 0; i < *conns; i++ {
			c, err := ln.Accept()
			if err != nil {
				panic(err)
			}
			if i == 0 {
				c0 = cpu()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, *size)
				k := int64(0)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						break
					}
					c.Write(buf)
					k++
				}
				mu.Lock()
				total += k
				mu.Unlock()
			}()
		}
		wg.Wait()
		d := cpu() - c0
		fmt.Printf("server: %d rt, %.2f µs cpu/rt\n", total, float64(d.Nanoseconds())/1e3/float64(total))
		os.Exit(0)
	}
	var wg sync.WaitGroup
	c0 := cpu()
	t0 := time.Now()
	for i := 0; i < *conns; i++ {
		c, err := net.Dial("tcp", *connect)
		if err != nil {
			panic(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, *size)
			for j := 0; j < *n; j++ {
				c.Write(buf)
				if _, err := io.ReadFull(c, buf); err != nil {
					panic(err)
				}
			}
			c.Close()
		}()
	}
	wg.Wait()
	d := cpu() - c0
	el := time.Since(t0)
	tot := *n * *conns
	fmt.Printf("client: %d rt in %v (%.0f rt/s), %.2f µs cpu/rt\n", tot, el.Round(time.Millisecond), float64(tot)/el.Seconds(), float64(d.Nanoseconds())/1e3/float64(tot))
}
