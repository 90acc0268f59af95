package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var updateFlags = flag.Bool("update-flags", false, "rewrite testdata/flags.golden")

// TestFlagsGolden pins every command's flags — name, shorthand, type,
// default and help — so that moving a flag into a shared set (one set per
// concern) cannot change what a user types or reads. After an intended
// change: go test ./cmd/longhaul -run TestFlagsGolden -update-flags.
func TestFlagsGolden(t *testing.T) {
	a := &app{stdout: new(strings.Builder), stderr: new(strings.Builder), stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	var b strings.Builder
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fmt.Fprintf(&b, "%s\n", c.CommandPath())
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			short := ""
			if f.Shorthand != "" {
				short = " -" + f.Shorthand
			}
			fmt.Fprintf(&b, "  --%s%s %s = %q: %s\n", f.Name, short, f.Value.Type(), f.DefValue, f.Usage)
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCmd())
	path := filepath.Join("testdata", "flags.golden")
	if *updateFlags {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update-flags)", err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("flags differ from testdata/flags.golden at line %d:\n got: %s\nwant: %s\n(an intended change: -update-flags)", i+1, g, w)
			}
		}
	}
}
