// Package schedule manages longhaul's nightly soaks as Temporal Schedules,
// through the SDK's ScheduleClient: each firing starts a
// workflows.ScheduledSoakWorkflow, whose run carries the schedule's name.
//
// Recipe:
//
//  1. New(c) over a connected client (the embedded server of `longhaul dev`
//     or a cluster). A schedule fires only while a server and a worker run.
//  2. Create(ctx, name, Spec{Cron: []string{"0 2 * * *"}}, action): the
//     action is the ScheduledInput `longhaul run` would have submitted.
//  3. List, Describe, Update, Pause, Unpause, Trigger and Delete by name;
//     Write and WriteList print them as text or JSON. SoakInput and
//     CompareInput build a create's action; NewChange turns the flags of an
//     update (an Edit) into the Change that Update applies.
//
// This package imports the Temporal SDK (not the server): it is the
// client-side edge, like cmd/longhaul, kept out of cmd so it has its tests.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// Defaults of a Spec's zero fields.
const (
	// DefaultOverlap: a soak still running when the next is due means the
	// next is skipped (and counted as skipped): two soaks on one host
	// measure each other.
	DefaultOverlap = OverlapSkip
	// DefaultCatchup: a firing missed while the server was down (a laptop
	// asleep at 02:00) still runs if the server is back within the hour.
	DefaultCatchup = time.Hour
)

// IDPrefix starts the Temporal schedule id of every longhaul schedule
// (IDPrefix + name), so that longhaul's schedules are told from others on a
// shared cluster.
const IDPrefix = "longhaul-"

// Errors callers branch on.
var (
	ErrNotFound = errors.New("no such schedule")
	ErrExists   = errors.New("schedule already exists")
	// ErrInvalid: the spec or name is not acceptable (the message says why).
	ErrInvalid = errors.New("invalid schedule")
)

// Overlap is what happens when a firing is due while the last run is still
// going.
type Overlap string

// Overlap policies.
const (
	OverlapSkip        Overlap = "skip"
	OverlapBufferOne   Overlap = "buffer-one"
	OverlapCancelOther Overlap = "cancel-other"
)

var overlapPolicies = map[Overlap]enumspb.ScheduleOverlapPolicy{
	OverlapSkip:        enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	OverlapBufferOne:   enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	OverlapCancelOther: enumspb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER,
}

// ParseOverlap checks an --overlap value ("" is DefaultOverlap).
func ParseOverlap(s string) (Overlap, error) {
	if s == "" {
		return DefaultOverlap, nil
	}
	if _, ok := overlapPolicies[Overlap(s)]; !ok {
		return "", fmt.Errorf("%w: overlap %q: use skip, buffer-one or cancel-other", ErrInvalid, s)
	}
	return Overlap(s), nil
}

func overlapName(p enumspb.ScheduleOverlapPolicy) Overlap {
	for k, v := range overlapPolicies {
		if v == p {
			return k
		}
	}
	return Overlap(strings.ToLower(strings.TrimPrefix(p.String(), "SCHEDULE_OVERLAP_POLICY_")))
}

// Spec is when a schedule fires.
type Spec struct {
	// Cron expressions (5 fields, @daily, @every 1h ...); at least one.
	Cron []string `json:"cron"`
	// TimeZone the expressions are read in (IANA name; "" is UTC).
	TimeZone string `json:"time_zone,omitempty"`
	// Jitter delays each firing by a random amount up to it.
	Jitter time.Duration `json:"jitter,omitempty"`
	// Overlap is DefaultOverlap when "".
	Overlap Overlap `json:"overlap"`
	// Catchup is how late a missed firing may still run (DefaultCatchup
	// when 0).
	Catchup time.Duration `json:"catchup"`
}

func (s Spec) withDefaults() Spec {
	if s.Overlap == "" {
		s.Overlap = DefaultOverlap
	}
	if s.Catchup <= 0 {
		s.Catchup = DefaultCatchup
	}
	return s
}

