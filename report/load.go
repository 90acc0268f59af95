package report

import (
	"context"
	"fmt"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// RunSource is what LoadRun reads of a store (store.Store has it).
type RunSource interface {
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
	Findings(ctx context.Context, runID string) ([]analysis.Finding, error)
	Thresholds(ctx context.Context, runID string) ([]thresholds.Result, error)
	Notifications(ctx context.Context, runID string) ([]store.Notification, error)
}

// LoadRun reads the stored run r's windows, findings, judged thresholds and
// notifications into its report, and, for a crash finding, what the target
// printed during its window when st keeps the run's output (store.Logs). The gate is judged with r.FailOn: set it
// before to judge the run with another severity than it ran with.
func LoadRun(ctx context.Context, st RunSource, r store.Run) (RunReport, error) {
	ws, err := st.Windows(ctx, r.ID, store.AllWindows)
	if err != nil {
		return RunReport{}, fmt.Errorf("read windows of run %s: %w", r.ID, err)
	}
	fs, err := st.Findings(ctx, r.ID)
	if err != nil {
		return RunReport{}, fmt.Errorf("read findings of run %s: %w", r.ID, err)
	}
	rs, err := st.Thresholds(ctx, r.ID)
	if err != nil {
		return RunReport{}, fmt.Errorf("read thresholds of run %s: %w", r.ID, err)
	}
	rep, err := NewRunReport(r, ws, fs)
	if err != nil {
		return RunReport{}, err
	}
	rep.SetThresholds(rs)
	if rep.Notifications, err = st.Notifications(ctx, r.ID); err != nil {
		return RunReport{}, fmt.Errorf("read notifications of run %s: %w", r.ID, err)
	}
	if kept, ok := st.(store.Logs); ok && hasCrash(fs) {
		// Output that cannot be read costs the report those lines, not
		// the report: the crash's own last lines are shown instead.
		if ls, err := kept.Logs(ctx, r.ID, true); err == nil {
			rep.SetCrashLines(ls)
		}
	}
	return rep, nil
}

func hasCrash(fs []analysis.Finding) bool {
	for _, f := range fs {
		if f.Kind == analysis.KindCrash {
			return true
		}
	}
	return false
}
