package version

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want Info
		line string
	}{
		{
			name: "installed at a version, no vcs stamp",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/longhaul-dev/longhaul", Version: "v1.2.0"}},
			want: Info{Module: "v1.2.0", Go: "go1.26.8"},
			line: "longhaul v1.2.0 go1.26.8",
		},
		{
			name: "built from a clean checkout",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "-compiler", Value: "gc"},
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "1f0c2ab3d4e5f60718293a4b5c6d7e8f90a1b2c3"},
				{Key: "vcs.time", Value: "2026-12-04T01:02:03Z"},
				{Key: "vcs.modified", Value: "false"},
			}},
			want: Info{Module: Devel, Commit: "1f0c2ab3d4e5f60718293a4b5c6d7e8f90a1b2c3", CommitTime: "2026-12-04T01:02:03Z", Go: "go1.26.8"},
			line: "longhaul (devel) commit 1f0c2ab3d4e5 (2026-12-04T01:02:03Z) go1.26.8",
		},
		{
			name: "built from a checkout with changes",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"},
				{Key: "vcs.modified", Value: "true"},
			}},
			want: Info{Module: Devel, Commit: "abc", Modified: true, Go: "go1.26.8"},
			line: "longhaul (devel) commit abc modified go1.26.8",
		},
		{
			name: "nothing recorded",
			bi:   debug.BuildInfo{},
			want: Info{Module: Devel, Go: runtime.Version()},
			line: "longhaul (devel) " + runtime.Version(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromBuildInfo(&tt.bi)
			if got != tt.want {
				t.Errorf("FromBuildInfo = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.line {
				t.Errorf("String = %q, want %q", s, tt.line)
			}
		})
	}
}

// TestCurrent reads the test binary's own build information: the Go version
// must be the running one, and the module version set.
func TestCurrent(t *testing.T) {
	in := Current()
	if in.Go != runtime.Version() {
		t.Errorf("Go = %q, want %q", in.Go, runtime.Version())
	}
	if in.Module == "" {
		t.Error("Module is empty, want a version or (devel)")
	}
	if !strings.HasPrefix(in.String(), "longhaul "+in.Module+" ") {
		t.Errorf("String = %q, want it to start with the module version", in.String())
	}
}

func TestJSONNames(t *testing.T) {
	b, err := json.Marshal(Info{Module: "v1.0.0", Commit: "abc", Go: "go1.26.8"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"module":"v1.0.0","commit":"abc","go":"go1.26.8"}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}