// Validate checks what can be checked without the server (which parses the
// cron expressions); an Overlap it does not know is reported first.
func (s Spec) Validate() error {
	if _, err := ParseOverlap(string(s.Overlap)); err != nil {
		return err
	}
	if len(s.Cron) == 0 {
		return fmt.Errorf("%w: give a --cron expression (e.g. \"0 2 * * *\")", ErrInvalid)
	}
	for _, c := range s.Cron {
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("%w: empty cron expression", ErrInvalid)
		}
	}
	if s.TimeZone != "" {
		if _, err := time.LoadLocation(s.TimeZone); err != nil {
			return fmt.Errorf("%w: time zone %q: %v", ErrInvalid, s.TimeZone, err)
		}
	}
	if s.Jitter < 0 || s.Catchup < 0 {
		return fmt.Errorf("%w: jitter and catch-up must be ≥ 0", ErrInvalid)
	}
	return nil
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ValidateName checks a schedule name: letters, digits, '.', '_' and '-',
// up to 100 characters.
func ValidateName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("%w: name %q: use letters, digits, '.', '_' and '-' (up to 100)", ErrInvalid, name)
	}
	return nil
}

// Schedule is a schedule as Describe and List return it.
type Schedule struct {
	Name   string `json:"name"`
	Spec   Spec   `json:"spec"`
	Paused bool   `json:"paused"`
	Note   string `json:"note,omitempty"`
	// Action is the run each firing starts (the scenario's YAML left out
	// of JSON: File names it).
	Action Action `json:"action"`
	// NextRuns are the next firing times (up to 10).
	NextRuns []time.Time `json:"next_runs"`
	// Recent are the latest firings, oldest first.
	Recent []Firing `json:"recent,omitempty"`
	// Running lists the workflow ids of firings still running.
	Running []string `json:"running,omitempty"`
	// Actions counts the firings that started a run; SkippedOverlap those
	// skipped because a run was still going; MissedCatchup those missed
	// for longer than the catch-up window.
	Actions        int       `json:"actions"`
	SkippedOverlap int       `json:"skipped_overlap"`
	MissedCatchup  int       `json:"missed_catchup"`
	CreatedAt      time.Time `json:"created_at,omitzero"`
	UpdatedAt      time.Time `json:"updated_at,omitzero"`
}

// Action is the JSON view of a schedule's ScheduledInput.
type Action struct {
	File      string            `json:"file,omitempty"`
	Scenario  string            `json:"scenario"` // the scenario's name
	Duration  time.Duration     `json:"duration_ns"`
	Window    time.Duration     `json:"window_ns"`
	Provider  string            `json:"provider,omitempty"`
	TargetEnv map[string]string `json:"target_env,omitempty"`
	FailOn    string            `json:"fail_on,omitempty"`
	Notify    string            `json:"notify,omitempty"`
	// Compare is set for a nightly comparison of two builds.
	Compare *CompareAction `json:"compare,omitempty"`
}

// CompareAction is what a compare schedule compares.
type CompareAction struct {
	// A and B name each side: its git ref, image or env.
	A             string        `json:"a"`
	B             string        `json:"b"`
	Pairs         int           `json:"pairs"`
	RoundDuration time.Duration `json:"round_duration_ns"`
}

func actionOf(in workflows.ScheduledInput) Action {
	a := Action{
		File: in.File, Scenario: in.Name, Duration: in.Duration, Window: in.Window, Provider: in.Provider,
		TargetEnv: in.TargetEnv, FailOn: in.FailOn, Notify: in.Notify,
	}
	if c := in.Compare; c != nil {
		a.Compare = &CompareAction{A: side(c.Record.A), B: side(c.Record.B), Pairs: c.Input.Pairs, RoundDuration: c.Input.RoundDuration}
		a.Duration, a.Window = c.Input.RoundDuration, c.Input.Window
	}
	return a
}

