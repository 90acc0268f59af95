package scenarios

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadFileResolvesPathsAgainstTheFile(t *testing.T) {
	dir := t.TempDir()
	yaml := `name: local
environment:
  provider: local
  target:
    build: {command: "go build -o bin/t ."}
    command: ["./bin/t"]
    dir: app
ops:
  - name: get
    request: {path: /}
`
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tg := s.Environment.Target
	if got, want := tg.Dir, filepath.Join(dir, "app"); got != want {
		t.Errorf("target.dir = %q, want %q", got, want)
	}
	if got, want := tg.Build.Dir, filepath.Join(dir, "app"); got != want {
		t.Errorf("build.dir = %q, want %q (defaults to target.dir)", got, want)
	}
}

func TestResolvePaths(t *testing.T) {
	s := &Scenario{Environment: Environment{Target: Target{
		Command: []string{"x"},
		Build:   &Build{Repo: "https://example.com/r.git", Ref: "main"},
	}}}
	s.ResolvePaths("/base")
	if got := s.Environment.Target.Dir; got != "/base" {
		t.Errorf("dir = %q, want /base", got)
	}
	if got := s.Environment.Target.Build.Repo; got != "https://example.com/r.git" {
		t.Errorf("remote repo rewritten to %q", got)
	}
	s = &Scenario{Environment: Environment{Target: Target{Build: &Build{Repo: "../repo"}}}}
	s.ResolvePaths("/base/scen")
	if got := s.Environment.Target.Build.Repo; got != "/base/repo" {
		t.Errorf("repo = %q, want /base/repo", got)
	}
}
