package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
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
