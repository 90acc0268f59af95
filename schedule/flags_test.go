package schedule_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/schedule"
)

func given(flags ...string) func(string) bool {
	return func(f string) bool {
		for _, g := range flags {
			if f == g {
				return true
			}
		}
		return false
	}
}

// Update changes only what its command line gave, empty values included.
func TestFlagsEdit(t *testing.T) {
	f := schedule.Flags{
		Cron: []string{"@daily"}, TimeZone: "Europe/Berlin", Jitter: time.Minute, Overlap: "buffer-one", Catchup: time.Hour,
		Notify: "", UIURL: "http://ui", FailOn: "warning", Duration: time.Hour, Window: time.Minute, Provider: "docker",
		TargetEnv: []string{"A=1"},
	}
	if e := f.Edit(given()); !reflect.DeepEqual(e, schedule.Edit{}) {
		t.Errorf("no flags given: %+v, want the zero Edit", e)
	}
	e := f.Edit(given("cron", "tz", "jitter", "catchup", "overlap", "duration", "window", "provider", "fail-on", "notify", "ui-url", "target-env"))
	want := schedule.Edit{
		Cron: f.Cron, TimeZone: ptr("Europe/Berlin"), Jitter: ptr(time.Minute), Catchup: ptr(time.Hour), Overlap: ptr("buffer-one"),
		Duration: ptr(time.Hour), Window: ptr(time.Minute), Provider: ptr("docker"), TargetEnv: f.TargetEnv, FailOn: ptr("warning"),
		Notify: ptr(""), UIURL: ptr("http://ui"),
	}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("every flag given:\n got %+v\nwant %+v", e, want)
	}
	if got := f.Edit(given("notify")); got.Notify == nil || *got.Notify != "" || got.UIURL != nil {
		t.Errorf("--notify '' given: %+v, want Notify set to empty and nothing else", got)
	}
}

func TestFlagsSpecAndNotice(t *testing.T) {
	f := schedule.Flags{Cron: []string{"0 2 * * *"}, TimeZone: "UTC", Jitter: time.Second, Overlap: "skip", Catchup: time.Minute, Notify: "http://hook", UIURL: "http://ui"}
	want := schedule.Spec{Cron: f.Cron, TimeZone: "UTC", Jitter: time.Second, Overlap: schedule.OverlapSkip, Catchup: time.Minute}
	if got := f.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("Spec() = %+v, want %+v", got, want)
	}
	if got, want := f.Notice(), (schedule.Notice{Notify: "http://hook", UIURL: "http://ui"}); got != want {
		t.Errorf("Notice() = %+v, want %+v", got, want)
	}
}
