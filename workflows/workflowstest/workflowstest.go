// Package workflowstest saves the workflow histories that the workflows
// package's replay test replays (workflows/testdata): the generators that
// record them run a real server and worker in the tests of cmd/longhaul and
// schedule, with -update-histories.
package workflowstest

import (
	"context"
	"os"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
)

// SaveHistory writes every event of workflow id, as c's server holds it,
// to path as indented JSON (the form a replayer reads back: ReplayWorkflowHistoryFromJSONFile).
func SaveHistory(t testing.TB, c client.Client, id, path string) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d events", path, len(h.Events))
}
