package main

import (
	"net/http/httptest"
	"runtime/metrics"
	"testing"
)

// heapAllocs is the process's cumulative heap allocation in bytes.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestAllocBytes: DEMO_ALLOC_BYTES=N adds N bytes allocated per request,
// measured by the runtime's own counter around the real handler, and
// nothing when unset.
func TestAllocBytes(t *testing.T) {
	const requests = 2000
	perRequest := func(allocBytes int) float64 {
		s := newServer(openTestSQLite(t, true), serverOptions{AllocBytes: allocBytes})
		serve := func() {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
			if rec.Code != 200 {
				t.Fatalf("GET /health = %d", rec.Code)
			}
		}
		serve() // first-use allocations (counters, pools)
		before := heapAllocs()
		for range requests {
			serve()
		}
		return float64(heapAllocs()-before) / requests
	}
	base := perRequest(0)
	for _, n := range []int{1024, 4096, 65536} {
		got := perRequest(n) - base
		t.Logf("DEMO_ALLOC_BYTES=%d: +%.0f bytes allocated per request (base %.0f)", n, got, base)
		// The base itself varies by ~100 bytes per request between servers
		// (pool and map growth), hence the absolute slack.
		if tol := max(0.05*float64(n), 256); got < float64(n)-tol || got > float64(n)+tol {
			t.Errorf("DEMO_ALLOC_BYTES=%d added %.0f bytes per request, want %d ± %.0f", n, got, n, tol)
		}
	}
}

func TestAllocBytesConfig(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
		bad  bool
	}{{"", 0, false}, {"4096", 4096, false}, {"-1", 0, true}, {"x", 0, true}, {"67108865", 0, true}} {
		c, err := configFromEnv(func(k string) string {
			if k == "DEMO_ALLOC_BYTES" {
				return tc.v
			}
			return ""
		})
		if (err != nil) != tc.bad || (!tc.bad && c.AllocBytes != tc.want) {
			t.Errorf("DEMO_ALLOC_BYTES=%q: got %d, %v; want %d, bad %v", tc.v, c.AllocBytes, err, tc.want, tc.bad)
		}
	}
}
