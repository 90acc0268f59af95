package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/longhaul-dev/longhaul/charts"
)

// ListJSON is the JSON of `longhaul schedule list --format json`.
type ListJSON struct {
	Type      string     `json:"type"` // "schedules"
	Schedules []Schedule `json:"schedules"`
}

// ScheduleJSON is the JSON of `longhaul schedule describe --format json`.
type ScheduleJSON struct {
	Type string `json:"type"` // "schedule"
	Schedule
}

// WriteListJSON writes the schedules as one JSON object.
func WriteListJSON(w io.Writer, ss []Schedule) error {
	if ss == nil {
		ss = []Schedule{}
	}
	return writeJSON(w, ListJSON{Type: "schedules", Schedules: ss})
}

// WriteJSON writes one schedule as a JSON object.
func WriteJSON(w io.Writer, s Schedule) error {
	return writeJSON(w, ScheduleJSON{Type: "schedule", Schedule: s})
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// WriteList writes one line per schedule: name, cron, next firing, state,
// runs started and firings skipped.
func WriteList(w io.Writer, ss []Schedule) error {
	if len(ss) == 0 {
		_, err := fmt.Fprintln(w, "no schedules (create one with: longhaul schedule create NAME --cron EXPR FILE)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tNEXT\tSTATE\tRUNS\tSKIPPED\tSCENARIO")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, strings.Join(s.Spec.Cron, "; "), next(s), state(s), s.Actions, s.SkippedOverlap, s.Action.Scenario)
	}
	return tw.Flush()
}

func next(s Schedule) string {
	if s.Paused || len(s.NextRuns) == 0 {
		return "-"
	}
	return s.NextRuns[0].UTC().Format("2006-01-02 15:04:05 UTC")
}

func state(s Schedule) string {
	if s.Paused {
		return "paused"
	}
	return "active"
}

// Write writes one schedule, a field a line.
func Write(w io.Writer, s Schedule) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("schedule", s.Name)
	row("state", state(s)+noteSuffix(s.Note))
	row("cron", strings.Join(s.Spec.Cron, "; "))
	tz := s.Spec.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	row("time zone", tz)
	if s.Spec.Jitter > 0 {
		row("jitter", s.Spec.Jitter.String())
	}
	row("overlap", string(s.Spec.Overlap))
	row("catch-up", s.Spec.Catchup.String())
	if len(s.NextRuns) > 0 && !s.Paused {
		var ns []string
		for _, t := range s.NextRuns[:min(3, len(s.NextRuns))] {
			ns = append(ns, t.UTC().Format(time.DateTime))
		}
		row("next", strings.Join(ns, ", ")+" UTC")
	}
	a := s.Action
	what := a.Scenario
	if a.File != "" {
		what += " (" + a.File + ")"
	}
	row("scenario", what)
	if c := a.Compare; c != nil {
		row("compare", fmt.Sprintf("A %s vs B %s, %d pairs of %s rounds in %s windows", c.A, c.B, c.Pairs, c.RoundDuration, a.Window))
	} else {
		row("duration", a.Duration.String()+" in "+a.Window.String()+" windows")
	}
	if a.Provider != "" {
		row("provider", a.Provider)
	}
	for _, k := range slices.Sorted(maps.Keys(a.TargetEnv)) {
		row("target env", k+"="+a.TargetEnv[k])
	}
	if a.FailOn != "" {
		row("fail on", a.FailOn)
	}
	if a.Notify != "" {
		row("notify", a.Notify)
	}
	row("runs", fmt.Sprintf("%d started, %d skipped (overlap; longhaul history %s lists them), %d missed (catch-up)", s.Actions, s.SkippedOverlap, s.Name, s.MissedCatchup))
	for _, id := range s.Running {
		row("running", id)
	}
	for _, f := range s.Recent {
		row("fired", f.ScheduledAt.UTC().Format(time.DateTime)+" UTC  "+f.WorkflowID)
	}
	return tw.Flush()
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// Verb is a change of a schedule's state by name: pause, unpause, trigger
// or delete.
type Verb string

// Verbs.
const (
	VerbPause   Verb = "pause"
	VerbUnpause Verb = "unpause"
	VerbTrigger Verb = "trigger"
	VerbDelete  Verb = "delete"
)

var pastTense = map[Verb]string{VerbPause: "paused", VerbUnpause: "unpaused", VerbTrigger: "triggered", VerbDelete: "deleted"}

// WriteDone says that verb was done to the schedule name: "schedule nightly
// paused", or as JSON {"type":"schedule_pause","schedule":"nightly","ok":true}.
func WriteDone(w io.Writer, verb Verb, name string, asJSON bool) error {
	var err error
	if asJSON {
		_, err = fmt.Fprintf(w, "{\"type\":\"schedule_%s\",\"schedule\":%q,\"ok\":true}\n", verb, name)
	} else {
		_, err = fmt.Fprintf(w, "schedule %s %s\n", name, pastTense[verb])
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// Show describes the schedule name and writes it to w: as text (Write) or,
// when asJSON, as one JSON object (WriteJSON). Describe's errors are
// returned as they are (ErrNotFound ...).
func (c *Client) Show(ctx context.Context, w io.Writer, name string, asJSON bool) error {
	s, err := c.Describe(ctx, name)
	if err != nil {
		return err
	}
	if asJSON {
		return WriteJSON(w, s)
	}
	return Write(w, s)
}

// Summary is s as the UI's schedules page lists it.
func Summary(s Schedule) charts.ScheduleSummary {
	sum := charts.ScheduleSummary{Name: s.Name, Cron: strings.Join(s.Spec.Cron, "; "), Paused: s.Paused, Scenario: s.Action.Scenario}
	if len(s.NextRuns) > 0 {
		sum.Next = s.NextRuns[0]
	}
	return sum
}

// Summaries lists the schedules for the UI's schedules page: its method
// value is a charts.Schedules.
func (c *Client) Summaries(ctx context.Context) ([]charts.ScheduleSummary, error) {
	ss, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]charts.ScheduleSummary, 0, len(ss))
	for _, s := range ss {
		out = append(out, Summary(s))
	}
	return out, nil
}
