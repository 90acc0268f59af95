package soakworker

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/provision"
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

// TestEnvironmentRoundTrip: what the activities carry about an environment
// gives the provisioner back exactly what it described.
func TestEnvironmentRoundTrip(t *testing.T) {
	in := provision.Environment{
		ID: "r-1", RunID: "r", Incarnation: 1, Provider: "local", Host: "h",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), TargetURL: "http://127.0.0.1:9000",
		Target:   provision.Process{PID: 42, DataDir: "/tmp/x"},
		Database: &provision.DatabaseEndpoint{Kind: "postgres", URL: "postgres://127.0.0.1:5433/db", Process: provision.Process{PID: 43}},
	}
	env, err := toActivityEnv(in)
	if err != nil {
		t.Fatal(err)
	}
	if env.ID != in.ID || env.PID != 42 || env.DatabaseURL != in.Database.URL || env.TargetURL != in.TargetURL {
		t.Errorf("activity environment = %+v", env)
	}
	out, err := fromActivityEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	if _, err := fromActivityEnv(activities.Environment{ID: "x"}); err == nil {
		t.Error("an environment without its description decoded")
	}
}

// fakeProvisioner records what the adapter hands the provisioner.
type fakeProvisioner struct {
	env      provision.Environment
	err      error
	req      provision.Request
	tornDown provision.Environment
	checked  provision.Environment
}

func (f *fakeProvisioner) Provision(_ context.Context, req provision.Request) (provision.Environment, error) {
	f.req = req
	return f.env, f.err
}

func (f *fakeProvisioner) Teardown(_ context.Context, env provision.Environment) error {
	f.tornDown = env
	return nil
}

func (f *fakeProvisioner) Check(_ context.Context, env provision.Environment) error {
	f.checked = env
	return nil
}

// TestProvisionAdapter: a partial environment comes back with the
// provisioner's error (so the workflow can tear it down), and Teardown and
// Check give the provisioner the environment it described.
func TestProvisionAdapter(t *testing.T) {
	ctx := context.Background()
	env := provision.Environment{ID: "r-1", RunID: "r", Incarnation: 2, Provider: "local", Target: provision.Process{PID: 7}}
	boom := errors.New("boom")
	fp := &fakeProvisioner{env: env, err: boom}
	pa := provisionAdapter{fp}
	got, err := pa.Provision(ctx, activities.ProvisionRequest{RunID: "r", Incarnation: 2, Provider: "local"})
	if !errors.Is(err, boom) {
		t.Fatalf("Provision error = %v, want %v", err, boom)
	}
	if fp.req.RunID != "r" || fp.req.Incarnation != 2 || fp.req.Provider != "local" {
		t.Errorf("provisioner request = %+v", fp.req)
	}
	if got.ID != "r-1" || got.PID != 7 || len(got.Raw) == 0 {
		t.Errorf("partial environment = %+v, want r-1 with its description", got)
	}
	if err := pa.Teardown(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := pa.Check(ctx, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fp.tornDown, env) || !reflect.DeepEqual(fp.checked, env) {
		t.Errorf("teardown got %+v, check got %+v; want %+v", fp.tornDown, fp.checked, env)
	}
	if err := pa.Teardown(ctx, activities.Environment{ID: "x"}); err == nil {
		t.Error("Teardown of an environment without its description succeeded")
	}
}
