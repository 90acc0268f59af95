package activities_test

import (
	"context"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// profilingProber hands over a CPU profile after every window and a heap
// profile after every other, and one more heap profile at the drive's end.
type profilingProber struct{ closed bool }

func (p *profilingProber) Sample(context.Context, *window.Window) {}
func (p *profilingProber) Close() error                           { p.closed = true; return nil }
func (p *profilingProber) Profiles(w window.Window) []probes.TakenProfile {
	out := []probes.TakenProfile{{Kind: probes.ProfileKindCPU, Index: w.Index, Requests: float64(w.Requests), Data: []byte{byte(w.Index)}}}
	if w.Index%2 == 0 {
		out = append(out, probes.TakenProfile{Kind: probes.ProfileKindHeap, Index: w.Index, Data: []byte{1}})
	}
	return out
}
func (p *profilingProber) FinishProfiles() []probes.TakenProfile {
	if p.closed {
		panic("FinishProfiles after Close")
	}
	return []probes.TakenProfile{{Kind: probes.ProfileKindHeap, Index: 99, Data: []byte{2}}}
}

// TestDriveStoresProfiles: every CPU profile is kept with its window and
// requests; of the heap profiles only the incarnation's first and latest.
func TestDriveStoresProfiles(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: activitiestest.Hello})
	prov := &activitiestest.Provisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	pr := &profilingProber{}
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: &activitiestest.Driver{},
		Probes: func(context.Context, activities.Environment, scenarios.Probes) (activities.Prober, error) {
			return pr, nil
		}}
	env := newEnv(a)
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, Total: 6,
		Overrides: activities.Overrides{Duration: 6e9, Window: 1e9}, Env: envDesc}
	if _, err := env.ExecuteActivity(a.Drive, in); err != nil {
		t.Fatal(err)
	}
	cpu, _ := st.Profiles(context.Background(), "r1", store.ProfileQuery{Kind: store.ProfileCPU})
	if len(cpu) != 6 {
		t.Errorf("%d CPU profiles stored, want 6", len(cpu))
	}
	heap, _ := st.Profiles(context.Background(), "r1", store.ProfileQuery{Kind: store.ProfileHeap})
	var idx []int
	for _, h := range heap {
		idx = append(idx, h.Index)
	}
	if want := []int{0, 99}; !equalInts(idx, want) {
		t.Errorf("heap profiles kept at windows %v, want %v (the first and the latest)", idx, want)
	}
}
