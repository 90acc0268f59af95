package store

import (
	"context"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
)

// Side names one of the two builds of a comparison.
type Side string

// The sides of a comparison: A is the baseline, B the candidate.
const (
	SideA Side = "A"
	SideB Side = "B"
)

// Build is one side of a comparison: a git ref of the scenario's build, an
// image, or neither (the scenario's own target), plus environment variables
// for the target.
type Build struct {
	// Ref is the git ref as given (target.build.ref of this side).
	Ref string `json:"ref,omitempty"`
	// Commit is what Ref resolved to when the side was built.
	Commit string `json:"commit,omitempty"`
	// Image replaces the scenario's target with this image.
	Image string `json:"image,omitempty"`
	// Env is added to the target's environment on this side.
	Env map[string]string `json:"env,omitempty"`
	// Artifact is where the built target is cached (an image tag or a
	// directory under the data directory), set once built.
	Artifact string `json:"artifact,omitempty"`
}

// Round is one timed round of a comparison: a soak of one side with a fresh
// environment, run as its own run (RunID).
type Round struct {
	// Index is the round's position in the order they run (0-based,
	// unique within the comparison; reruns get new indexes).
	Index int `json:"index"`
	// Pair is the pair the round belongs to (0-based); both rounds of a
	// pair share Seed.
	Pair int  `json:"pair"`
	Side Side `json:"side"`
	// RunID is the round's run (empty until it starts).
	RunID string `json:"run_id,omitempty"`
	Seed  int64  `json:"seed"`
	// Status is the round's run status (pending until it starts).
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// ForeignCPU is the share of the host's CPU (0–1 of all cores) that was
	// busy with work other than the target, its database and longhaul
	// while the round ran; Disturbed is set when it was above the threshold.
	ForeignCPU float64 `json:"foreign_cpu"`
	Disturbed  bool    `json:"disturbed"`
	// Superseded is set on the rounds of a pair that was rerun (its
	// disturbed rounds); the verdicts leave them out.
	Superseded bool      `json:"superseded,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
}

// Comparison is an interleaved comparison of two builds: its settings, its
// rounds (each a run), the response-equivalence check and the verdicts.
type Comparison struct {
	ID   string `json:"id"`
	Name string `json:"name"` // the scenario's name
	// Schedule is the schedule that started the comparison ("" for one
	// started by hand).
	Schedule string `json:"schedule,omitempty"`
	Status   Status `json:"status"`
	Reason   string `json:"reason,omitempty"`
	// Scenario is the scenario's YAML as given, ${env:...} unresolved.
	Scenario    string `json:"-"`
	ScenarioDir string `json:"scenario_dir,omitempty"`
	WorkflowID  string `json:"workflow_id,omitempty"`
	A           Build  `json:"a"`
	B           Build  `json:"b"`
	// Order is "abba", "ab" or "random".
	Order string `json:"order"`
	// Pairs is the number of pairs asked for; in a comparison that adds
	// pairs until decided (MaxPairs > 0), the number it took (recorded with
	// each look).
	Pairs int `json:"pairs"`
	// MaxPairs and MaxDuration bound a comparison that adds pairs until
	// its primary metrics are decided (0: a fixed number of pairs);
	// Stopped says why it stopped: "decided", "max_pairs" or
	// "max_duration".
	MaxPairs    int           `json:"max_pairs,omitempty"`
	MaxDuration time.Duration `json:"max_duration,omitempty"`
	Stopped     string        `json:"stopped,omitempty"`
	// History is how many earlier comparisons of the scenario on the host
	// the noise is pooled with, recorded when the rounds start (nil: not
	// looked up, as in a fixed comparison).
	History *int `json:"history,omitempty"`
	// Looks are the states of a sequential comparison's primary metrics,
	// one after each pair from the third on (analysis.CompareSequential).
	Looks         []Look        `json:"looks,omitempty"`
	Provider      string        `json:"provider,omitempty"`
	RoundDuration time.Duration `json:"round_duration"`
	Window        time.Duration `json:"window"`
	Warmup        time.Duration `json:"warmup"`
	// Seed is the comparison's base seed; each pair's seed derives from it.
	Seed int64 `json:"seed"`
	// Host is the host queue every round ran on.
	Host string `json:"host,omitempty"`
	// Rounds are ordered by Index.
	Rounds      []Round            `json:"rounds"`
	Equivalence equivalence.Result `json:"equivalence"`
	Verdicts    []analysis.Verdict `json:"verdicts"`
	CreatedAt   time.Time          `json:"created_at"`
	StartedAt   time.Time          `json:"started_at,omitzero"`
	EndedAt     time.Time          `json:"ended_at,omitzero"`
}

// Look is a sequential comparison's state after Pairs pairs: the primary
// metrics' verdicts at that look, and which of them are still undecided.
type Look struct {
	Pairs     int                `json:"pairs"`
	Verdicts  []analysis.Verdict `json:"verdicts"`
	Undecided []string           `json:"undecided,omitempty"`
}

// SameBuild reports whether both sides are the same build with the same
// environment: an A-vs-A comparison, which measures the machine's noise
// floor. Once both sides are built their commits decide, not the refs'
// spelling.
func (c Comparison) SameBuild() bool {
	sameCode := c.A.Ref == c.B.Ref
	if c.A.Commit != "" && c.B.Commit != "" {
		sameCode = c.A.Commit == c.B.Commit
	}
	if !sameCode || c.A.Image != c.B.Image || len(c.A.Env) != len(c.B.Env) {
		return false
	}
	for k, v := range c.A.Env {
		if w, ok := c.B.Env[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Comparisons is the part of the store that keeps comparisons. Store
// includes it.
type Comparisons interface {
	// PutComparison inserts or replaces the comparison row and upserts the
	// rounds in c.Rounds (rounds already stored and not in c are kept).
	PutComparison(ctx context.Context, c Comparison) error
	// GetComparison returns the comparison with its rounds, or ErrNotFound.
	GetComparison(ctx context.Context, id string) (Comparison, error)
	// ListComparisons returns comparisons with their rounds, newest first
	// (ListOptions.Status, Name and Schedule filter; Limit 0 means 100,
	// Offset pages).
	ListComparisons(ctx context.Context, opts ListOptions) ([]Comparison, error)
	// CountComparisons counts the comparisons ListComparisons would return
	// without Limit and Offset, without reading them or their rounds.
	CountComparisons(ctx context.Context, opts ListOptions) (int, error)
	// PutRound inserts or replaces one round (by Index) of a comparison;
	// ErrNotFound if the comparison does not exist.
	PutRound(ctx context.Context, comparisonID string, r Round) error
	// SetComparisonStatus records a status change, like SetStatus for runs.
	SetComparisonStatus(ctx context.Context, id string, s Status, reason string, at time.Time) error
	// ComparisonNotifications returns the comparison's notifications in
	// the order they were put (PutNotification with ComparisonID).
	ComparisonNotifications(ctx context.Context, comparisonID string) ([]Notification, error)
	// RoundOfRun returns the comparison id and round a run belongs to, or
	// ErrNotFound when the run is not a round of any comparison.
	RoundOfRun(ctx context.Context, runID string) (string, Round, error)
}
