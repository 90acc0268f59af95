package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmd/longhaul only parses flags and wires packages together (DEVELOPERS.md);
// these bounds keep it so. A command's logic — checking input, following a
// workflow, rendering a report — belongs in a package with its own tests
// (launch, follow, report, soakworker, ...), not here.
//
// maxCmdLines is a ratchet: issue 26 set it at 2,500 lines, reached by
// moving logic out (the data directory and log files to datadir, the notes
// on leaving a run to follow, report ID to report and charts; run's and
// compare's submit-and-follow flow to launch.Launcher, the list and analyze
// checks to report, sweep's store to soakworker, server's persistence and
// the health check to devserver, the host a worker runs on to
// soakworker.Host, the runs and comparisons listing to report.WriteList,
// the flag suggestion to launch.Nearest, ...) and by defining the flags run,
// compare and schedule share once (flagsets.go). It only ever goes down.
// What is left is mostly the commands' help text and flag definitions and
// their wiring.
const (
	maxCmdLines     = 2500 // non-test Go lines in cmd/longhaul
	maxCmdFuncLines = 80   // lines of one function in cmd/longhaul
)

func TestCmdStaysWiring(t *testing.T) {
	dir := filepath.Join("..", "..", "cmd", "longhaul")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	total := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		total += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxCmdFuncLines {
				t.Errorf("%s: %s is %d lines (at most %d in cmd/longhaul): move its logic to the package it belongs to and keep the flag parsing and wiring here",
					filepath.Base(path), fn.Name.Name, n, maxCmdFuncLines)
			}
		}
	}
	t.Logf("cmd/longhaul: %d lines of non-test Go", total)
	if total > maxCmdLines {
		t.Errorf("cmd/longhaul has %d lines of non-test Go (at most %d): it only parses flags and wires; a command's logic goes in a package with tests (see docs/design.md)", total, maxCmdLines)
	}
}