// side names a comparison side: its ref, image and env.
func side(b store.Build) string {
	var parts []string
	if b.Ref != "" {
		parts = append(parts, b.Ref)
	}
	if b.Image != "" {
		parts = append(parts, b.Image)
	}
	for _, k := range slices.Sorted(maps.Keys(b.Env)) {
		parts = append(parts, k+"="+b.Env[k])
	}
	if len(parts) == 0 {
		return "the scenario's target"
	}
	return strings.Join(parts, " ")
}

// Firing is one action a schedule took.
type Firing struct {
	ScheduledAt time.Time `json:"scheduled_at"`
	StartedAt   time.Time `json:"started_at"`
	WorkflowID  string    `json:"workflow_id,omitempty"`
}

// Client manages longhaul's schedules on one Temporal namespace.
type Client struct {
	c  client.Client
	sc client.ScheduleClient
	dc converter.DataConverter
}

// New returns a Client over c.
func New(c client.Client) *Client {
	return &Client{c: c, sc: c.ScheduleClient(), dc: converter.GetDefaultDataConverter()}
}

var _ activities.Firings = (*Client)(nil)

// Firings returns the schedule name's skip count and last actions, and the
// times its spec matches in (from, to] (asked of the server only when from
// is before to), for the records of skipped firings (activities.Firings).
// namespace is the schedule's, which the SDK's client does not tell.
func (c *Client) Firings(ctx context.Context, namespace, name string, from, to time.Time) (activities.FiringLog, error) {
	var out activities.FiringLog
	d, err := c.handle(ctx, name).Describe(ctx)
	if err != nil {
		return out, wrap(name, "describe", err)
	}
	out.SkippedOverlap = d.Info.NumActionsSkippedOverlap
	for _, r := range d.Info.RecentActions {
		f := activities.TakenFiring{At: r.ScheduleTime}
		if r.StartWorkflowResult != nil {
			f.WorkflowID = r.StartWorkflowResult.WorkflowID
		}
		out.Taken = append(out.Taken, f)
	}
	if !from.Before(to) {
		return out, nil
	}
	res, err := c.c.WorkflowService().ListScheduleMatchingTimes(ctx, &workflowservice.ListScheduleMatchingTimesRequest{
		Namespace: namespace, ScheduleId: IDPrefix + name, StartTime: timestamppb.New(from), EndTime: timestamppb.New(to),
	})
	if err != nil {
		return out, wrap(name, "list matching times of", err)
	}
	for _, t := range res.StartTime {
		if at := t.AsTime(); at.After(from) {
			out.Matching = append(out.Matching, at)
		}
	}
	return out, nil
}

// Create creates the schedule name. in.Schedule and in.Cron are set from
// name and spec.
func (c *Client) Create(ctx context.Context, name string, spec Spec, in workflows.ScheduledInput, paused bool) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	spec = spec.withDefaults()
	if err := spec.Validate(); err != nil {
		return err
	}
	in.Schedule, in.Cron = name, spec.Cron
	_, err := c.sc.Create(ctx, client.ScheduleOptions{
		ID:            IDPrefix + name,
		Spec:          sdkSpec(spec),
		Action:        action(name, in),
		Overlap:       overlapPolicies[spec.Overlap],
		CatchupWindow: spec.Catchup,
		Paused:        paused,
		Note:          "created by longhaul",
	})
	return wrap(name, "create", err)
}

func sdkSpec(s Spec) client.ScheduleSpec {
	return client.ScheduleSpec{CronExpressions: slices.Clone(s.Cron), TimeZoneName: s.TimeZone, Jitter: s.Jitter}
}

func action(name string, in workflows.ScheduledInput) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		// The server appends the firing time to this id.
		ID:        "longhaul-scheduled-" + name,
		Workflow:  workflows.ScheduledWorkflowName,
		Args:      []any{in},
		TaskQueue: activities.GeneralQueue,
	}
}

