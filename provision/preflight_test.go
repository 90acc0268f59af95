package provision

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
)

func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		spec     scenarios.Environment
		provider string
		want     error  // errors.Is, nil for none
		text     string // in the message
	}{
		{name: "no target", spec: scenarios.Environment{}, want: ErrNoTarget, text: "target.url"},
		{name: "url", spec: scenarios.Environment{Target: scenarios.Target{URL: "http://127.0.0.1:1"}}},
		{name: "url provider without url", provider: "url", spec: scenarios.Environment{Target: scenarios.Target{Command: []string{"sh"}}}, want: ErrInvalidSpec},
		{name: "local on PATH", spec: scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"sh", "-c", "true"}}}},
		{name: "local not on PATH", spec: scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"no-such-target-xyz"}}}, want: ErrInvalidSpec, text: "not on PATH"},
		{name: "local missing file", spec: scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"./app"}, Dir: dir}}, want: ErrInvalidSpec, text: "does not exist"},
		{name: "local built file", spec: scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"./app"}, Dir: dir, Build: &scenarios.Build{Command: "go build -o app ."}}}},
		{name: "local templated", spec: scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"{{.EnvDir}}/app"}}}},
		{name: "local missing dir", spec: scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"sh"}, Dir: dir + "/nope"}}, want: ErrInvalidSpec, text: "not a directory"},
		{name: "docker without image", provider: "docker", spec: scenarios.Environment{Target: scenarios.Target{Command: []string{"sh"}}}, want: ErrInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Preflight(context.Background(), tt.spec, tt.provider, Options{})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("got %v, want %v containing %q", err, tt.want, tt.text)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

// TestPreflightDocker: an absent image is caught before anything starts,
// and provider auto says why docker was ruled out when local cannot run it
// either.
func TestPreflightDocker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := NewDocker(ctx, Options{}); err != nil {
		t.Skipf("no engine: %v", err)
	}
	spec := scenarios.Environment{Target: scenarios.Target{Image: "longhaul/no-such-image:preflight"}}
	err := Preflight(ctx, spec, "docker", Options{PullTimeout: 10 * time.Second})
	if !errors.Is(err, ErrImageMissing) {
		t.Fatalf("docker: got %v, want ErrImageMissing", err)
	}
	spec.Target.Command = []string{"no-such-target-xyz"}
	err = Preflight(ctx, spec, "auto", Options{PullTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "docker:") || !strings.Contains(err.Error(), "local:") {
		t.Fatalf("auto: got %v, want both reasons", err)
	}
}
