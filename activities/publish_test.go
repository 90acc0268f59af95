package activities_test

import (
	"context"
	"slices"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
)

// recordingProvisioner keeps the last request it was given.
type recordingProvisioner struct{ got activities.ProvisionRequest }

func (p *recordingProvisioner) Provision(_ context.Context, req activities.ProvisionRequest) (activities.Environment, error) {
	p.got = req
	return activities.Environment{ID: req.RunID + "-1", TargetURL: "http://127.0.0.1:8080", ContainerID: "c0ffee", Ports: map[int]int{9229: 32801}}, nil
}
func (p *recordingProvisioner) Teardown(context.Context, activities.Environment) error { return nil }
func (p *recordingProvisioner) Check(context.Context, activities.Environment) error    { return nil }

// TestProvisionPublishesInspector: a scenario that reads the heap through a
// Node.js inspector asks the provider to publish the inspector's port; one
// that does not asks for nothing.
func TestProvisionPublishesInspector(t *testing.T) {
	tests := []struct {
		name, probes string
		want         []int
	}{
		{"inspector", "probes:\n  heap:\n    inspector: {port: 9230}\n", []int{9230}},
		{"inspector, default port", "probes:\n  heap:\n    inspector: {}\n", []int{9229}},
		{"heap metric", "probes:\n  heap:\n    metric: {}\n", nil},
		{"no probes", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &activitiestest.Store{}
			_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello + tt.probes})
			prov := &recordingProvisioner{}
			a := &activities.Activities{Store: st, Provisioner: prov}
			env := newEnv(a)
			got := execute[activities.Environment](t, env, a.Provision, activities.ProvisionInput{RunID: "r1", Incarnation: 1})
			if !slices.Equal(prov.got.Publish, tt.want) {
				t.Errorf("publish %v, want %v", prov.got.Publish, tt.want)
			}
			if got.Ports[9229] != 32801 {
				t.Errorf("environment ports %v: the published port did not travel", got.Ports)
			}
		})
	}
}
