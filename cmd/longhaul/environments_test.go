package main

import (
	"context"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
)

func TestWithoutPasswords(t *testing.T) {
	tests := []struct{ dsn, want string }{
		{"postgres://longhaul:s3cret@127.0.0.1:5433/longhaul?sslmode=disable", "postgres://longhaul@127.0.0.1:5433/longhaul?sslmode=disable"},
		{"postgres://app@db:5432/shop", "postgres://app@db:5432/shop"},
		{"", ""},
		{"host=db password=s3cret", ""}, // not a URL: dropped rather than kept
	}
	for _, tt := range tests {
		env := provision.Environment{ID: "r-1", Database: &provision.DatabaseEndpoint{Kind: "postgres", URL: tt.dsn, TargetURL: tt.dsn}}
		got := withoutPasswords(env)
		if got.Database.URL != tt.want || got.Database.TargetURL != tt.want {
			t.Errorf("withoutPasswords(%q) = %q, %q; want %q", tt.dsn, got.Database.URL, got.Database.TargetURL, tt.want)
		}
		if env.Database.URL != tt.dsn {
			t.Errorf("withoutPasswords changed its argument: %q", env.Database.URL)
		}
	}
	ae, err := toActivityEnv(provision.Environment{ID: "r-1", Database: &provision.DatabaseEndpoint{URL: tests[0].dsn}})
	if err != nil {
		t.Fatal(err)
	}
	if ae.DatabaseURL != tests[0].dsn {
		t.Errorf("DatabaseURL (for the probes) = %q, want the full DSN", ae.DatabaseURL)
	}
	if strings.Contains(string(ae.Raw), "s3cret") {
		t.Errorf("the recorded environment holds the password: %s", ae.Raw)
	}
}

// TestLivenessWithoutTemporal: which runs a sweep keeps when only the store
// is asked. (With Temporal, closed workflows: see the environments e2e tests.)
func TestLivenessWithoutTemporal(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	for id, s := range map[string]store.Status{"pending": store.Pending, "running": store.Running, "done": store.Completed, "failed": store.Failed} {
		_ = st.PutRun(ctx, store.Run{ID: id, Status: s})
	}
	tests := []struct {
		name string
		l    liveness
		want map[string]bool // run → running
	}{
		{"worker start", liveness{st: st, log: discard},
			map[string]bool{"pending": true, "running": true, "done": false, "failed": false, "unknown": true}},
		{"longhaul sweep", liveness{st: st, unknownIsOver: true, log: discard},
			map[string]bool{"pending": true, "running": true, "done": false, "failed": false, "unknown": false}},
		{"longhaul sweep --run done", liveness{st: st, unknownIsOver: true, only: map[string]bool{"done": true}, log: discard},
			map[string]bool{"running": true, "done": false, "failed": true, "unknown": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := tt.l.running(ctx)
			for run, want := range tt.want {
				if got := running(run); got != want {
					t.Errorf("running(%s) = %v, want %v", run, got, want)
				}
			}
		})
	}
}
