package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/history"
	"github.com/longhaul-dev/longhaul/interop"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/store"
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

// The packages' errors that are the user's to fix are exit 2 from any
// command, however wrapped; anything else is exit 1.
func TestIsBadInput(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{badInputf("--limit must be ≥ 1"), true},
		{fmt.Errorf("create nightly: %w", schedule.ErrExists), true},
		{fmt.Errorf("import: %w", interop.ErrBadInput), true},
		{fmt.Errorf("metric: %w", history.ErrUnknownMetric), true},
		{fmt.Errorf("drive: %w", driver.ErrInvalid), true},
		{errors.New(`unknown command "rn" for "longhaul"`), true},
		{errors.New("list runs: database is locked"), false},
		{fmt.Errorf("read run: %w", store.ErrNotFound), false},
	} {
		if got := isBadInput(tt.err); got != tt.want {
			t.Errorf("isBadInput(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
