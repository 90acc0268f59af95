// Package golden compares a test's output with a file under testdata/, the
// way the report, history and interop tests check their renderings:
//
//	golden.Check(t, "run.txt", out.Bytes())
//
// and `go test -update` rewrites the files from the current output instead.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is registered once here, so every test binary that imports golden
// takes -update; a package must not define its own flag of that name.
var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// Check compares got with testdata/name and reports a difference with
// t.Errorf; with -update it writes got to testdata/name instead.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
