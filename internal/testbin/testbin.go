// Package testbin builds a Go program once per test binary, for tests that
// run it as a real process (a target the local provider starts, a fake
// service): the first test that asks builds it, every later one reuses it.
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testbin.Remove()
//		os.Exit(code)
//	}
//
//	bin := testbin.Build(t, "testdata/target")
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	builds = map[string]*build{} // by the main package's absolute directory
)

// build is one program, built at most once.
type build struct {
	once sync.Once
	tmp  string // the temporary directory path is in
	path string
	err  error
}

// Build returns the path of the program whose main package is in dir
// (relative to the test's working directory, its package's directory),
// built the first time a test of this test binary asks for dir. env adds
// to the build's environment: CGO_ENABLED=0 for a static program (one
// that also runs in a FROM scratch container), GOWORK=off for one that is
// a module of its own; only the first call's env counts. A failed build
// fails t, and every later test that asks for dir. Safe for concurrent
// use.
func Build(t testing.TB, dir string, env ...string) string {
	t.Helper()
	src, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	b, ok := builds[src]
	if !ok {
		b = &build{}
		builds[src] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.err = b.build(src, env) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func (b *build) build(src string, env []string) error {
	tmp, err := os.MkdirTemp("", "longhaul-testbin-")
	if err != nil {
		return err
	}
	b.tmp, b.path = tmp, filepath.Join(tmp, filepath.Base(src))
	cmd := exec.Command("go", "build", "-o", b.path, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", src, err, out)
	}
	return nil
}

// Remove deletes every program Build built. TestMain calls it once the
// tests have run.
func Remove() {
	mu.Lock()
	defer mu.Unlock()
	for _, b := range builds {
		if b.tmp != "" {
			os.RemoveAll(b.tmp)
		}
	}
}
