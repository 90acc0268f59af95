package follow

import (
	"bytes"
	"testing"
)

func TestSessionNotes(t *testing.T) {
	for _, tt := range []struct {
		s                        Session
		wantOut, wantErr, wantDN string
	}{
		{Session{}, "run r1 submitted (workflow wf)\n", "", "run r1 goes on (longhaul report r1)"},
		{Session{Embedded: true, DataDir: "/d"}, "run r1 submitted (workflow wf)\n",
			"longhaul: the embedded server stops with this process; the run continues when 'longhaul dev --data /d' starts\n",
			"run r1 is paused with the embedded server; it continues when 'longhaul dev --data /d' starts"},
	} {
		var out, errw bytes.Buffer
		tt.s.Detached(Terminal{Stdout: &out, Stderr: &errw}, "run", "r1", "wf")
		if out.String() != tt.wantOut || errw.String() != tt.wantErr {
			t.Errorf("%+v: Detached printed %q and %q, want %q and %q", tt.s, out.String(), errw.String(), tt.wantOut, tt.wantErr)
		}
		if got := tt.s.DetachNote("run", "r1"); got != tt.wantDN {
			t.Errorf("%+v: DetachNote = %q, want %q", tt.s, got, tt.wantDN)
		}
	}
}

func TestBrowseLater(t *testing.T) {
	for _, tt := range []struct {
		format, data, store, want string
	}{
		{"text", "", "", "browse it later: longhaul ui, then open /runs/r1\n"},
		{"text", "/d", "/s.db", "browse it later: longhaul ui --data /d --store /s.db, then open /runs/r1\n"},
		{"text", "", "postgres://u@db/lh", "browse it later: longhaul ui, then open /runs/r1\n"},
		{"json", "/d", "", ""},
	} {
		var errw bytes.Buffer
		BrowseLater(Terminal{Stderr: &errw}, tt.format, tt.data, tt.store, "/runs/r1")
		if errw.String() != tt.want {
			t.Errorf("BrowseLater(%q, %q, %q) printed %q, want %q", tt.format, tt.data, tt.store, errw.String(), tt.want)
		}
	}
}
