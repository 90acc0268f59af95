package schedule_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

func ptr[T any](v T) *T { return &v }

// A bad edit fails before FILE is read, with one line naming the flag, and
// matches ErrInvalid (the command's exit 2); the first bad flag in
// update's order is the one reported.
func TestNewChangeBadEdit(t *testing.T) {
	tests := []struct {
		name string
		e    schedule.Edit
		want string
	}{
		{"overlap", schedule.Edit{Overlap: ptr("sometimes")}, `invalid schedule: overlap "sometimes": use skip, buffer-one or cancel-other`},
		{"fail-on", schedule.Edit{FailOn: ptr("meh")}, `--fail-on "meh": use warning or critical (findings at or above it fail the gate) or none`},
		{"target-env", schedule.Edit{TargetEnv: []string{"A=1", "NOEQUALS"}}, `--target-env "NOEQUALS": want KEY=VALUE`},
		{"empty key", schedule.Edit{TargetEnv: []string{"=1"}}, `--target-env "=1": want KEY=VALUE`},
		{"duration", schedule.Edit{Duration: ptr(time.Duration(0))}, "--duration and --window must be > 0"},
		{"window", schedule.Edit{Window: ptr(-time.Second)}, "--duration and --window must be > 0"},
		{"overlap before fail-on", schedule.Edit{Overlap: ptr("x"), FailOn: ptr("meh")}, `invalid schedule: overlap "x"`},
		{"fail-on before env", schedule.Edit{FailOn: ptr("meh"), TargetEnv: []string{"X"}}, `--fail-on "meh"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := false
			tt.e.Replace = func() (workflows.ScheduledInput, error) { read = true; return workflows.ScheduledInput{}, nil }
			_, err := schedule.NewChange(tt.e)
			if err == nil || !errors.Is(err, schedule.ErrInvalid) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v; want one matching ErrInvalid starting %q", err, tt.want)
			}
			if read {
				t.Error("Replace was called for a bad edit")
			}
		})
	}
	// Replace's own error (a bad scenario file) is returned as it is.
	bad := errors.New("nope.yaml: no such file")
	if _, err := schedule.NewChange(schedule.Edit{Replace: func() (workflows.ScheduledInput, error) { return workflows.ScheduledInput{}, bad }}); err != bad {
		t.Errorf("err = %v; want Replace's error", err)
	}
}

func soak() workflows.ScheduledInput {
	return workflows.ScheduledInput{
		Schedule: "nightly", Name: "hello", File: "/s/hello.yaml", Scenario: "name: hello", Duration: time.Hour, Window: time.Minute,
		Provider: "docker", TargetEnv: map[string]string{"A": "1"}, FailOn: "warning", Notify: "http://hook", UIURL: "http://ui",
	}
}

// Only what the edit sets changes; a new scenario keeps the schedule's
// notifications and, unless set too, its target env and fail-on.
func TestNewChangeAction(t *testing.T) {
	other := workflows.ScheduledInput{Name: "other", File: "/s/other.yaml", Scenario: "name: other", Duration: 2 * time.Hour, Window: 2 * time.Minute,
		TargetEnv: map[string]string{"B": "2"}, FailOn: "critical"}
	tests := []struct {
		name    string
		e       schedule.Edit
		replace *workflows.ScheduledInput
		want    func(*workflows.ScheduledInput)
	}{
		{"nothing", schedule.Edit{}, nil, func(*workflows.ScheduledInput) {}},
		{"runs", schedule.Edit{Duration: ptr(30 * time.Second), Window: ptr(5 * time.Second), Provider: ptr("local"), FailOn: ptr("none"), TargetEnv: []string{"C=3=x", "A=9"}}, nil,
			func(in *workflows.ScheduledInput) {
				in.Duration, in.Window, in.Provider, in.FailOn = 30*time.Second, 5*time.Second, "local", ""
				in.TargetEnv = map[string]string{"A": "9", "C": "3=x"}
			}},
		{"notifications", schedule.Edit{Notify: ptr(""), UIURL: ptr("http://host:8099//")}, nil,
			func(in *workflows.ScheduledInput) { in.Notify, in.UIURL = "", "http://host:8099" }},
		{"new scenario", schedule.Edit{}, &other,
			func(in *workflows.ScheduledInput) {
				keep := *in
				*in = other
				in.Notify, in.UIURL, in.TargetEnv, in.FailOn = keep.Notify, keep.UIURL, keep.TargetEnv, keep.FailOn
			}},
		{"new scenario and env", schedule.Edit{TargetEnv: []string{"D=4"}, FailOn: ptr("critical")}, &other,
			func(in *workflows.ScheduledInput) {
				keep := *in
				*in = other
				in.Notify, in.UIURL, in.TargetEnv, in.FailOn = keep.Notify, keep.UIURL, map[string]string{"B": "2", "D": "4"}, "critical"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.replace != nil {
				r := *tt.replace
				r.TargetEnv = map[string]string{"B": "2"}
				tt.e.Replace = func() (workflows.ScheduledInput, error) { return r, nil }
			}
			ch, err := schedule.NewChange(tt.e)
			if err != nil {
				t.Fatal(err)
			}
			got, want := soak(), soak()
			tt.want(&want)
			if err := ch.Action(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// The spec fields pass through; the action refuses a window longer than the
// run, and a compare schedule takes only spec and notification changes.
func TestNewChangeRefusals(t *testing.T) {
	ch, err := schedule.NewChange(schedule.Edit{Cron: []string{"@daily"}, TimeZone: ptr("Europe/Berlin"), Jitter: ptr(time.Minute), Catchup: ptr(time.Hour), Overlap: ptr("buffer-one")})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Cron[0] != "@daily" || *ch.TimeZone != "Europe/Berlin" || *ch.Jitter != time.Minute || *ch.Catchup != time.Hour || *ch.Overlap != schedule.OverlapBufferOne {
		t.Errorf("change = %+v", ch)
	}

	ch, _ = schedule.NewChange(schedule.Edit{Window: ptr(2 * time.Hour)})
	in := soak()
	if err := ch.Action(&in); !errors.Is(err, schedule.ErrInvalid) || err.Error() != "invalid schedule: window 2h0m0s is longer than the run (1h0m0s)" {
		t.Errorf("window > duration: %v", err)
	}

	cmp := func() workflows.ScheduledInput {
		return workflows.ScheduledInput{Name: "hello", Notify: "http://a", Compare: &workflows.ScheduledCompare{Scenario: "name: hello"}}
	}
	for _, e := range []schedule.Edit{
		{Duration: ptr(time.Minute)}, {Window: ptr(time.Second)}, {Provider: ptr("docker")}, {TargetEnv: []string{"A=1"}}, {FailOn: ptr("warning")},
		{Replace: func() (workflows.ScheduledInput, error) { return soak(), nil }},
	} {
		ch, err := schedule.NewChange(e)
		if err != nil {
			t.Fatal(err)
		}
		in := cmp()
		if err := ch.Action(&in); !errors.Is(err, schedule.ErrInvalid) || !strings.Contains(err.Error(), "update changes only the spec, --notify and --ui-url of a compare schedule") {
			t.Errorf("%+v on a compare schedule: %v", e, err)
		}
	}
	ch, _ = schedule.NewChange(schedule.Edit{Notify: ptr("http://b"), UIURL: ptr("http://ui/")})
	in = cmp()
	if err := ch.Action(&in); err != nil || in.Notify != "http://b" || in.UIURL != "http://ui" || in.Compare == nil {
		t.Errorf("notify of a compare schedule: %v, %+v", err, in)
	}
}

func TestSoakAndCompareInput(t *testing.T) {
	abs, err := filepath.Abs("hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := schedule.SoakInput("hello.yaml", schedule.SoakPlan{
		Name: "hello", Source: []byte("name: hello\n"), Dir: "/s", Duration: time.Hour, Window: time.Minute,
		Provider: "local", TargetEnv: map[string]string{"A": "1"}, FailOn: "warning",
	}, schedule.Notice{Notify: "http://hook", UIURL: "http://ui:8099/"})
	want := workflows.ScheduledInput{Name: "hello", File: abs, Scenario: "name: hello\n", ScenarioDir: "/s", Duration: time.Hour, Window: time.Minute,
		Provider: "local", TargetEnv: map[string]string{"A": "1"}, FailOn: "warning", Notify: "http://hook", UIURL: "http://ui:8099"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("SoakInput = %+v, %v\nwant %+v", got, err, want)
	}

	rec := store.Comparison{Name: "hello", Scenario: "name: hello\n", A: store.Build{Ref: "v1"}, B: store.Build{Ref: "main"}}
	cin := workflows.CompareInput{Pairs: 3}
	got, err = schedule.CompareInput("hello.yaml", rec, cin, schedule.Notice{UIURL: "http://ui/"})
	want = workflows.ScheduledInput{Name: "hello", File: abs, UIURL: "http://ui",
		Compare: &workflows.ScheduledCompare{Record: rec, Scenario: "name: hello\n", Input: cin}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("CompareInput = %+v, %v\nwant %+v", got, err, want)
	}
}

func TestWriteDone(t *testing.T) {
	tests := []struct {
		verb   schedule.Verb
		asJSON bool
		want   string
	}{
		{schedule.VerbPause, false, "schedule nightly paused\n"},
		{schedule.VerbUnpause, false, "schedule nightly unpaused\n"},
		{schedule.VerbTrigger, false, "schedule nightly triggered\n"},
		{schedule.VerbDelete, false, "schedule nightly deleted\n"},
		{schedule.VerbPause, true, `{"type":"schedule_pause","schedule":"nightly","ok":true}` + "\n"},
		{schedule.VerbDelete, true, `{"type":"schedule_delete","schedule":"nightly","ok":true}` + "\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := schedule.WriteDone(&b, tt.verb, "nightly", tt.asJSON); err != nil || b.String() != tt.want {
			t.Errorf("WriteDone(%s, json %v) = %q, %v; want %q", tt.verb, tt.asJSON, b.String(), err, tt.want)
		}
	}
}

func TestSummary(t *testing.T) {
	next := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		s    schedule.Schedule
		want charts.ScheduleSummary
	}{
		{schedule.Schedule{Name: "nightly", Spec: schedule.Spec{Cron: []string{"0 2 * * *", "@every 6h"}}, Action: schedule.Action{Scenario: "demo"}, NextRuns: []time.Time{next, next.Add(time.Hour)}},
			charts.ScheduleSummary{Name: "nightly", Cron: "0 2 * * *; @every 6h", Scenario: "demo", Next: next}},
		{schedule.Schedule{Name: "paused", Paused: true, Spec: schedule.Spec{Cron: []string{"@daily"}}},
			charts.ScheduleSummary{Name: "paused", Cron: "@daily", Paused: true}},
	} {
		if got := schedule.Summary(tt.s); got != tt.want {
			t.Errorf("Summary(%s) = %+v, want %+v", tt.s.Name, got, tt.want)
		}
	}
}
