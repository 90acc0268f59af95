// Command clientcmp is the other side of the driver's client choice: the
// same closed loop as the driver (N goroutines, one keep-alive connection
// each, time every request) written with fasthttp's HostClient or net/http's
// Client, with nothing else around it. bench/driver/compare runs it with
// -clients and reports its CPU per request next to the full driver's.
//
// It is a module of its own so that fasthttp never enters longhaul's go.mod.
//
//	cd bench/driver/clientcmp && go run . -client fasthttp -target http://127.0.0.1:8099/
//
// Its output is one JSON line: requests, errors, seconds.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "clientcmp:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("clientcmp", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:8099/", "loopback URL")
	client := fs.String("client", "fasthttp", "fasthttp or nethttp")
	conns := fs.Int("c", 16, "goroutines, one connection each")
	d := fs.Duration("duration", 10*time.Second, "how long to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil {
		return err
	}
	var do func() error
	switch *client {
	case "fasthttp":
		hc := &fasthttp.HostClient{Addr: u.Host, MaxConns: *conns}
		do = func() error {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI(*target)
			if err := hc.DoTimeout(req, resp, 10*time.Second); err != nil {
				return err
			}
			if resp.StatusCode() != 200 {
				return fmt.Errorf("status %d", resp.StatusCode())
			}
			return nil
		}
	case "nethttp":
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns}}
		do = func() error {
			r, err := c.Get(*target)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
			if r.StatusCode != 200 {
				return fmt.Errorf("status %d", r.StatusCode)
			}
			return nil
		}
	default:
		return fmt.Errorf("unknown client %q", *client)
	}

	var requests, errors atomic.Int64
	var lat atomic.Int64 // summed, so timing is not optimised away
	deadline := time.Now().Add(*d)
	start := time.Now()
	var wg sync.WaitGroup
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := do(); err != nil {
					errors.Add(1)
				}
				lat.Add(int64(time.Since(t0)))
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"requests": requests.Load(), "errors": errors.Load(), "seconds": time.Since(start).Seconds(),
	})
}
