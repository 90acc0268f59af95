package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogs: Temporal's lines go to DATA/temporal.log, and to stderr only
// with --verbose; longhaul's own warnings go to stderr.
func TestLogs(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		data := filepath.Join(t.TempDir(), "data")
		var stderr bytes.Buffer
		a := &app{stderr: &stderr, getenv: func(string) string { return "" }}
		lg, err := a.openLogs(data, verbose)
		if err != nil {
			t.Fatal(err)
		}
		lg.temporal.Error("Activity error.", "ActivityType", "Provision")
		lg.own.Warn("removed a leftover")
		lg.Close()
		file, err := os.ReadFile(filepath.Join(data, temporalLogFile))
		if err != nil {
			t.Fatal(err)
		}
		if lg.path != filepath.Join(data, temporalLogFile) {
			t.Errorf("path %s, want DATA/%s", lg.path, temporalLogFile)
		}
		if !strings.Contains(string(file), "Activity error.") || strings.Contains(string(file), "removed a leftover") {
			t.Errorf("verbose=%v: the log file has:\n%s\nwant Temporal's line only", verbose, file)
		}
		if got := strings.Contains(stderr.String(), "Activity error."); got != verbose {
			t.Errorf("verbose=%v: Temporal's line on stderr: %v:\n%s", verbose, got, stderr.String())
		}
		if !strings.Contains(stderr.String(), "removed a leftover") {
			t.Errorf("verbose=%v: longhaul's own warning is not on stderr:\n%s", verbose, stderr.String())
		}
	}
}
