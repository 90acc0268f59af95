package datadir

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		flag    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{"flag wins", "/srv/lh", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, "/srv/lh", false},
		{"xdg", "", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, "/x/longhaul", false},
		{"relative xdg ignored", "", map[string]string{"XDG_DATA_HOME": "x", "HOME": "/h"}, "/h/.local/share/longhaul", false},
		{"home", "", map[string]string{"HOME": "/h"}, "/h/.local/share/longhaul", false},
		{"nothing", "", map[string]string{}, "", true},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.flag, func(k string) string { return tt.env[k] })
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s: Resolve(%q) = %q, %v; want %q, error %v", tt.name, tt.flag, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestStoreDSN(t *testing.T) {
	home := func(k string) string { return map[string]string{"HOME": "/h"}[k] }
	env := func(k string) string { return map[string]string{"HOME": "/h", "LONGHAUL_STORE": "/e.db"}[k] }
	for _, tt := range []struct {
		store, dir string
		getenv     func(string) string
		want       string
	}{
		{"", "", home, "/h/.local/share/longhaul/longhaul.db"},
		{"", "/d", home, "/d/longhaul.db"},
		{"postgres://u@127.0.0.1/lh", "/d", home, "postgres://u@127.0.0.1/lh"},
		{"", "/d", env, "/e.db"},
		{"/f.db", "/d", env, "/f.db"},
	} {
		if got, err := StoreDSN(tt.store, tt.dir, tt.getenv); got != tt.want || err != nil {
			t.Errorf("StoreDSN(%q, %q) = %q, %v; want %q", tt.store, tt.dir, got, err, tt.want)
		}
	}
	if _, err := StoreDSN("", "", func(string) string { return "" }); err == nil {
		t.Error("StoreDSN with no data directory: no error")
	}
}

func TestDisplayDSN(t *testing.T) {
	for _, tt := range []struct{ dsn, want string }{
		{"/d/longhaul.db", "/d/longhaul.db"},
		{"postgres://u:secret@db/lh", "postgres://u:xxxxx@db/lh"},
		{"postgresql://u@db/lh", "postgresql://u@db/lh"},
		{"postgres://u:x@db:port/lh", "(unparsable URL)"},
	} {
		if got := DisplayDSN(tt.dsn); got != tt.want {
			t.Errorf("DisplayDSN(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}

// TestLogs: Temporal's lines go to DATA/temporal.log, and to the terminal
// only when verbose; longhaul's own warnings go to the terminal.
func TestLogs(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		data := filepath.Join(t.TempDir(), "data")
		var term bytes.Buffer
		lg, err := OpenLogs(data, &term, LogOptions{Verbose: verbose})
		if err != nil {
			t.Fatal(err)
		}
		lg.Temporal.Error("Activity error.", "ActivityType", "Provision")
		lg.Own.Warn("removed a leftover")
		lg.Close()
		file, err := os.ReadFile(filepath.Join(data, TemporalLogFile))
		if err != nil {
			t.Fatal(err)
		}
		if lg.Path != filepath.Join(data, TemporalLogFile) {
			t.Errorf("path %s, want DATA/%s", lg.Path, TemporalLogFile)
		}
		if !strings.Contains(string(file), "Activity error.") || strings.Contains(string(file), "removed a leftover") {
			t.Errorf("verbose=%v: the log file has:\n%s\nwant Temporal's line only", verbose, file)
		}
		if got := strings.Contains(term.String(), "Activity error."); got != verbose {
			t.Errorf("verbose=%v: Temporal's line on the terminal: %v:\n%s", verbose, got, term.String())
		}
		if !strings.Contains(term.String(), "removed a leftover") {
			t.Errorf("verbose=%v: longhaul's own warning is not on the terminal:\n%s", verbose, term.String())
		}
		own, err := os.ReadFile(filepath.Join(data, OwnLogFile))
		if err != nil || !strings.Contains(string(own), "removed a leftover") {
			t.Errorf("verbose=%v: DATA/%s has %q (%v), want the warning", verbose, OwnLogFile, own, err)
		}
	}
}

// A log past its bound is moved aside when it is opened.
func TestLogsRotate(t *testing.T) {
	data := t.TempDir()
	path := filepath.Join(data, TemporalLogFile)
	if err := os.WriteFile(path, make([]byte, maxLogBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	lg, err := OpenLogs(data, &bytes.Buffer{}, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lg.Close()
	if fi, err := os.Stat(path + ".1"); err != nil || fi.Size() != maxLogBytes+1 {
		t.Errorf("%s.1: %v, want the old log", path, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("%s: %v, want a new empty log", path, err)
	}
}

func TestLogsNoDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenLogs(filepath.Join(file, "data"), &bytes.Buffer{}, LogOptions{})
	if !errors.Is(err, ErrDir) || !strings.HasPrefix(err.Error(), "data directory: ") {
		t.Errorf("OpenLogs under a file: %v, want ErrDir", err)
	}
}
