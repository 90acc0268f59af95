package launch

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/internal/storetest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// submitter records what it was asked to start and refuses with err.
type submitter struct {
	workflowID, workflow string
	in                   any
	err                  error
}

func (s *submitter) Submit(_ context.Context, workflowID, workflow string, in any) (follow.Workflow, error) {
	s.workflowID, s.workflow, s.in = workflowID, workflow, in
	return nil, s.err
}

func testLauncher(t *testing.T, sub *submitter) (Launcher, *bytes.Buffer) {
	t.Helper()
	st := storetest.New(t)
	var out bytes.Buffer
	return Launcher{
		Store: st, Where: "test.db", Submitter: sub, Temporal: "127.0.0.1:7233",
		Terminal: follow.Terminal{Stdout: &out, Stderr: &out}, Detach: true, Format: "text",
	}, &out
}

func TestLauncherSoakDetached(t *testing.T) {
	ctx := context.Background()
	p, err := PlanSoak(ctx, soakRequest(scenarioFile(t, "")))
	if err != nil {
		t.Fatal(err)
	}
	sub := &submitter{}
	l, out := testLauncher(t, sub)
	if err := l.Soak(ctx, p, "r1"); err != nil {
		t.Fatal(err)
	}
	in, _ := sub.in.(workflows.SoakInput)
	if sub.workflowID != "longhaul-soak-r1" || sub.workflow != workflows.WorkflowName || in.RunID != "r1" || in.Name != "demo" {
		t.Errorf("submitted %s %s %+v", sub.workflowID, sub.workflow, sub.in)
	}
	run, err := l.Store.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.Pending || run.Name != "demo" || run.WorkflowID != "longhaul-soak-r1" {
		t.Errorf("stored %+v", run)
	}
	if got, want := out.String(), "run r1 submitted (workflow longhaul-soak-r1)\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestLauncherCompareRefused(t *testing.T) {
	ctx := context.Background()
	r := compareRequest(scenarioFile(t, ""))
	r.Changed = changed("seed")
	p, err := PlanCompare(r)
	if err != nil {
		t.Fatal(err)
	}
	sub := &submitter{err: errors.New("namespace not found")}
	l, _ := testLauncher(t, sub)
	err = l.Compare(ctx, p, "c1", false)
	if got, want := errString(err), "submit the comparison to Temporal at 127.0.0.1:7233: namespace not found"; got != want {
		t.Errorf("err %q, want %q", got, want)
	}
	if in, _ := sub.in.(workflows.CompareInput); in.ComparisonID != "c1" || in.Seed != 7 {
		t.Errorf("submitted %+v", sub.in)
	}
	cmp, err := l.Store.GetComparison(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Status != store.Failed || !strings.HasPrefix(cmp.Reason, "not submitted: namespace not found") {
		t.Errorf("stored %s %q, want failed, not submitted", cmp.Status, cmp.Reason)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
