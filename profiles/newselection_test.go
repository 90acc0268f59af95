package profiles

import (
	"strings"
	"testing"
)

func TestNewSelection(t *testing.T) {
	for _, tt := range []struct {
		name     string
		kind     string
		r        WindowRange
		from, to int
		bad      string
	}{
		{"all", "cpu", WindowRange{To: -1}, 0, 0, ""},
		{"one window", "heap", WindowRange{Window: 7, HasWindow: true, To: -1}, 7, 8, ""},
		{"range", "cpu", WindowRange{From: 3, To: 9, HasFrom: true, HasTo: true}, 3, 10, ""},
		{"from only", "cpu", WindowRange{From: 3, To: -1, HasFrom: true}, 3, 0, ""},
		{"kind", "mem", WindowRange{To: -1}, 0, 0, "--kind is cpu or heap"},
		{"window and range", "cpu", WindowRange{Window: 1, HasWindow: true, HasTo: true, To: 4}, 0, 0, "--window excludes"},
		{"negative", "cpu", WindowRange{From: -1, To: -1, HasFrom: true}, 0, 0, "≥ 0"},
		{"backwards", "cpu", WindowRange{From: 5, To: 2, HasFrom: true, HasTo: true}, 0, 0, "--to 2 is before --from 5"},
	} {
		sel, err := NewSelection("r", "", tt.kind, tt.r)
		switch {
		case tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)):
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.bad)
		case tt.bad == "" && (err != nil || sel.FromIndex != tt.from || sel.ToIndex != tt.to):
			t.Errorf("%s: %+v, %v; want windows [%d, %d)", tt.name, sel, err, tt.from, tt.to)
		}
	}
}
