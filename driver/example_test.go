package driver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

func ExampleRun() {
	// A target to drive: any loopback HTTP server.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()

	s, err := scenarios.Parse([]byte(`
name: hello
load: {vus: 2, duration: 600ms, window: 200ms}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`), "hello.yaml")
	if err != nil {
		panic(err)
	}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{})
	if err != nil {
		panic(err)
	}
	target, _ := url.Parse(srv.URL)
	if err := driver.CheckTarget(context.Background(), target); err != nil {
		panic(err)
	}

	res, err := driver.Run(context.Background(), driver.Options{Target: target, Plan: plan, Load: s.Load},
		func(w window.Window) error {
			// Called in index order, from a goroutine of its own: store the
			// window, probe the server...
			fmt.Printf("window %d: errors %d, all ok: %v\n", w.Index, w.Errors.Total(), w.Requests > 0 && w.OK == w.Requests)
			return nil
		})
	if err != nil {
		panic(err)
	}
	fmt.Println("windows:", res.Windows, "stopped early:", res.Stopped)
	// Output:
	// window 0: errors 0, all ok: true
	// window 1: errors 0, all ok: true
	// window 2: errors 0, all ok: true
	// windows: 3 stopped early: false
}
