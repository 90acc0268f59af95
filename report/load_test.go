package report

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// runSource serves one run's stored parts; failing names the read that fails.
type runSource struct {
	rep     RunReport
	failing string
}

func (s runSource) fail(what string) error {
	if s.failing == what {
		return errors.New("database is locked")
	}
	return nil
}

func (s runSource) Windows(context.Context, string, store.WindowQuery) ([]window.Window, error) {
	return s.rep.Windows, s.fail("windows")
}

func (s runSource) Findings(context.Context, string) ([]analysis.Finding, error) {
	return s.rep.Findings, s.fail("findings")
}

func (s runSource) Thresholds(context.Context, string) ([]thresholds.Result, error) {
	return s.rep.Thresholds, s.fail("thresholds")
}

func (s runSource) Notifications(context.Context, string) ([]store.Notification, error) {
	return s.rep.Notifications, s.fail("notifications")
}

// LoadRun assembles the report `longhaul report` prints: the same as
// NewRunReport, SetThresholds and the notifications by hand.
func TestLoadRun(t *testing.T) {
	ctx := context.Background()
	want := gatedReport(t)
	want.Notifications = fixedNotifications()
	got, err := LoadRun(ctx, runSource{rep: want}, want.Run)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadRun = %+v\nwant %+v", got, want)
	}

	// The gate is judged with the run's FailOn as given.
	run := want.Run
	run.FailOn = "critical"
	got, err = LoadRun(ctx, runSource{rep: want}, run)
	if err != nil || got.Gate == nil || got.Gate.FailOn != "critical" {
		t.Errorf("with --fail-on critical: gate %+v, %v", got.Gate, err)
	}

	for _, what := range []string{"windows", "findings", "thresholds", "notifications"} {
		_, err := LoadRun(ctx, runSource{rep: want, failing: what}, want.Run)
		if err == nil || err.Error() != "read "+what+" of run run-1: database is locked" {
			t.Errorf("%s failing: %v", what, err)
		}
	}
}

// storedSource is a store with one run (runSource's) and no comparisons.
type storedSource struct{ runSource }

func (s storedSource) GetRun(_ context.Context, id string) (store.Run, error) {
	if id != s.rep.Run.ID {
		return store.Run{}, store.ErrNotFound
	}
	return s.rep.Run, nil
}

func (storedSource) GetComparison(context.Context, string) (store.Comparison, error) {
	return store.Comparison{}, store.ErrNotFound
}

func (storedSource) ComparisonNotifications(context.Context, string) ([]store.Notification, error) {
	return nil, nil
}

// WriteStored prints what LoadRun reads, judged with the given --fail-on;
// an id of neither kind is ErrNotStored.
func TestWriteStored(t *testing.T) {
	ctx := context.Background()
	rep := gatedReport(t)
	rep.Notifications = fixedNotifications()
	st := storedSource{runSource{rep: rep}}
	for _, failOn := range []*analysis.Severity{nil, ptr(analysis.Critical)} {
		run := rep.Run
		if failOn != nil {
			run.FailOn = string(*failOn)
		}
		want, err := LoadRun(ctx, st, run)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantText bytes.Buffer
		if err := WriteStored(ctx, &got, st, run.ID, Text, failOn); err != nil {
			t.Fatal(err)
		}
		if err := WriteRunText(&wantText, want); err != nil {
			t.Fatal(err)
		}
		if got.String() != wantText.String() {
			t.Errorf("fail-on %v: WriteStored wrote\n%s\nwant\n%s", failOn, got.String(), wantText.String())
		}
	}
	if err := WriteStored(ctx, &bytes.Buffer{}, st, "nope", JSON, nil); !errors.Is(err, ErrNotStored) {
		t.Errorf("WriteStored(nope): %v, want ErrNotStored", err)
	}
}
