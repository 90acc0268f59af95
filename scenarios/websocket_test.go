package scenarios_test

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
)

func TestWebSocketValidation(t *testing.T) {
	tests := []struct {
		name, op, want string
	}{
		{"hold with pings", "websocket: {path: /ws, hold: 10m, ping: 1s}", ""},
		{"script", "websocket:\n      path: /ws\n      steps:\n        - send: {text: hi}\n        - expect: {regexp: hi, timeout: 1s}\n        - close: {code: 4000}", ""},
		{"no path", "websocket: {hold: 1m}", "websocket.path is required"},
		{"nothing to do", "websocket: {path: /ws}", "needs steps or hold"},
		{"two kinds", "websocket:\n      path: /ws\n      steps:\n        - {send: {text: hi}, sleep: 1s}", "exactly one of send, expect, sleep, close"},
		{"expect without match", "websocket:\n      path: /ws\n      steps:\n        - expect: {timeout: 1s}", "expect needs json"},
		{"bad regexp", "websocket:\n      path: /ws\n      steps:\n        - expect: {regexp: \"(\"}", "regexp"},
		{"close not last", "websocket:\n      path: /ws\n      steps:\n        - close: {}\n        - sleep: 1s", "close must be the last step"},
		{"close code", "websocket:\n      path: /ws\n      steps:\n        - close: {code: 1006}", "close code 1006"},
		{"hold after close", "websocket:\n      path: /ws\n      hold: 1m\n      steps:\n        - close: {}", "hold after a close step"},
		{"with request", "request: {path: /}\n    websocket: {path: /ws, hold: 1m}", "no request"},
		{"uncaptured var", "websocket: {path: \"/ws?t={{ .tok }}\", hold: 1m}", "variable tok is never captured"},
		{"own header", "websocket: {path: /ws, hold: 1m, headers: {Sec-WebSocket-Key: x}}", "set by the WebSocket client"},
		{"unknown key", "websocket: {path: /ws, hold: 1m, pings: 1s}", "unknown key \"pings\" in websocket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: x\nenvironment: {target: {url: \"http://127.0.0.1:1\"}}\nops:\n  - name: w\n    " + tt.op + "\n"
			s, err := scenarios.Parse([]byte(src), "x.yaml")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if err == nil {
				if _, err := scenarios.Compile(s, scenarios.CompileOptions{}); err != nil {
					t.Fatalf("compile: %v", err)
				}
			}
		})
	}
}

func TestWebSocketMatch(t *testing.T) {
	src := `
name: x
ops:
  - name: w
    websocket:
      path: /ws
      steps:
        - expect: {json: type, equals: hello, capture: [{json: n, var: n}]}
        - expect: {regexp: "^tick [0-9]+$"}
`
	s, err := scenarios.Parse([]byte(src), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenarios.Compile(s, scenarios.CompileOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	vu := p.NewVU(1)
	steps := p.Ops[0].WebSocket.Steps
	tests := []struct {
		step      int
		msg       string
		match, ok bool
	}{
		{0, `{"type":"tick"}`, false, false},
		{0, `not json`, false, false},
		{0, `{"type":"hello"}`, true, false}, // matched, but the capture's field is missing
		{0, `{"type":"hello","n":7}`, true, true},
		{1, `tick 12`, true, true},
		{1, `tock 12`, false, false},
	}
	for _, tt := range tests {
		match, c := steps[tt.step].Match(vu, []byte(tt.msg))
		if match != tt.match || match && (c == 0) != tt.ok {
			t.Errorf("step %d, %s: match %v class %v, want match %v ok %v", tt.step, tt.msg, match, c, tt.match, tt.ok)
		}
	}
	if v, _ := vu.Var("n"); v != "7" {
		t.Errorf("captured n = %q, want 7", v)
	}
}
