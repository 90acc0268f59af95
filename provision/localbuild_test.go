package provision

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// buildSpec is a local target in repo/app built with command.
func buildSpec(repo, command string) scenarios.Environment {
	return scenarios.Environment{Provider: "local", Target: scenarios.Target{
		Dir: filepath.Join(repo, "app"), Command: []string{"true"}, Build: &scenarios.Build{Command: command},
	}}
}

// gitRepo makes a repository with app/version committed twice ("v1" on
// tag one, "v2" on tag two) and returns its directory.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"one", "two"} {
		if err := os.WriteFile(filepath.Join(dir, "app", "version"), []byte("v-"+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", ".")
		run("commit", "-q", "-m", v)
		run("tag", v)
	}
	// An uncommitted change the builds must not see.
	if err := os.WriteFile(filepath.Join(dir, "app", "version"), []byte("dirty\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBuildLocalRef: each ref is built from its commit's tree (not the
// worktree), once per commit; a prebuilt target is copied into the
// environment's directory and runs in the build's copy of target.dir,
// without running the build command again.
func TestBuildLocalRef(t *testing.T) {
	repo := gitRepo(t)
	data := t.TempDir()
	opts := Options{DataDir: data, Logger: testLogger(t)}
	spec := buildSpec(repo, `cp version "$LONGHAUL_ENV_DIR/built-version" && echo built >> "$LONGHAUL_ENV_DIR/../../builds-ran"`)
	ctx := context.Background()

	c1, d1, err := BuildLocalRef(ctx, opts, spec, "one")
	if err != nil {
		t.Fatal(err)
	}
	c2, d2, err := BuildLocalRef(ctx, opts, spec, "two")
	if err != nil {
		t.Fatal(err)
	}
	again, d1again, err := BuildLocalRef(ctx, opts, spec, c1[:10])
	if err != nil {
		t.Fatal(err)
	}
	if c1 == c2 || d1 == d2 || again != c1 || d1again != d1 || len(c1) != 40 {
		t.Fatalf("commits %s %s %s, dirs %s %s %s", c1, c2, again, d1, d2, d1again)
	}
	for dir, want := range map[string]string{d1: "v-one\n", d2: "v-two\n"} {
		b, err := os.ReadFile(filepath.Join(dir, "out", "built-version"))
		if err != nil || string(b) != want {
			t.Errorf("%s: built %q, %v; want %q", dir, b, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(data, buildsDir, "builds-ran")); strings.Count(string(b), "built") != 2 {
		t.Errorf("the build command ran %d times, want 2 (the third call reuses one)", strings.Count(string(b), "built"))
	}
	if _, _, err := BuildLocalRef(ctx, opts, spec, "no-such-ref"); err == nil || !strings.Contains(err.Error(), "no-such-ref") {
		t.Errorf("unknown ref: %v", err)
	}

	envDir := t.TempDir()
	runDir, err := usePrebuilt(d2, envDir, filepath.Join(repo, "app"))
	if err != nil {
		t.Fatal(err)
	}
	if runDir != filepath.Join(d2, "src", "app") {
		t.Errorf("target runs in %s, want the build's src/app", runDir)
	}
	if b, err := os.ReadFile(filepath.Join(envDir, "built-version")); err != nil || string(b) != "v-two\n" {
		t.Errorf("environment got %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(envDir, "build.log")); err == nil {
		t.Error("the build's log was copied into the environment")
	}

	// Provision with the prebuilt target: the (now failing) build command
	// does not run, the target starts from the copy.
	l, _ := newTestLocal(t)
	pspec := localSpec(t, nil)
	pspec.Target.Build = &scenarios.Build{Command: "exit 1", Dir: spec.Target.Build.Dir}
	env, err := l.Provision(ctx, Request{RunID: "prebuilt", Incarnation: 1, Spec: pspec, Prebuilt: d1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Teardown(context.Background(), env)
	if b, err := os.ReadFile(filepath.Join(env.EnvDir, "built-version")); err != nil || string(b) != "v-one\n" {
		t.Errorf("provisioned environment has %q, %v", b, err)
	}
}
