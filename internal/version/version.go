// Package version says which build of longhaul is running: the module version
// (v1.2.3 when installed with `go install …@v1.2.3`; from a git checkout Go
// 1.24+ records a pseudo-version such as v0.0.0-20261204010203-1f0c2ab3d4e5+dirty;
// "(devel)" when nothing was recorded, as with `go run`), the commit it was
// built from and the Go version that built it.
//
// All of it comes from the build information the Go toolchain embeds in every
// binary (runtime/debug.ReadBuildInfo), so nothing has to be stamped in with
// -ldflags and `go install` gives the right answer too:
//
//	fmt.Println(version.Current())
//	// longhaul (devel) commit 1f0c2ab3d4e5 (modified) go1.26.8
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Devel is what the toolchain records as the main module's version when the
// binary was built from a checkout rather than installed at a version.
const Devel = "(devel)"

// Info is one build's identity.
type Info struct {
	// Module is the main module's version: a semantic version or a
	// pseudo-version, Devel when the toolchain recorded none.
	Module string `json:"module"`
	// Commit is vcs.revision, the full commit hash; empty when the toolchain
	// recorded none (a `go install` from the module proxy, `go run`, -buildvcs=false).
	Commit string `json:"commit,omitempty"`
	// CommitTime is vcs.time (RFC 3339) when recorded.
	CommitTime string `json:"commit_time,omitempty"`
	// Modified is vcs.modified: the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Go is the Go version that built the binary (go1.26.8).
	Go string `json:"go"`
}

// Current reads the running binary's build information. A binary without it
// (only possible when built outside module mode) reports Devel and the
// runtime's Go version.
func Current() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Module: Devel, Go: runtime.Version()}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts an Info from build information; it is Current's
// logic, separate so that it can be tested on made-up build information.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Version, Go: bi.GoVersion}
	if in.Module == "" {
		in.Module = Devel
	}
	if in.Go == "" {
		in.Go = runtime.Version()
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.CommitTime = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one line `longhaul version` prints:
// "longhaul v1.2.0 commit 1f0c2ab3d4e5 (2026-12-04T01:02:03Z) go1.26.8".
// The commit is shortened to 12 hex digits, as Go's pseudo-versions do.
func (in Info) String() string {
	var b strings.Builder
	b.WriteString("longhaul ")
	b.WriteString(in.Module)
	if in.Commit != "" {
		c := in.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		fmt.Fprintf(&b, " commit %s", c)
		if in.CommitTime != "" {
			fmt.Fprintf(&b, " (%s)", in.CommitTime)
		}
		if in.Modified {
			b.WriteString(" modified")
		}
	}
	b.WriteString(" ")
	b.WriteString(in.Go)
	return b.String()
}
