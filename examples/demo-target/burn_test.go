package main

import (
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// TestCPUBurn: DEMO_CPU_BURN_US=N burns about N µs of the thread's CPU per request.
func TestCPUBurn(t *testing.T) {
	const micros, requests = 500, 40
	b := newCPUBurner(micros)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	for range requests {
		b.burn()
	}
	got := (threadCPU() - t0) / requests
	t.Logf("burned %v of CPU per request for DEMO_CPU_BURN_US=%d (%.0f iterations/µs)", got, micros, calibrate())
	if want := micros * time.Microsecond; got < want*6/10 || got > want*15/10 {
		t.Errorf("burned %v per request, want about %v", got, want)
	}
	if (cpuBurner{}).iters != 0 || newCPUBurner(0).iters != 0 {
		t.Error("no burn configured should burn nothing")
	}
}

// TestResponseVariant: DEMO_RESPONSE_VARIANT=1 changes GET /items only, by one field.
func TestResponseVariant(t *testing.T) {
	bodies := map[int]string{}
	for _, variant := range []int{0, 1} {
		ts := httptest.NewServer(newServer(openTestSQLite(t, true), serverOptions{Variant: variant}))
		t.Cleanup(ts.Close)
		c := &apiClient{t: t, base: ts.URL, http: ts.Client()}
		code, body := c.do("GET", "/items?bucket=1", "", nil)
		if code != 200 {
			t.Fatalf("variant %d: GET /items = %d %s", variant, code, body)
		}
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("variant %d: GET /items is not JSON: %v: %s", variant, err, body)
		}
		bodies[variant] = string(body)
		code, body = c.do("GET", "/health", "", nil)
		if code != 200 || string(body) != `{"status":"ok"}` {
			t.Errorf("variant %d: /health = %d %s", variant, code, body)
		}
	}
	if bodies[0] != `{"items":[]}` || bodies[1] != `{"items":[],"cursor":null}` {
		t.Errorf("GET /items: variant 0 %s, variant 1 %s", bodies[0], bodies[1])
	}
}
