package testbin

import (
	"os"
	"os/exec"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Remove()
	os.Exit(code)
}

// TestBuildOnce: the second Build of a directory returns the first one's
// program, which runs.
func TestBuildOnce(t *testing.T) {
	first := Build(t, "testdata/hello")
	if again := Build(t, "./testdata/../testdata/hello"); again != first {
		t.Errorf("second build %s, want the first's %s", again, first)
	}
	out, err := exec.Command(first).Output()
	if got, want := string(out), "hello\n"; err != nil || got != want {
		t.Errorf("%s: %q, %v; want %q", first, got, err, want)
	}
}
