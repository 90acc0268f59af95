package report

import (
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