// wrap maps the server's errors to this package's.
func wrap(name, op string, err error) error {
	if err == nil {
		return nil
	}
	var nf *serviceerror.NotFound
	var ia *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("%s %s: %w", op, name, ErrNotFound)
	case errors.Is(err, temporal.ErrScheduleAlreadyRunning):
		return fmt.Errorf("%s %s: %w", op, name, ErrExists)
	case errors.As(err, &ia):
		return fmt.Errorf("%s %s: %w: %s", op, name, ErrInvalid, ia.Message)
	}
	return fmt.Errorf("%s schedule %s: %w", op, name, err)
}

func (c *Client) handle(ctx context.Context, name string) client.ScheduleHandle {
	return c.sc.GetHandle(ctx, IDPrefix+name)
}

// Describe returns the schedule name.
func (c *Client) Describe(ctx context.Context, name string) (Schedule, error) {
	d, err := c.handle(ctx, name).Describe(ctx)
	if err != nil {
		return Schedule{}, wrap(name, "describe", err)
	}
	in, err := c.input(d)
	if err != nil {
		return Schedule{}, fmt.Errorf("describe %s: %w", name, err)
	}
	s := Schedule{
		Name: name, Action: actionOf(in), Spec: Spec{Cron: in.Cron},
		NextRuns: d.Info.NextActionTimes, Actions: d.Info.NumActions,
		SkippedOverlap: d.Info.NumActionsSkippedOverlap, MissedCatchup: d.Info.NumActionsMissedCatchupWindow,
		CreatedAt: unset(d.Info.CreatedAt), UpdatedAt: unset(d.Info.LastUpdateAt),
	}
	if sp := d.Schedule.Spec; sp != nil {
		s.Spec.TimeZone, s.Spec.Jitter = sp.TimeZoneName, sp.Jitter
	}
	if p := d.Schedule.Policy; p != nil {
		s.Spec.Overlap, s.Spec.Catchup = overlapName(p.Overlap), p.CatchupWindow
	}
	if st := d.Schedule.State; st != nil {
		s.Paused, s.Note = st.Paused, st.Note
	}
	s.Recent = firings(d.Info.RecentActions)
	for _, r := range d.Info.RunningWorkflows {
		s.Running = append(s.Running, r.WorkflowID)
	}
	return s, nil
}

// unset is t, or the zero time for the Unix epoch (a proto timestamp never set).
func unset(t time.Time) time.Time {
	if t.Unix() == 0 {
		return time.Time{}
	}
	return t
}

func firings(rs []client.ScheduleActionResult) []Firing {
	var out []Firing
	for _, r := range rs {
		f := Firing{ScheduledAt: r.ScheduleTime, StartedAt: r.ActualTime}
		if r.StartWorkflowResult != nil {
			f.WorkflowID = r.StartWorkflowResult.WorkflowID
		}
		out = append(out, f)
	}
	return out
}

// input decodes the schedule's action.
func (c *Client) input(d *client.ScheduleDescription) (workflows.ScheduledInput, error) {
	var in workflows.ScheduledInput
	wa, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(wa.Args) != 1 {
		return in, errors.New("not a longhaul schedule (its action is not one scheduled soak)")
	}
	switch a := wa.Args[0].(type) {
	case workflows.ScheduledInput:
		return a, nil
	case *commonpb.Payload:
		if err := c.dc.FromPayload(a, &in); err != nil {
			return in, fmt.Errorf("decode the schedule's action: %w", err)
		}
		return in, nil
	default:
		return in, fmt.Errorf("decode the schedule's action: unexpected %T", a)
	}
}

