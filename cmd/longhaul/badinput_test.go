package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A newcomer's slips get one line that says what to type, and exit 2.
func TestBadInputSaysWhatToType(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "x.yaml", "--durration", "1m"}, "unknown flag: --durration (did you mean --duration?)"},
		{[]string{"compare", "x.yaml", "--pair", "3"}, "unknown flag: --pair (did you mean --pairs?)"},
		{[]string{"run", "x.yaml", "--zzzzzz"}, "unknown flag: --zzzzzz\n"},
		{[]string{"run"}, "run takes one scenario file: longhaul run FILE"},
		{[]string{"compare", "a.yaml", "b.yaml"}, "compare takes one scenario file: longhaul compare FILE"},
		{[]string{"run", "../../scenarios/hello.yaml", "--data", "DATA"}, "longhaul: no target: add environment.target.url"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for i, a := range tt.args {
				tt.args[i] = strings.ReplaceAll(a, "DATA", t.TempDir())
			}
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
			code := a.run(context.Background(), tt.args)
			if code != exitBadInput || !strings.Contains(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line containing %q", code, stderr.String(), tt.want)
			}
		})
	}
}
