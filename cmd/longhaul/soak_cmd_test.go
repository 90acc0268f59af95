package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// TestRunBadInput: every mistake is one line (or file:line lines) on stderr
// and exit code 2, before anything is started or stored.
func TestRunBadInput(t *testing.T) {
	unreachable := writeScenario(t, `name: gone
environment:
  target: {url: "http://127.0.0.1:1"}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`)
	broken := writeScenario(t, "name: broken\nops:\n  - name: get\n    weight: 0\n    request: {method: GET, path: items}\n")
	ok := writeScenario(t, helloScenario)
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"missing file", []string{"run", filepath.Join(t.TempDir(), "nope.yaml")}, "nope.yaml"},
		{"invalid scenario", []string{"run", broken}, broken + ":"},
		{"no file", []string{"run"}, "run takes one scenario file: longhaul run FILE"},
		{"bad format", []string{"run", ok, "--format", "xml"}, "--format"},
		{"bad provider", []string{"run", ok, "--provider", "cloud"}, "--provider"},
		{"bad fail-on", []string{"run", ok, "--fail-on", "info"}, "--fail-on"},
		{"bad target env", []string{"run", ok, "--target-env", "NOEQUALS"}, "--target-env"},
		{"window longer than run", []string{"run", ok, "--duration", "5s", "--window", "10s"}, "--window"},
		{"zero duration", []string{"run", ok, "--duration", "0s"}, "--duration"},
		{"unreachable target", []string{"run", unreachable, "--duration", "2s"}, "is the target running?"},
		{"worker without temporal", []string{"worker"}, "--temporal"},
		{"dev bad port", []string{"dev", "--port", "70000"}, "--port"},
		{"report without id", []string{"report"}, "accepts 1 arg"},
		{"runs bad status", []string{"runs", "--status", "exploded"}, "--status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runLonghaul(t, runOpts{}, append(tt.args, "--data", t.TempDir())...)
			if r.code != exitBadInput {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitBadInput, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr does not mention %q:\n%s", tt.stderr, r.stderr)
			}
		})
	}
}

// TestRunsAndReport lists and prints a stored run in both formats.
func TestRunsAndReport(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "results.db")
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := store.Run{ID: "run-1", Name: "hello", Kind: "soak", Status: store.Completed, Scenario: helloScenario,
		Incarnations: 1, CreatedAt: t0, StartedAt: t0, EndedAt: t0.Add(3 * time.Second)}
	if err := st.PutRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	h := window.NewHistogram()
	window.Record(h, 1500)
	hb, _ := window.EncodeHistogram(h)
	for i := 0; i < 3; i++ {
		w := window.Window{RunID: "run-1", Incarnation: 1, Index: i, Start: t0.Add(time.Duration(i) * time.Second),
			End: t0.Add(time.Duration(i+1) * time.Second), Requests: 1, OK: 1, RPS: 1, Histogram: hb}
		if i == 1 {
			w = window.Window{RunID: "run-1", Incarnation: 1, Index: 1, Start: w.Start, End: w.End, Gap: true}
		}
		if err := st.PutWindow(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutFindings(ctx, "run-1", []analysis.Finding{{Kind: analysis.KindLeak, Severity: analysis.Warning, Summary: "heap grows"}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	r := runLonghaul(t, runOpts{}, "runs", "--store", dsn)
	if r.code != exitOK || !strings.Contains(r.stdout, "run-1") || !strings.Contains(r.stdout, "completed") {
		t.Errorf("runs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runLonghaul(t, runOpts{}, "runs", "--store", dsn, "--format", "json")
	var row map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &row); err != nil || row["id"] != "run-1" {
		t.Errorf("runs --format json: %v\n%s", err, r.stdout)
	}
	r = runLonghaul(t, runOpts{}, "report", "run-1", "--store", dsn)
	for _, want := range []string{"run-1", "completed", "heap grows"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report text lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runLonghaul(t, runOpts{}, "report", "run-1", "--store", dsn, "--format", "json")
	if r.code != exitOK || !strings.Contains(r.stdout, `"gap":true`) || !strings.Contains(r.stdout, `"type":"finding"`) {
		t.Errorf("report json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runLonghaul(t, runOpts{}, "report", "no-such-run", "--store", dsn)
	if r.code != exitBadInput || !strings.Contains(r.stderr, "no run or comparison no-such-run") {
		t.Errorf("report of a missing run: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestReportObject(t *testing.T) {
	var b strings.Builder
	run := store.Run{ID: "r", Status: store.Failed, Reason: "target stopped answering: refused"}
	g, _ := report.JudgeRun(run, nil, nil)
	if err := follow.WriteReportObject(&b, run, window.Summary{Windows: 3, Gaps: 1}, nil, nil, follow.Verdict{Run: run, Gate: g}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"type": "report", "run_id": "r", "status": "failed", "windows": 3.0, "gaps": 1.0, "gate": "failed"} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if fs, ok := got["findings"].([]any); !ok || len(fs) != 0 {
		t.Errorf("findings = %v, want []", got["findings"])
	}
	if ts, ok := got["thresholds"].([]any); !ok || len(ts) != 0 {
		t.Errorf("thresholds = %v, want []", got["thresholds"])
	}
	sum, _ := got["summary"].(map[string]any)
	if _, has := sum["type"]; has || sum["windows"] != 3.0 {
		t.Errorf("summary = %v: want the summary's fields without its type", sum)
	}
}
