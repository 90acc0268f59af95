package scenarios

import (
	"path/filepath"
	"strings"
)

// ResolvePaths makes the relative local paths of the environment (target.dir,
// target.build.dir, and target.build.repo when it is a path) absolute against
// baseDir, the directory of the scenario file. LoadFile does this itself; a
// worker that receives the scenario's text calls it with the directory the
// client sent, so "dir: ../examples/demo-target" means the same thing
// wherever the process was started. An empty baseDir leaves paths as they are.
func (s *Scenario) ResolvePaths(baseDir string) {
	if baseDir == "" {
		return
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(baseDir, p)
	}
	t := &s.Environment.Target
	t.Dir = abs(t.Dir)
	if b := t.Build; b != nil {
		b.Dir = abs(b.Dir)
		if b.Repo != "" && !isRemoteRepo(b.Repo) {
			b.Repo = abs(b.Repo)
		}
	}
	// A local build without its own dir runs where the target runs, or in the
	// scenario's directory.
	if b := t.Build; b != nil && b.Command != "" && b.Dir == "" {
		if t.Dir != "" {
			b.Dir = t.Dir
		} else {
			b.Dir = baseDir
		}
	}
	if t.Dir == "" && len(t.Command) > 0 {
		t.Dir = baseDir
	}
}

// isRemoteRepo reports whether a build.repo is a URL rather than a local path.
func isRemoteRepo(r string) bool {
	return strings.Contains(r, "://") || strings.HasPrefix(r, "git@")
}
