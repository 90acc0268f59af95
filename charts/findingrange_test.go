package charts

import (
	"testing"

	"github.com/longhaul-dev/longhaul/analysis"
)

// A finding of one window says "window N", not "windows N–N"; a process's
// single last line is "last line".
func TestFindingRangeAndLastLines(t *testing.T) {
	for _, tt := range []struct {
		first, last int
		want        string
	}{{10, 10, "window 10"}, {2, 71, "windows 2–71"}, {0, 0, ""}} {
		v := findingViews([]analysis.Finding{{Kind: "k", Evidence: analysis.Evidence{FirstWindow: tt.first, LastWindow: tt.last}}})
		if v[0].Range != tt.want {
			t.Errorf("windows %d–%d shown as %q, want %q", tt.first, tt.last, v[0].Range, tt.want)
		}
	}
	if got := fmtLastLines(1); got != "last line" {
		t.Errorf("fmtLastLines(1) = %q", got)
	}
	if got := fmtLastLines(20); got != "last 20 lines" {
		t.Errorf("fmtLastLines(20) = %q", got)
	}
}
