package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// TestLocalCheckSaysHowTheTargetStopped: a target killed with a signal or
// exiting on its own is ErrGone with an ExitError event saying how, when,
// and what it printed last.
func TestLocalCheckSaysHowTheTargetStopped(t *testing.T) {
	tests := []struct {
		name       string
		sig        syscall.Signal
		wantSignal int
		wantDetail string
	}{
		{"kill -9", syscall.SIGKILL, 9, "exited (signal 9: killed)"},
		{"SIGTERM, exits 0", syscall.SIGTERM, 0, "exited (exit code 0)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newTestLocal(t)
			ctx := testContext(t, time.Minute)
			env, err := l.Provision(ctx, Request{RunID: fmt.Sprintf("exit-%d", i), Incarnation: 1, Spec: localSpec(t, nil)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Teardown(context.Background(), env) })
			before := time.Now()
			if err := syscall.Kill(env.Target.PID, tt.sig); err != nil {
				t.Fatal(err)
			}
			var ee *ExitError
			deadline := time.Now().Add(10 * time.Second)
			for {
				err = l.Check(ctx, env)
				if errors.As(err, &ee) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if ee == nil || !errors.Is(err, ErrGone) {
				t.Fatalf("Check = %v, want an ExitError that is ErrGone", err)
			}
			ev := ee.Event
			if ev.Kind != window.EventTargetExit || ev.PID != env.Target.PID {
				t.Errorf("event kind %q pid %d, want %q %d", ev.Kind, ev.PID, window.EventTargetExit, env.Target.PID)
			}
			if ev.Signal != tt.wantSignal {
				t.Errorf("signal %d, want %d", ev.Signal, tt.wantSignal)
			}
			if tt.wantSignal == 0 && (ev.ExitCode == nil || *ev.ExitCode != 0) {
				t.Errorf("exit code %v, want 0", ev.ExitCode)
			}
			if !strings.Contains(ev.Detail, tt.wantDetail) || !strings.Contains(err.Error(), tt.wantDetail) {
				t.Errorf("detail %q / error %q, want %q", ev.Detail, err, tt.wantDetail)
			}
			if ev.At.Before(before.Add(-time.Second)) || ev.At.After(time.Now()) {
				t.Errorf("exit time %v, want between %v and now", ev.At, before)
			}
			if !slices.ContainsFunc(ev.Output, func(l string) bool { return strings.HasPrefix(l, "target: listening on") }) {
				t.Errorf("output %q lacks the target's 'listening' line", ev.Output)
			}
		})
	}
}

func TestLastLinesFrom(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "line %d\r\n\n", i)
	}
	got := lastLinesFrom(strings.NewReader(b.String()), 50)
	if len(got) != 50 || got[0] != "line 70" || got[49] != "line 119" {
		t.Errorf("got %d lines %q … %q, want line 70 … line 119", len(got), got[0], got[len(got)-1])
	}
}
