package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScenarioValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nops:\n  - name: a\n    wieght: 2\n    request: {path: items}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hello := filepath.Join("..", "..", "scenarios", "hello.yaml")
	mix := filepath.Join("..", "..", "scenarios", "parse-mix.yaml")
	driveOnly := ": ok for longhaul drive --target URL; longhaul run refuses it (no target: add environment.target.url: http://127.0.0.1:PORT to drive an API that is already running, or target.command (provider local) or target.image (provider docker) to start one)\n"
	local := filepath.Join(dir, "local.yaml")
	if err := os.WriteFile(local, []byte("name: x\nenvironment:\n  provider: local\n  target: {command: [./no-such-api]}\nops:\n  - {name: a, weight: 1, request: {path: /}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"ok", []string{hello, mix}, exitOK, hello + driveOnly + mix + driveOnly, ""},
		{"errors", []string{bad, hello}, exitBadInput, hello + driveOnly,
			bad + `:4: unknown key "wieght" in an op (known keys: name, request, websocket, capture, expect, think, weight)` + "\n" +
				bad + `:5: op "a": path must start with "/" (the target's URL is given separately), got "items"` + "\n"},
		// What run would refuse on this host is refused here too.
		{"a target command that does not exist", []string{local}, exitBadInput, "",
			local + ": invalid environment: target.command " + filepath.Join(dir, "no-such-api") + " does not exist\n"},
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, exitBadInput, "", filepath.Join(dir, "nope.yaml") + ": cannot read: no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
			code := a.run(context.Background(), append([]string{"scenario", "validate"}, tt.args...))
			if code != tt.wantCode || stdout.String() != tt.wantStdout || stderr.String() != tt.wantStderr {
				t.Errorf("exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q",
					code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func TestScenarioValidateNeedsFile(t *testing.T) {
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	if code := a.run(context.Background(), []string{"scenario", "validate"}); code != exitBadInput {
		t.Errorf("validate without files: exit %d (stderr %q), want %d", code, stderr.String(), exitBadInput)
	}
}
