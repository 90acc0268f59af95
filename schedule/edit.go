package schedule

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/workflows"
)

// invalidError is a bad value whose message stands alone (it names the flag
// or file): it matches ErrInvalid without prefixing its message, so a
// command prints it as given.
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(err error) error { return invalidError{err} }

// SoakPlan is a validated `longhaul run` of a scenario, the part a soak
// schedule keeps for each firing.
type SoakPlan struct {
	// Name is the scenario's name.
	Name string
	// Source is the scenario's YAML as given (${env:...} unresolved: the
	// worker resolves them at each firing).
	Source []byte
	// Dir is the scenario file's absolute directory.
	Dir       string
	Duration  time.Duration
	Window    time.Duration
	Provider  string
	TargetEnv map[string]string
	// FailOn is the gate's finding severity ("" for none).
	FailOn string
}

// Notice is where a schedule's notifications go.
type Notice struct {
	// Notify is the URL notifications are POSTed to ("": none).
	Notify string
	// UIURL is the browser UI's base URL, for the links in notifications
	// (a trailing "/" is dropped).
	UIURL string
}

// SoakInput is the action of a schedule whose firings soak the scenario in
// file as p planned. The error matches ErrInvalid.
func SoakInput(file string, p SoakPlan, n Notice) (workflows.ScheduledInput, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return workflows.ScheduledInput{}, invalid(fmt.Errorf("%s: %v", file, err))
	}
	return workflows.ScheduledInput{
		Name: p.Name, File: abs, Scenario: string(p.Source), ScenarioDir: p.Dir,
		Duration: p.Duration, Window: p.Window, Provider: p.Provider, TargetEnv: p.TargetEnv,
		FailOn: p.FailOn, Notify: n.Notify, UIURL: strings.TrimRight(n.UIURL, "/"),
	}, nil
}

// CompareInput is the action of a schedule whose firings compare two builds
// of the scenario in file: rec and in as `longhaul compare` planned them
// (ids unset). The error matches ErrInvalid.
func CompareInput(file string, rec store.Comparison, in workflows.CompareInput, n Notice) (workflows.ScheduledInput, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return workflows.ScheduledInput{}, invalid(fmt.Errorf("%s: %v", file, err))
	}
	return workflows.ScheduledInput{Name: rec.Name, File: abs, Notify: n.Notify, UIURL: strings.TrimRight(n.UIURL, "/"),
		Compare: &workflows.ScheduledCompare{Record: rec, Scenario: rec.Scenario, Input: in}}, nil
}

// Edit is what `longhaul schedule update` was asked to change: a nil field
// is kept as the schedule has it.
type Edit struct {
	Cron     []string
	TimeZone *string
	Jitter   *time.Duration
	Catchup  *time.Duration
	// Overlap is parsed with ParseOverlap.
	Overlap *string

	// The fields of the schedule's runs. Duration and Window must be > 0.
	Duration *time.Duration
	Window   *time.Duration
	Provider *string
	// TargetEnv are KEY=VALUE pairs added to the runs' target environment.
	TargetEnv []string
	// FailOn is parsed with thresholds.ParseFailOn.
	FailOn *string

	// Notify and UIURL are the schedule's own (a compare schedule may
	// change them too).
	Notify *string
	UIURL  *string

	// Replace, when set, plans the scenario that replaces the scheduled
	// soak (update NAME FILE). It is called once the fields above are
	// checked, so that a bad flag is reported before FILE is read; its
	// error is returned as it is.
	Replace func() (workflows.ScheduledInput, error)
}

// runFieldsSet reports whether e changes a field of the runs (which a
// compare schedule does not have).
func (e Edit) runFieldsSet() bool {
	return e.Duration != nil || e.Window != nil || e.Provider != nil || e.TargetEnv != nil || e.FailOn != nil
}

// NewChange checks e and turns it into the Change that Update applies.
// Errors in e's values match ErrInvalid and say which flag is wrong; the
// change's Action fails (matching ErrInvalid) when the schedule compares
// builds and e changes its runs, or when the window outlasts the run.
func NewChange(e Edit) (Change, error) {
	ch := Change{Cron: e.Cron, TimeZone: e.TimeZone, Jitter: e.Jitter, Catchup: e.Catchup}
	if e.Overlap != nil {
		ov, err := ParseOverlap(*e.Overlap)
		if err != nil {
			return ch, err
		}
		ch.Overlap = &ov
	}
	var failOn string
	if e.FailOn != nil {
		sev, err := thresholds.ParseFailOn(*e.FailOn)
		if err != nil {
			return ch, invalid(err)
		}
		failOn = string(sev)
	}
	env := map[string]string{}
	for _, kv := range e.TargetEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return ch, invalid(fmt.Errorf("--target-env %q: want KEY=VALUE", kv))
		}
		env[k] = v
	}
	if (e.Duration != nil && *e.Duration <= 0) || (e.Window != nil && *e.Window <= 0) {
		return ch, invalid(fmt.Errorf("--duration and --window must be > 0"))
	}
	var replaced *workflows.ScheduledInput
	if e.Replace != nil {
		in, err := e.Replace()
		if err != nil {
			return ch, err
		}
		replaced = &in
	}
	ch.Action = func(in *workflows.ScheduledInput) error {
		return e.apply(in, replaced, env, failOn)
	}
	return ch, nil
}

// apply edits the scheduled input in: replaced (when not nil) takes its
// place, keeping the schedule's notifications and, unless e sets them, its
// target environment and fail-on; then e's fields are set.
func (e Edit) apply(in *workflows.ScheduledInput, replaced *workflows.ScheduledInput, env map[string]string, failOn string) error {
	if in.Compare != nil && (replaced != nil || e.runFieldsSet()) {
		return fmt.Errorf("%w: update changes only the spec, --notify and --ui-url of a compare schedule; delete it and create it again to change what it compares", ErrInvalid)
	}
	if replaced != nil {
		keep := *in
		*in = *replaced
		in.Notify, in.UIURL = keep.Notify, keep.UIURL
		if e.TargetEnv == nil {
			in.TargetEnv = keep.TargetEnv
		}
		if e.FailOn == nil {
			in.FailOn = keep.FailOn
		}
	}
	set(&in.Duration, e.Duration)
	set(&in.Window, e.Window)
	if in.Window > in.Duration {
		return fmt.Errorf("%w: window %s is longer than the run (%s)", ErrInvalid, in.Window, in.Duration)
	}
	set(&in.Provider, e.Provider)
	if e.TargetEnv != nil {
		if in.TargetEnv == nil {
			in.TargetEnv = map[string]string{}
		}
		for k, v := range env {
			in.TargetEnv[k] = v
		}
	}
	if e.FailOn != nil {
		in.FailOn = failOn
	}
	set(&in.Notify, e.Notify)
	if e.UIURL != nil {
		in.UIURL = strings.TrimRight(*e.UIURL, "/")
	}
	return nil
}
