package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
	tw, jw := NewText(&text, TextOptions{}), NewJSON(&js)
	var tot Totals
	for _, w := range ws {
		if err := tw.Window(w); err != nil {
			t.Fatal(err)
		}
		if err := jw.Window(w); err != nil {
			t.Fatal(err)
		}
		if err := tot.Add(w); err != nil {
			t.Fatal(err)
		}
	}
	sum := tot.Summary()
	if err := tw.Summary(sum); err != nil {
		t.Fatal(err)
	}
	if err := jw.Summary(sum); err != nil {
		t.Fatal(err)
	}
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
