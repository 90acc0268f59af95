package analysis_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestRateMissedRealDriver drives an httptest target with the real driver in
// the open model: at a rate it cannot keep (max_vus too low for its latency,
// or its latency rising mid-run) the run gets rate_missed with that cause; at
// a rate it keeps it does not.
func TestRateMissedRealDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a target for 3 s")
	}
	tests := []struct {
		name string
		// latency of the target before and after slowAfter.
		fast, slow time.Duration
		slowAfter  time.Duration
		rate       int
		maxVUs     int
		want       analysis.Severity // "" for no finding
		cause      string
	}{
		// 200/s at 40 ms needs 8 VUs in flight; 4 serve 100/s: half dropped.
		{name: "max_vus", fast: 40 * time.Millisecond, rate: 200, maxVUs: 4, want: analysis.Critical, cause: analysis.CauseMaxVUs},
		// 100/s at 2 ms needs 0.2 VUs; at 60 ms it needs 6 of 4.
		{name: "target slows", fast: 2 * time.Millisecond, slow: 60 * time.Millisecond, slowAfter: 1500 * time.Millisecond, rate: 100, maxVUs: 4, want: analysis.Critical, cause: analysis.CauseTargetLatency},
		// 50/s at 1 ms with 20 VUs: nothing dropped.
		{name: "kept", fast: time.Millisecond, rate: 50, maxVUs: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var start atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				d := tt.fast
				if tt.slowAfter > 0 && time.Duration(time.Now().UnixNano()-start.Load()) > tt.slowAfter {
					d = tt.slow
				}
				time.Sleep(d)
				fmt.Fprint(w, `{}`)
			}))
			defer srv.Close()
			s, err := scenarios.Parse([]byte(fmt.Sprintf(`
name: open
load: {rate: %d, max_vus: %d, duration: 3s, window: 500ms, timeout: 2s}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`, tt.rate, tt.maxVUs)), "open.yaml")
			if err != nil {
				t.Fatal(err)
			}
			plan, err := scenarios.Compile(s, scenarios.CompileOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			target, _ := url.Parse(srv.URL)
			var ws []window.Window
			start.Store(time.Now().UnixNano())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := driver.Run(ctx, driver.Options{Target: target, Plan: plan, Load: s.Load}, func(w window.Window) error {
				ws = append(ws, w)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var got *analysis.Finding
			for _, f := range analysis.Analyze(ws, analysis.Options{}).Findings {
				if f.Kind == analysis.KindRateMissed {
					got = &f
				}
			}
			var dropped int64
			for _, w := range ws {
				dropped += w.Dropped
			}
			if tt.want == "" {
				if got != nil {
					t.Fatalf("rate kept (%d dropped), got %s: %s", dropped, got.Severity, got.Summary)
				}
				return
			}
			if got == nil {
				t.Fatalf("no rate_missed finding (%d dropped in %d windows)", dropped, len(ws))
			}
			if got.Severity != tt.want || got.Evidence.Cause != tt.cause {
				t.Errorf("got %s/%s, want %s/%s: %s", got.Severity, got.Evidence.Cause, tt.want, tt.cause, got.Summary)
			}
			if !strings.Contains(got.Summary, "windows ") || got.Evidence.Notes["dropped"] <= 0 {
				t.Errorf("summary or evidence lacks the windows and counts: %s %v", got.Summary, got.Evidence.Notes)
			}
			t.Log(got.Summary)
		})
	}
}

// TestRateMissedThresholds: the thresholds are configurable and a partial
// last window is left out.
func TestRateMissedThresholds(t *testing.T) {
	mk := func(idx int, requests, dropped int64, partial bool) window.Window {
		s := time.Unix(0, 0).Add(time.Duration(idx) * time.Second)
		return window.Window{Index: idx, Start: s, End: s.Add(time.Second), Requests: requests, OK: requests,
			Dropped: dropped, MaxVUs: 10, InFlight: 10, LatencyMs: window.Latency{P50: 100}, Partial: partial}
	}
	// 2 % dropped over the analysed windows (window 0 is warm-up); the
	// partial window 5 alone would make it 50 %.
	ws := []window.Window{mk(0, 100, 0, false), mk(1, 98, 2, false), mk(2, 98, 2, false), mk(3, 98, 2, false), mk(4, 98, 2, false), mk(5, 50, 50, true)}
	tests := []struct {
		name string
		opts analysis.Options
		want analysis.Severity
	}{
		{"defaults", analysis.Options{}, analysis.Warning},
		{"critical at 2 %", analysis.Options{RateMissed: analysis.RateMissedOptions{Critical: 0.02}}, analysis.Critical},
		{"warning at 5 %", analysis.Options{RateMissed: analysis.RateMissedOptions{Warning: 0.05}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got analysis.Severity
			for _, f := range analysis.Analyze(ws, tt.opts).Findings {
				if f.Kind == analysis.KindRateMissed {
					got = f.Severity
					if f.Evidence.LastWindow != 4 {
						t.Errorf("last window %d, want 4 (the partial one left out)", f.Evidence.LastWindow)
					}
				}
			}
			if got != tt.want {
				t.Errorf("severity %q, want %q", got, tt.want)
			}
		})
	}
}
