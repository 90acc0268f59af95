package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/schedule"
)

// Spec.Validate is create's check of its spec flags, before FILE is read
// and before Temporal is dialled: one line, matching ErrInvalid (exit 2).
func TestSpecValidate(t *testing.T) {
	daily := []string{"@daily"}
	tests := []struct {
		name    string
		spec    schedule.Spec
		wantErr string
	}{
		{"defaults", schedule.Spec{Cron: daily}, ""},
		{"all set", schedule.Spec{Cron: daily, TimeZone: "Europe/Berlin", Jitter: time.Minute, Overlap: schedule.OverlapBufferOne, Catchup: time.Hour}, ""},
		{"overlap first", schedule.Spec{Overlap: "sometimes"}, `invalid schedule: overlap "sometimes": use skip, buffer-one or cancel-other`},
		{"no cron", schedule.Spec{}, `invalid schedule: give a --cron expression (e.g. "0 2 * * *")`},
		{"empty cron", schedule.Spec{Cron: []string{" "}}, "invalid schedule: empty cron expression"},
		{"bad zone", schedule.Spec{Cron: daily, TimeZone: "Mars/Olympus"}, `invalid schedule: time zone "Mars/Olympus": unknown time zone Mars/Olympus`},
		{"negative jitter", schedule.Spec{Cron: daily, Jitter: -time.Second}, "invalid schedule: jitter and catch-up must be ≥ 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, schedule.ErrInvalid) {
					t.Errorf("err %v does not match ErrInvalid", err)
				}
			}
			if got != tt.wantErr {
				t.Errorf("err %q, want %q", got, tt.wantErr)
			}
		})
	}
}
