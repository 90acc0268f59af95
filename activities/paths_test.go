package activities_test

import (
	"context"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
)

// specRecorder is a Provisioner that keeps the spec of the last request.
type specRecorder struct {
	activitiestest.Provisioner
	spec scenarios.Environment
}

func (p *specRecorder) Provision(ctx context.Context, req activities.ProvisionRequest) (activities.Environment, error) {
	p.spec = req.Spec
	return p.Provisioner.Provision(ctx, req)
}

const localRelative = `name: rel
environment:
  provider: local
  target:
    dir: ../app
    build: {command: "go build -o api .", dir: ../app/cmd}
    command: [./api]
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`

// TestProvisionResolvesPathsAgainstScenarioDir: the worker resolves the
// environment's relative paths against the directory recorded with the run,
// whatever its own working directory is.
func TestProvisionResolvesPathsAgainstScenarioDir(t *testing.T) {
	tests := []struct {
		name                  string
		scenarioDir           string
		wantDir, wantBuildDir string
		wantCommand           string
	}{
		{"recorded directory", "/srv/soaks/scenarios", "/srv/soaks/app", "/srv/soaks/app/cmd", "./api"},
		{"none recorded (older runs)", "", "../app", "../app/cmd", "./api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &activitiestest.Store{}
			_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "rel", Scenario: localRelative, ScenarioDir: tt.scenarioDir})
			prov := &specRecorder{}
			a := &activities.Activities{Store: st, Provisioner: prov}
			env := newEnv(a)
			if _, err := env.ExecuteActivity(a.Provision, activities.ProvisionInput{RunID: "r1", Incarnation: 1}); err != nil {
				t.Fatal(err)
			}
			got := prov.spec.Target
			if got.Dir != tt.wantDir || got.Build == nil || got.Build.Dir != tt.wantBuildDir {
				t.Errorf("target.dir %q, build.dir %v; want %q, %q", got.Dir, got.Build, tt.wantDir, tt.wantBuildDir)
			}
			// argv is the target's business: a relative program runs in target.dir.
			if len(got.Command) != 1 || got.Command[0] != tt.wantCommand {
				t.Errorf("target.command %q, want [%q]", got.Command, tt.wantCommand)
			}
		})
	}
}
