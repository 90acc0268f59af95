package activities_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"testing"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
)

// loggingProvisioner is a provisioner whose environments printed something.
type loggingProvisioner struct {
	activitiestest.Provisioner
	outs []activities.Output
}

func (p *loggingProvisioner) Logs(context.Context, activities.Environment, int) ([]activities.Output, error) {
	return p.outs, nil
}

// Teardown keeps what the target printed with the run, secrets masked,
// before the environment goes.
func TestTeardownKeepsLogs(t *testing.T) {
	t.Setenv("LONGHAUL_TEST_API_TOKEN", "s3cr3t-token")
	st := &activitiestest.Store{}
	scenario := "name: s\nops:\n  - {name: get, weight: 1, request: {path: /, headers: {Authorization: \"${env:LONGHAUL_TEST_API_TOKEN}\"}}}\n"
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "s", Scenario: scenario})
	prov := &loggingProvisioner{outs: []activities.Output{
		{Source: "target", Text: []byte("listening\nauth with s3cr3t-token failed\n"), Truncated: true},
		{Source: "database", Text: nil}, // printed nothing: nothing kept
	}}
	a := &activities.Activities{Store: st, Provisioner: prov}
	env := newEnv(a)
	if _, err := env.ExecuteActivity(a.Teardown, activities.Environment{ID: "r1-1", RunID: "r1", Incarnation: 1}); err != nil {
		t.Fatal(err)
	}
	ls, err := st.Logs(context.Background(), "r1", true)
	if err != nil || len(ls) != 1 {
		t.Fatalf("logs %+v, %v; want the target's", ls, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(ls[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(zr)
	if string(text) != "listening\nauth with *** failed\n" || !ls[0].Truncated || ls[0].Incarnation != 1 || ls[0].Source != "target" {
		t.Errorf("kept %q (%+v), want the output with the secret masked", text, ls[0])
	}
}