// List returns longhaul's schedules, by name.
func (c *Client) List(ctx context.Context) ([]Schedule, error) {
	it, err := c.sc.List(ctx, client.ScheduleListOptions{PageSize: 100})
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	var out []Schedule
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("list schedules: %w", err)
		}
		name, ok := strings.CutPrefix(e.ID, IDPrefix)
		if !ok || e.WorkflowType.Name != workflows.ScheduledWorkflowName {
			continue
		}
		// The list entry lacks the action and policies (and is eventually
		// consistent): describe each, skipping one deleted meanwhile.
		s, err := c.Describe(ctx, name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Schedule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Change is what Update changes; nil fields are kept.
type Change struct {
	Cron     []string
	TimeZone *string
	Jitter   *time.Duration
	Overlap  *Overlap
	Catchup  *time.Duration
	// Action edits the scheduled input in place (nil: kept).
	Action func(*workflows.ScheduledInput) error
}

// Update changes the schedule name's spec, policies or action. Runs already
// started keep the action they started with.
func (c *Client) Update(ctx context.Context, name string, ch Change) error {
	err := c.handle(ctx, name).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := u.Description.Schedule
			in, err := c.input(&u.Description)
			if err != nil {
				return nil, err
			}
			spec := Spec{Cron: in.Cron, Overlap: DefaultOverlap, Catchup: DefaultCatchup}
			if sch.Spec != nil {
				spec.TimeZone, spec.Jitter = sch.Spec.TimeZoneName, sch.Spec.Jitter
			}
			if sch.Policy != nil {
				spec.Overlap, spec.Catchup = overlapName(sch.Policy.Overlap), sch.Policy.CatchupWindow
			}
			if ch.Cron != nil {
				spec.Cron = ch.Cron
			}
			set(&spec.TimeZone, ch.TimeZone)
			set(&spec.Jitter, ch.Jitter)
			set(&spec.Overlap, ch.Overlap)
			set(&spec.Catchup, ch.Catchup)
			spec = spec.withDefaults()
			if err := spec.Validate(); err != nil {
				return nil, err
			}
			if ch.Action != nil {
				if err := ch.Action(&in); err != nil {
					return nil, err
				}
			}
			in.Schedule, in.Cron = name, spec.Cron
			sdk := sdkSpec(spec)
			sch.Spec = &sdk
			sch.Action = action(name, in)
			if sch.Policy == nil {
				sch.Policy = &client.SchedulePolicies{}
			}
			sch.Policy.Overlap, sch.Policy.CatchupWindow = overlapPolicies[spec.Overlap], spec.Catchup
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		},
	})
	if errors.Is(err, ErrInvalid) {
		return fmt.Errorf("update %s: %w", name, err)
	}
	return wrap(name, "update", err)
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Pause stops the schedule name from firing until Unpause.
func (c *Client) Pause(ctx context.Context, name, note string) error {
	if note == "" {
		note = "paused by longhaul"
	}
	return wrap(name, "pause", c.handle(ctx, name).Pause(ctx, client.SchedulePauseOptions{Note: note}))
}

// Unpause lets the schedule name fire again.
func (c *Client) Unpause(ctx context.Context, name, note string) error {
	if note == "" {
		note = "unpaused by longhaul"
	}
	return wrap(name, "unpause", c.handle(ctx, name).Unpause(ctx, client.ScheduleUnpauseOptions{Note: note}))
}

// Trigger fires the schedule name now, under its overlap policy (a run still
// going makes a skip schedule skip this one too).
func (c *Client) Trigger(ctx context.Context, name string) error {
	return wrap(name, "trigger", c.handle(ctx, name).Trigger(ctx, client.ScheduleTriggerOptions{}))
}

// Delete removes the schedule name; runs it started go on.
func (c *Client) Delete(ctx context.Context, name string) error {
	return wrap(name, "delete", c.handle(ctx, name).Delete(ctx))
}

// Do does verb to the schedule name; note is why (kept with a pause or
// unpause, shown by describe).
func (c *Client) Do(ctx context.Context, verb Verb, name, note string) error {
	switch verb {
	case VerbPause:
		return c.Pause(ctx, name, note)
	case VerbUnpause:
		return c.Unpause(ctx, name, note)
	case VerbTrigger:
		return c.Trigger(ctx, name)
	case VerbDelete:
		return c.Delete(ctx, name)
	}
	return fmt.Errorf("%w: unknown action %q", ErrInvalid, verb)
}
