// Package store keeps longhaul's results: runs, their windows, findings,
// and comparisons of two builds (their rounds are runs). SQLite (a file, WAL mode) is the default; PostgreSQL
// serves a cluster of workers. Both sit behind Store.
//
// Recipe:
//
//  1. Open a DSN: a file path (SQLite) or postgres://... (PostgreSQL). The
//     schema is created or migrated to the current version.
//  2. PutRun when a run starts, PutWindow as each window closes (one
//     transaction each, upsert on (run, incarnation, index)), SetStatus at the end.
//  3. Read back with GetRun, ListRuns, Windows, Findings and Thresholds.
//  4. A comparison: PutComparison when it starts, PutRound as each round
//     starts and ends, PutComparison again with the equivalence result and
//     verdicts, SetComparisonStatus at the end; GetComparison and
//     ListComparisons read them back.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// ErrNotFound is returned when a run or comparison does not exist.
var ErrNotFound = errors.New("not found")

// Status is a run's lifecycle state.
type Status string

// Run statuses. A run is queued while it waits for a measurement slot on a
// worker host (the reason says so), pending until its environment is up,
// running while load is driven, and ends completed, failed (with a reason)
// or cancelled. Skipped is the record of a schedule's firing that started
// nothing (its reason names the run that was still going): it is final
// from the start.
const (
	Queued    Status = "queued"
	Pending   Status = "pending"
	Running   Status = "running"
	Completed Status = "completed"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
	Skipped   Status = "skipped"
)

// Done reports whether s is a final status.
func (s Status) Done() bool { return s == Completed || s == Failed || s == Cancelled || s == Skipped }

