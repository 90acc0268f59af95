package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestVersionCmd(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		stdout   func(string) bool
		contains string
	}{
		{args: []string{"version"}, code: exitOK, stdout: func(s string) bool {
			return strings.HasPrefix(s, "longhaul ") && strings.HasSuffix(s, " "+runtime.Version()+"\n") && strings.Count(s, "\n") == 1
		}},
		{args: []string{"version", "--format", "json"}, code: exitOK, stdout: func(s string) bool {
			var v struct{ Module, Go string }
			return json.Unmarshal([]byte(s), &v) == nil && v.Module != "" && v.Go == runtime.Version()
		}},
		{args: []string{"version", "--format", "yaml"}, code: exitBadInput, contains: `--format "yaml"`},
		{args: []string{"version", "extra"}, code: exitBadInput, contains: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
			if code := a.run(context.Background(), tt.args); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, stderr.String())
			}
			if tt.stdout != nil && !tt.stdout(stdout.String()) {
				t.Errorf("stdout %q", stdout.String())
			}
			if tt.contains != "" && !strings.Contains(stderr.String(), tt.contains) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.contains)
			}
		})
	}
}
