package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/schedule"
)

// Bad schedule command lines are one line on stderr and exit 2, before any
// Temporal server is dialled.
func TestScheduleBadInput(t *testing.T) {
	hello := filepath.Join("..", "..", "scenarios", "hello.yaml")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no cron", []string{"create", "nightly", hello}, "give a --cron expression"},
		{"bad name", []string{"create", "night ly", hello, "--cron", "@daily"}, `name "night ly"`},
		{"bad overlap", []string{"create", "nightly", hello, "--cron", "@daily", "--overlap", "sometimes"}, `overlap "sometimes"`},
		{"bad zone", []string{"create", "nightly", hello, "--cron", "@daily", "--tz", "Mars/Olympus"}, `time zone "Mars/Olympus"`},
		{"bad fail-on", []string{"create", "nightly", hello, "--cron", "@daily", "--fail-on", "meh"}, "fail-on"},
		{"missing file", []string{"create", "nightly", "nope.yaml", "--cron", "@daily"}, "nope.yaml"},
		{"bad env", []string{"update", "nightly", "--target-env", "NOEQUALS"}, `--target-env "NOEQUALS"`},
		{"trigger bad name", []string{"trigger", "a/b"}, `name "a/b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
			code := a.run(context.Background(), append([]string{"schedule"}, tt.args...))
			if code != exitBadInput || !strings.Contains(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line containing %q", code, stderr.String(), exitBadInput, tt.want)
			}
		})
	}
}

// The schedule commands against the embedded server: create, list and
// describe (JSON), pause, unpause, update, delete. (Firing is tested in
// package schedule, with a worker.)
func TestScheduleCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	ctx := context.Background()
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: t.TempDir(), Port: freeport.ForTest(t), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	hello := filepath.Join("..", "..", "scenarios", "hello.yaml")
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		a := &app{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
		code := a.run(ctx, append(append([]string{"schedule"}, args...), "--temporal", srv.Address()))
		return code, stdout.String(), stderr.String()
	}
	describe := func() schedule.ScheduleJSON {
		t.Helper()
		code, out, errs := run("describe", "nightly", "--format", "json")
		var d schedule.ScheduleJSON
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
			t.Fatalf("describe: exit %d, %q %q", code, out, errs)
		}
		return d
	}
	if code, out, errs := run("create", "nightly", hello, "--cron", "0 2 * * *", "--duration", "30s", "--target-env", "A=1", "--fail-on", "warning"); code != 0 || !strings.Contains(out, "schedule:") {
		t.Fatalf("create: exit %d, %q %q", code, out, errs)
	}
	if code, _, errs := run("create", "nightly", hello, "--cron", "0 2 * * *"); code != exitBadInput || !strings.Contains(errs, "already exists") {
		t.Errorf("second create: exit %d, %q", code, errs)
	}
	d := describe()
	if d.Type != "schedule" || d.Spec.Cron[0] != "0 2 * * *" || d.Action.Duration != 30*time.Second || d.Action.TargetEnv["A"] != "1" || d.Action.FailOn != "warning" || d.Paused {
		t.Errorf("describe = %+v", d)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, _ := run("list", "--format", "json")
		var l schedule.ListJSON
		if code == 0 && json.Unmarshal([]byte(out), &l) == nil && len(l.Schedules) == 1 && l.Schedules[0].Name == "nightly" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list never showed the schedule: %q", out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if code, out, _ := run("pause", "nightly", "--note", "deploy freeze"); code != 0 || out != "schedule nightly paused\n" {
		t.Errorf("pause: exit %d, %q", code, out)
	}
	if d := describe(); !d.Paused || d.Note != "deploy freeze" {
		t.Errorf("after pause: paused %v, note %q", d.Paused, d.Note)
	}
	if code, _, _ := run("unpause", "nightly"); code != 0 {
		t.Errorf("unpause: exit %d", code)
	}
	if code, _, errs := run("update", "nightly", "--target-env", "DEMO_CPU_BURN_US=80", "--overlap", "buffer-one"); code != 0 {
		t.Errorf("update: exit %d, %q", code, errs)
	}
	if d := describe(); d.Paused || d.Action.TargetEnv["A"] != "1" || d.Action.TargetEnv["DEMO_CPU_BURN_US"] != "80" || d.Spec.Overlap != schedule.OverlapBufferOne {
		t.Errorf("after update: %+v", d)
	}
	// A compare schedule notifies too; update may change its --notify
	// (only that and the spec).
	if code, out, errs := run("create", "nightly-ab", "--compare", hello, "--b-env", "DEMO_CPU_BURN_US=80", "--cron", "0 3 * * *", "--notify", "http://127.0.0.1:9/hook"); code != 0 || !strings.Contains(out, "http://127.0.0.1:9/hook") {
		t.Errorf("create --compare --notify: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs := run("update", "nightly-ab", "--notify", "http://127.0.0.1:9/other", "--format", "json"); code != 0 || !strings.Contains(out, `"notify":"http://127.0.0.1:9/other"`) {
		t.Errorf("update --notify of a compare schedule: exit %d, %q %q", code, out, errs)
	}
	if code, _, errs := run("update", "nightly-ab", "--duration", "1m"); code != exitBadInput || !strings.Contains(errs, "compare schedule") {
		t.Errorf("update --duration of a compare schedule: exit %d, %q", code, errs)
	}
	if code, _, errs := run("delete", "nightly-ab"); code != 0 {
		t.Errorf("delete nightly-ab: exit %d, %q", code, errs)
	}
	if code, out, _ := run("delete", "nightly", "--format", "json"); code != 0 || !strings.Contains(out, `"ok":true`) {
		t.Errorf("delete: exit %d, %q", code, out)
	}
	if code, _, errs := run("describe", "nightly"); code != exitBadInput || !strings.Contains(errs, "no such schedule") {
		t.Errorf("describe after delete: exit %d, %q", code, errs)
	}
}