// Run is one soak (or drive) and what is known about it.
type Run struct {
	ID     string `json:"id"`
	Name   string `json:"name"` // the scenario's name
	Kind   string `json:"kind"` // "drive", "soak" or "imported"
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"` // why it failed or was cancelled
	// Scenario is the scenario's YAML as given, ${env:...} references unresolved.
	Scenario string `json:"-"`
	// ScenarioDir is the absolute directory of the scenario file on the
	// machine that submitted the run; relative paths in the scenario's
	// environment resolve against it ("" for a scenario given as bytes).
	ScenarioDir string `json:"scenario_dir,omitempty"`
	WorkflowID  string `json:"workflow_id,omitempty"`
	TargetURL   string `json:"target_url,omitempty"`
	// Environment is the provider's description of what it brought up
	// (endpoints and ids), as JSON.
	Environment  json.RawMessage `json:"environment,omitempty"`
	Incarnations int             `json:"incarnations"`
	// FailOn is the severity (warning, critical) at or above which a
	// finding fails the run's gate, as `run --fail-on` gave it ("": none).
	FailOn string `json:"fail_on,omitempty"`
	// Schedule is the name of the schedule that started the run ("" for a
	// run started by hand).
	Schedule string `json:"schedule,omitempty"`
	// Commit is the commit the target's git ref resolved to when the run
	// started ("" when the target is not built from a ref).
	Commit    string    `json:"commit,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Notification is one notification a scheduled run, or a scheduled
// comparison, sent (OK) or failed to send after Attempts tries (Error says
// why). Exactly one of RunID and ComparisonID is set.
type Notification struct {
	RunID        string    `json:"run_id,omitempty"`
	ComparisonID string    `json:"comparison_id,omitempty"`
	URL          string    `json:"url"`
	Events       []string  `json:"events"`
	OK           bool      `json:"ok"`
	Attempts     int       `json:"attempts"`
	Error        string    `json:"error,omitempty"`
	At           time.Time `json:"at"`
}

// Outcome says how the notification went: "sent", "sent, on try 2",
// "not sent after 3 tries: " and the error, or "not sent: " and the error
// when the first try's answer ruled out retrying (a 4xx).
func (n Notification) Outcome() string {
	switch {
	case n.OK && n.Attempts > 1:
		return fmt.Sprintf("sent, on try %d", n.Attempts)
	case n.OK:
		return "sent"
	case n.Attempts > 1:
		return fmt.Sprintf("not sent after %d tries: %s", n.Attempts, n.Error)
	}
	return "not sent: " + n.Error
}

// ListOptions filter ListRuns. Zero values mean no filter; Limit 0 means 100.
type ListOptions struct {
	Status Status
	Name   string // exact scenario name
	// NameContains keeps runs whose name contains it (case-insensitive).
	NameContains string
	Kind         string
	// Schedule keeps the runs (or comparisons) started by that schedule.
	Schedule string
	Limit    int
	// Offset skips that many runs of the ordered list (pagination).
	Offset int
}

// RunCounts are the per-run figures a list of runs shows.
type RunCounts struct {
	Windows int // window rows, gaps included
	Gaps    int
	// Findings counts the run's findings by severity.
	Findings map[analysis.Severity]int
}

// SpanQuery selects windows of a run for a chart: indexes in
// [FromIndex, ToIndex) (ToIndex 0: to the end), merged into at most about
// MaxPoints spans (0: DefaultMaxPoints). Ops asks for the ops' figures too.
type SpanQuery struct {
	FromIndex, ToIndex int
	MaxPoints          int
	Ops                bool
}

// DefaultMaxPoints is the resolution of a chart when SpanQuery.MaxPoints is 0.
const DefaultMaxPoints = 2000

// Span is consecutive windows merged exactly into one (window.Combine), or
// a single window. Window.Index is the first index; histograms are left
// out (their percentiles are in LatencyMs).
type Span struct {
	window.Window
	LastIndex       int
	LastIncarnation int
	Windows         int // windows merged, gaps included
	Gaps            int
}

// WindowQuery selects windows of a run. Incarnation < 0 means all
// incarnations; FromIndex skips windows with a lower index.
type WindowQuery struct {
	Incarnation int
	FromIndex   int
}

// AllWindows selects every window of a run.
var AllWindows = WindowQuery{Incarnation: -1}

// Store is the result store. Implementations are safe for concurrent use.
type Store interface {
	// PutRun inserts or replaces the run row.
	PutRun(ctx context.Context, r Run) error
	// GetRun returns the run or ErrNotFound.
	GetRun(ctx context.Context, id string) (Run, error)
	// ListRuns returns runs, newest first.
	ListRuns(ctx context.Context, opts ListOptions) ([]Run, error)
	// CountRuns counts the runs ListRuns would return without Limit and Offset.
	CountRuns(ctx context.Context, opts ListOptions) (int, error)
	// Counts returns the window and finding counts of the given runs (a run
	// with neither is absent from the map).
	Counts(ctx context.Context, runIDs []string) (map[string]RunCounts, error)
	// SetStatus records a status change; a final status also sets EndedAt,
	// running sets StartedAt when it is unset.
	SetStatus(ctx context.Context, id string, s Status, reason string, at time.Time) error

	// PutWindow writes one window in one transaction, replacing any row with
	// the same (run, incarnation, index).
	PutWindow(ctx context.Context, w window.Window) error
	// Windows returns the run's windows ordered by incarnation then index.
	Windows(ctx context.Context, runID string, q WindowQuery) ([]window.Window, error)
	// Spans returns the run's windows in q's range ordered by index, merged
	// into at most about q.MaxPoints spans of 8^L windows each (L the
	// smallest level that fits; at most 3), from the rollups PutWindow keeps
	// where they are complete, merged on the fly elsewhere. A range that fits
	// gives the windows themselves (full resolution).
	Spans(ctx context.Context, runID string, q SpanQuery) ([]Span, error)

	// PutFindings replaces the run's findings.
	PutFindings(ctx context.Context, runID string, fs []analysis.Finding) error
	// Findings returns the run's findings in the order they were put.
	Findings(ctx context.Context, runID string) ([]analysis.Finding, error)

	// PutThresholds replaces the run's judged thresholds.
	PutThresholds(ctx context.Context, runID string, rs []thresholds.Result) error
	// Thresholds returns the run's judged thresholds in the order they were put.
	Thresholds(ctx context.Context, runID string) ([]thresholds.Result, error)

	// PutNotification records one notification of the run, or of the
	// comparison when n.ComparisonID is set (sent or not); ErrNotFound when
	// that run or comparison does not exist.
	PutNotification(ctx context.Context, n Notification) error
	// Notifications returns the run's notifications in the order they were put.
	Notifications(ctx context.Context, runID string) ([]Notification, error)

	Comparisons
	Slots
	Profiles
	Logs

	Close() error
}
