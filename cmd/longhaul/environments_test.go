package main

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
)

func TestCheckProviderOverride(t *testing.T) {
	image := scenarios.Environment{Provider: "docker", Target: scenarios.Target{Image: "api:1"}}
	repo := scenarios.Environment{Provider: "docker", Target: scenarios.Target{Build: &scenarios.Build{Repo: "."}}}
	local := scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"./api"}}}
	both := scenarios.Environment{Provider: "auto", Target: scenarios.Target{Image: "api:1", Command: []string{"./api"}}}
	url := scenarios.Environment{Target: scenarios.Target{URL: "http://127.0.0.1:8080"}}
	none := scenarios.Environment{}
	tests := []struct {
		name     string
		env      scenarios.Environment
		provider string
		wantErr  string
	}{
		{"no override", none, "", ""},
		{"docker on an image", image, "docker", ""},
		{"docker on a git-ref build", repo, "docker", ""},
		{"docker on a local spec", local, "docker", "no target.image or target.build.repo"},
		{"local on a local spec", local, "local", ""},
		{"local on an image", image, "local", "no target.command"},
		{"both ways", both, "docker", ""},
		{"both ways, local", both, "local", ""},
		{"auto on an image", image, "auto", ""},
		{"auto on nothing", none, "auto", "no target.image, target.build.repo or target.command"},
		{"url on a url", url, "url", ""},
		{"url on an image", image, "url", "no environment.target.url"},
		{"a url is never provisioned", url, "docker", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkProviderOverride(tt.env, tt.provider)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("checkProviderOverride(%s) = %v, want nil", tt.provider, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("checkProviderOverride(%s) = %v, want an error containing %q", tt.provider, err, tt.wantErr)
			}
		})
	}
}
