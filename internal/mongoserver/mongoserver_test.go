package mongoserver

import (
	"os"
	"path/filepath"
	"testing"
)

// scripts/install-ferretdb.sh puts ferretdb in Go's bin directory, which is
// often not on PATH (CI's shell has it off PATH): Find looks there too.
func TestFindLooksInGoBin(t *testing.T) {
	bin := t.TempDir()
	ferret := filepath.Join(bin, "ferretdb")
	if err := os.WriteFile(ferret, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no mongod, no ferretdb
	t.Setenv("GOBIN", bin)
	s, err := Find()
	if err != nil || s.Path != ferret || !s.FerretDB {
		t.Fatalf("Find() = %+v, %v; want the ferretdb in GOBIN", s, err)
	}
	t.Setenv("GOBIN", "")
	t.Setenv("GOPATH", filepath.Dir(bin)+string(os.PathListSeparator)+t.TempDir())
	if err := os.Rename(bin, filepath.Join(filepath.Dir(bin), "bin")); err != nil {
		t.Fatal(err)
	}
	if s, err = Find(); err != nil || s.Path != filepath.Join(filepath.Dir(bin), "bin", "ferretdb") {
		t.Fatalf("Find() = %+v, %v; want the ferretdb in GOPATH's bin", s, err)
	}
	t.Setenv("GOPATH", t.TempDir())
	if _, err := Find(); err == nil {
		t.Fatal("Find() found a server where there is none")
	}
}
