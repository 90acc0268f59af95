package soakworker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
)

func TestHostQueue(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"default: the hostname's, chosen by the worker", Config{}, ""},
		{"host id", Config{HostID: "h1"}, activities.HostQueueName("h1")},
		{"queue name overrides the host id", Config{HostID: "h1", HostQueue: "longhaul-host-kill"}, "longhaul-host-kill"},
		{"queue name alone", Config{HostQueue: "q"}, "q"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hostQueue(tt.cfg); got != tt.want {
				t.Errorf("hostQueue(%+v) = %q, want %q", tt.cfg, got, tt.want)
			}
		})
	}
}

// TestNewBadRoute: a route the provisioner does not know fails New before
// it sweeps or touches Temporal (the client here is nil).
func TestNewBadRoute(t *testing.T) {
	_, err := New(context.Background(), nil, &activitiestest.Store{}, t.TempDir(), Config{Route: "tunnel"})
	if !errors.Is(err, provision.ErrInvalidSpec) || !strings.HasPrefix(err.Error(), "provisioner: ") || !strings.Contains(err.Error(), `"tunnel"`) {
		t.Errorf("New with route tunnel: %v, want a provisioner error naming the route", err)
	}
}

// TestRefBuilderLeavesDocker: only the local provider builds a ref here;
// for docker, Provision builds the image at the ref itself.
func TestRefBuilderLeavesDocker(t *testing.T) {
	b := refBuilder{provision.Options{DataDir: t.TempDir(), Logger: discard}}
	in := store.Build{Ref: "v1.2.0"}
	for _, req := range []activities.BuildRequest{
		{Provider: "docker", Build: in},
		{Spec: scenarios.Environment{Provider: "docker"}, Build: in},
		{Provider: "url", Spec: scenarios.Environment{Provider: "local"}, Build: in},
	} {
		got, err := b.Build(context.Background(), req)
		if err != nil || got.Ref != in.Ref || got.Commit != "" || got.Artifact != "" {
			t.Errorf("Build(provider %q, spec %q) = %+v, %v; want the build unchanged", req.Provider, req.Spec.Provider, got, err)
		}
	}
}
