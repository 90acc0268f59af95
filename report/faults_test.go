package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/store"
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

// A crash finding prints its evidence and the target's last lines (50:
// what a person needs to see why it died).
func TestCrashFindingText(t *testing.T) {
	var lines []string
	for i := range 60 {
		lines = append(lines, fmt.Sprintf("out %d", i))
	}
	f := analysis.Finding{Kind: analysis.KindCrash, Severity: analysis.Critical, Incarnation: 1,
		Summary:  "the target was killed 0:00:35 into the run (window 3), after 11,958 requests served (signal 9: killed)",
		Evidence: analysis.Evidence{FirstWindow: 3, LastWindow: 3, Output: lines}}
	var out bytes.Buffer
	WriteFindings(&out, []analysis.Finding{f})
	got := out.String()
	for _, want := range []string{"critical crash: the target was killed", "its last 50 lines (of 60 kept):", "        | out 10\n", "        | out 59\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("findings text lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| out 9\n") {
		t.Errorf("findings text prints more than the last 50 lines:\n%s", got)
	}
}

// The stored run's report shows, under a crash finding, what the target
// printed during the crash's window when its output was kept: the last 50
// lines, how many were left out and the command that prints them all. A
// crash whose window's lines are not known (found when a drive resumed:
// no window was marked) shows the crash's own last lines. A very long line
// is cut, saying by how much.
func TestCrashWindowLinesGolden(t *testing.T) {
	ctx := context.Background()
	st := &activitiestest.Store{}
	run := store.Run{ID: "run-1", Name: "shop", Kind: "soak", Status: store.Failed, Reason: "target stopped answering: the target process 19419 exited (signal 9: killed)",
		TargetURL: "http://127.0.0.1:8080", CreatedAt: t0.Add(-time.Second), StartedAt: t0, EndedAt: t0.Add(50 * time.Second), Incarnations: 2}
	if err := st.PutRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	ws := fixedWindows(t)[:2]
	killed := window.Window{RunID: "run-1", Index: 2, Start: t0.Add(20 * time.Second), End: t0.Add(30 * time.Second),
		Requests: 140, OK: 100, Errors: window.Errors{Refused: 40}, ConnectFailures: 40, VUs: 4, Histogram: hist(t, 100, 900)}
	restart := window.Window{RunID: "run-1", Incarnation: 2, Index: 3, Start: t0.Add(30 * time.Second), End: t0.Add(32 * time.Second), Gap: true}
	lost := window.Window{RunID: "run-1", Incarnation: 2, Index: 4, Start: t0.Add(32 * time.Second), End: t0.Add(50 * time.Second), Gap: true}
	for _, w := range append(ws, killed, restart, lost) {
		if w.Incarnation == 0 {
			w.Incarnation = 1
		}
		if err := st.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// The target printed 3 lines in each of windows 0 and 1, and 72 in
	// window 2, the last ones a panic.
	var text strings.Builder
	var marks []store.LogWindow
	for i, n := range []int{3, 3, 72} {
		from := text.Len()
		for k := range n {
			switch {
			case i == 2 && k == n-3:
				fmt.Fprintf(&text, "2026-12-04T01:13:29.600 POST /items 500 body=%s\n", strings.Repeat("x", 400))
			case i == 2 && k == n-2:
				text.WriteString("panic: assignment to entry in nil map\n")
			case i == 2 && k == n-1:
				text.WriteString("goroutine 41 [running]:\n")
			default:
				fmt.Fprintf(&text, "2026-12-04T01:13:%06.3f GET /items/%d 200\n", float64(i*10)+float64(k*10)/float64(n), i*100+k)
			}
		}
		marks = append(marks, store.LogWindow{Index: i, From: from, To: text.Len()})
	}
	if err := st.PutLog(ctx, store.TargetLog{RunID: "run-1", Incarnation: 1, Source: "target", Bytes: int64(text.Len()), Windows: marks, Data: gz(t, text.String())}); err != nil {
		t.Fatal(err)
	}
	fs := []analysis.Finding{
		{Kind: analysis.KindCrash, Severity: analysis.Critical, Incarnation: 1,
			Summary: "the target was killed 0:00:27 into the run (window 2), after 270 requests served (signal 9: killed); restarted (incarnation 2), down for 5.0 s",
			Evidence: analysis.Evidence{FirstWindow: 2, LastWindow: 2, Notes: map[string]float64{"requests_served": 270, "signal": 9},
				Output: []string{"panic: assignment to entry in nil map", "goroutine 41 [running]:"}}},
		{Kind: analysis.KindCrash, Severity: analysis.Critical, Incarnation: 2,
			Summary: "the target stopped by 0:00:50 into the run (window 4, lost with its worker: found stopped when the drive resumed), after 0 requests served (exit status unknown)",
			Evidence: analysis.Evidence{FirstWindow: 4, LastWindow: 4, Notes: map[string]float64{"requests_served": 0},
				Output: []string{"listening on 127.0.0.1:8080", "open /data/shop.db: too many open files"}}},
	}
	if err := st.PutFindings(ctx, "run-1", fs); err != nil {
		t.Fatal(err)
	}
	rep, err := LoadRun(ctx, st, run)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteRunText(&out, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run-crash.txt.golden", out.Bytes())
	got := out.String()
	for _, want := range []string{
		"what it printed during window 2 (72 lines):\n        [… 22 earlier lines left out; longhaul logs run-1 --window 2 prints them all]\n",
		"        | panic: assignment to entry in nil map\n        | goroutine 41 [running]:\n",
		"its last 2 lines (of 2 kept):\n        | listening on 127.0.0.1:8080\n",
		"body=xxx", "x[… 145 more bytes]\n        | panic:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
