// Package layering holds the test that keeps longhaul's dependency direction:
// the core packages never import Temporal or testcontainers, and only
// devserver and cmd/longhaul link the Temporal server (a 5–10 minute compile).
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/longhaul-dev/longhaul"

// forbidden lists, per package, import-path prefixes it must not depend on
// (directly or transitively).
var forbidden = map[string][]string{
	"scenarios":  {"go.temporal.io/", "github.com/testcontainers/"},
	"driver":     {"go.temporal.io/", "github.com/testcontainers/"},
	"netns":      {"go.temporal.io/", "github.com/testcontainers/"},
	"window":     {"go.temporal.io/", "github.com/testcontainers/"},
	"probes":     {"go.temporal.io/", "github.com/testcontainers/"},
	"analysis":   {"go.temporal.io/", "github.com/testcontainers/"},
	"store":      {"go.temporal.io/", "github.com/testcontainers/"},
	"profiles":   {"go.temporal.io/", "github.com/testcontainers/"},
	"report":     {"go.temporal.io/", "github.com/testcontainers/"},
	"charts":     {"go.temporal.io/", "github.com/testcontainers/"},
	"thresholds": {"go.temporal.io/", "github.com/testcontainers/"},
	"interop":    {"go.temporal.io/", "github.com/testcontainers/"},
	"history":    {"go.temporal.io/", "github.com/testcontainers/"},
	"notify":     {"go.temporal.io/", "github.com/testcontainers/"},
	"provision":  {"go.temporal.io/"},
	"workflows":  {"go.temporal.io/server/", "github.com/testcontainers/"},
	"activities": {"go.temporal.io/server/", "github.com/testcontainers/"},
	// schedule is the client side of Temporal Schedules (the SDK's
	// ScheduleClient): it needs the SDK, never the server.
	"schedule": {"go.temporal.io/server/", "github.com/testcontainers/"},
	// follow sees a workflow only through its Workflow interface: the
	// command adapts Temporal's client to it.
	"follow": {"go.temporal.io/", "github.com/testcontainers/"},
	// launch builds the workflows' inputs (package workflows: the SDK).
	"launch": {"go.temporal.io/server/", "github.com/testcontainers/"},
	// soakworker wires the provisioner (testcontainers) into the SDK's
	// worker: it links both, but never the server.
	"soakworker": {"go.temporal.io/server/"},
}

func TestDependencyDirection(t *testing.T) {
	for pkg, bad := range forbidden {
		path := module + "/" + pkg
		out, err := exec.Command("go", "list", "-deps", path).CombinedOutput()
		if err != nil {
			if strings.Contains(string(out), "cannot find package") || strings.Contains(string(out), "no required module") || strings.Contains(string(out), "is not in std") || strings.Contains(string(out), "matched no packages") || strings.Contains(string(out), "directory not found") {
				t.Logf("%s: not present yet", pkg)
				continue
			}
			t.Fatalf("go list -deps %s: %v\n%s", path, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, prefix := range bad {
				if strings.HasPrefix(dep, prefix) {
					t.Errorf("%s depends on %s (forbidden prefix %s)", pkg, dep, prefix)
				}
			}
		}
	}
}
