package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/window"
)

// A window whose target died: the refused requests are errors, counted
// apart as connect failures, and are not throughput anywhere.
func TestConnectFailuresShown(t *testing.T) {
	ws := fixedWindows(t)[:2]
	dead := window.Window{
		RunID: "run-1", Index: 2, Start: t0.Add(20 * time.Second), End: t0.Add(30 * time.Second),
		Requests: 40, Errors: window.Errors{Refused: 40}, ConnectFailures: 40, VUs: 4,
		Histogram: hist(t, 0),
	}
	ws = append(ws, dead)
	var text, js bytes.Buffer
	sum := writeLive(t, NewText(&text, TextOptions{}), ws)
	writeLive(t, NewJSON(&js), ws)
	var reached int64
	for _, w := range ws {
		reached += w.Reached()
	}
	if want := float64(reached) / 30; sum.RPS != want {
		t.Errorf("summary rps %.3f, want %.3f (requests that reached the target over 30 s)", sum.RPS, want)
	}
	for _, want := range []string{"refused:40 (40 not connected)", "40 found no connection (not in req/s)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	var last, summary struct {
		RPS             float64 `json:"rps"`
		ConnectFailures int64   `json:"connect_failures"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[3]), &summary); err != nil {
		t.Fatal(err)
	}
	if last.ConnectFailures != 40 || last.RPS != 0 || summary.ConnectFailures != 40 {
		t.Errorf("json: window connect_failures %d rps %v, summary connect_failures %d; want 40, 0, 40",
			last.ConnectFailures, last.RPS, summary.ConnectFailures)
	}
}

// A crash finding prints its evidence and the target's last lines.
func TestCrashFindingText(t *testing.T) {
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("out %d", i))
	}
	f := analysis.Finding{Kind: analysis.KindCrash, Severity: analysis.Critical, Incarnation: 1,
		Summary:  "the target was killed 0:00:35 into the run (window 3), after 11,958 requests served (signal 9: killed)",
		Evidence: analysis.Evidence{FirstWindow: 3, LastWindow: 3, Output: lines}}
	var out bytes.Buffer
	WriteFindings(&out, []analysis.Finding{f})
	got := out.String()
	for _, want := range []string{"critical crash: the target was killed", "its last 10 lines (of 30 kept):", "        | out 20\n", "        | out 29\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("findings text lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| out 19\n") {
		t.Errorf("findings text prints more than the last 10 lines:\n%s", got)
	}
}
