package workflows

import (
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestReplay replays histories recorded by the real embedded server (see
// TestGenerateSoakHistories in cmd/longhaul): a change to SoakWorkflow that
// is not guarded by workflow.GetVersion breaks soaks in flight, and fails here.
// Likewise for CompareWorkflow (TestGenerateCompareHistories; the -v0 files
// are from before the compare-heartbeat change), and ScheduledSoakWorkflow
// (scheduled-*.json, from package schedule's tests with -update-histories:
// scheduled-notify.json is from before the skipped-firing records;
// scheduled-compare-notify.json is a compare schedule's failed comparison,
// notified).
func TestReplay(t *testing.T) {
	for _, file := range []string{"testdata/soak-clean.json", "testdata/soak-cancelled.json", "testdata/soak-threshold-abort.json", "testdata/soak-provision-heartbeat.json", "testdata/soak-slots.json",
		"testdata/compare-clean.json", "testdata/compare-rerun.json", "testdata/scheduled-notify.json", "testdata/scheduled-skips.json", "testdata/scheduled-compare-notify.json",
		"testdata/compare-clean-v0.json", "testdata/compare-rerun-v0.json"} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			RegisterWorkflows(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
				t.Errorf("replay %s: %v", file, err)
			}
		})
	}
}
