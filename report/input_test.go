package report

import (
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
)

func TestParseList(t *testing.T) {
	ok := ListFilter{Format: "text", Limit: 100}
	tests := []struct {
		name    string
		f       ListFilter
		wantErr string
	}{
		{"defaults", ok, ""},
		{"bad format", ListFilter{Format: "yaml", Limit: 1}, `--format: unknown format "yaml": use text or json`},
		{"bad status", ListFilter{Format: "json", Status: "done", Limit: 1}, `--status "done": use queued, pending, running, completed, failed, cancelled or skipped`},
		{"zero limit", ListFilter{Format: "text"}, "--limit must be ≥ 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseList(tt.f)
			if got := errString(err); got != tt.wantErr {
				t.Errorf("err %q, want %q", got, tt.wantErr)
			}
		})
	}
	format, opts, err := ParseList(ListFilter{Format: "json", Status: "failed", Name: "demo", Schedule: "nightly", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := store.ListOptions{Status: store.Failed, Name: "demo", Schedule: "nightly", Limit: 5}
	if format != JSON || opts != want {
		t.Errorf("got %s %+v, want json %+v", format, opts, want)
	}
}

func TestReanalyzeOptionsCheck(t *testing.T) {
	tests := []struct {
		o       ReanalyzeOptions
		wantErr string
	}{
		{ReanalyzeOptions{}, ""},
		{ReanalyzeOptions{Warmup: time.Minute, Windows: 3, Until: time.Hour}, ""},
		{ReanalyzeOptions{Warmup: -time.Second}, "--warmup must be ≥ 0, got -1s"},
		{ReanalyzeOptions{Windows: -1}, "--windows must be ≥ 1, got -1"},
		{ReanalyzeOptions{Until: -time.Minute}, "--until must be > 0, got -1m0s"},
	}
	for _, tt := range tests {
		if got := errString(tt.o.Check()); got != tt.wantErr {
			t.Errorf("%+v: err %q, want %q", tt.o, got, tt.wantErr)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
