package schedule

import "time"

// Flags are the values of the spec and run flags of longhaul schedule
// create and update, as the command line gave them.
type Flags struct {
	Cron      []string
	TimeZone  string
	Jitter    time.Duration
	Overlap   string
	Catchup   time.Duration
	Notify    string
	UIURL     string
	FailOn    string
	Duration  time.Duration
	Window    time.Duration
	Provider  string
	TargetEnv []string
}

// Spec is create's spec; Spec.Validate checks it.
func (f Flags) Spec() Spec {
	return Spec{Cron: f.Cron, TimeZone: f.TimeZone, Jitter: f.Jitter, Overlap: Overlap(f.Overlap), Catchup: f.Catchup}
}

// Notice is where the schedule's notifications go.
func (f Flags) Notice() Notice {
	return Notice{Notify: f.Notify, UIURL: f.UIURL}
}

// Edit is update's edit: a field changes only when changed reports its
// flag (by the name longhaul schedule update gives it) as given, so that
// an empty value can be set and an absent flag leaves the schedule alone.
func (f Flags) Edit(changed func(flag string) bool) Edit {
	e := Edit{
		TimeZone: given(changed, "tz", f.TimeZone), Jitter: given(changed, "jitter", f.Jitter),
		Catchup: given(changed, "catchup", f.Catchup), Overlap: given(changed, "overlap", f.Overlap),
		Duration: given(changed, "duration", f.Duration), Window: given(changed, "window", f.Window),
		Provider: given(changed, "provider", f.Provider), FailOn: given(changed, "fail-on", f.FailOn),
		Notify: given(changed, "notify", f.Notify), UIURL: given(changed, "ui-url", f.UIURL),
	}
	if changed("cron") {
		e.Cron = f.Cron
	}
	if changed("target-env") {
		e.TargetEnv = f.TargetEnv
	}
	return e
}

// given is &v when the flag name was given, else nil.
func given[T any](changed func(string) bool, name string, v T) *T {
	if !changed(name) {
		return nil
	}
	return &v
}
