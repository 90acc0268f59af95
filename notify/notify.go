// Package notify tells someone the morning after that a scheduled soak
// needs a look: a JSON POST to a URL when a run ends with a warning-or-worse
// finding, fails, or shows a new change point. A scheduled comparison
// (a nightly A/B) is told the same way: when it fails, when a metric's
// verdict is worse (B regressed against A), or when its B/A ratios show a
// new change point.
//
// Recipe:
//
//  1. Events(run, findings, newPoints) says what happened worth telling (none:
//     send nothing); CompareEvents(comparison, newPoints) for a comparison.
//  2. Build the Payload and Post it. A 2xx answer is delivered; a 5xx, 408,
//     429 or a network error is worth retrying (the workflow's activity
//     retries with backoff); any other answer is ErrRejected.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
)

// Events of a notification.
const (
	EventFindings    = "findings"     // a warning or critical finding
	EventFailed      = "failed"       // the run failed or was cancelled
	EventChangePoint = "change_point" // a new change point in the schedule's history
	EventGateFailed  = "gate_failed"  // a completed run failed its gate (a threshold, or --fail-on)
	EventWorse       = "worse"        // a comparison's verdict: B is worse than A on a metric
)

// Kinds of payload: what the schedule's firing was.
const (
	KindSoak    = "soak"
	KindCompare = "compare"
)

// Type is the payload's "type".
const Type = "longhaul.notification"

// Payload is the body of a notification: of a run (RunID) or, Kind
// KindCompare, of a comparison (ComparisonID, CommitA, CommitB, Verdicts;
// Commit is then CommitB's, the candidate that moves from night to night).
type Payload struct {
	Type string `json:"type"`
	// Kind is KindSoak or KindCompare ("" in notifications sent before
	// comparisons had any: a soak's).
	Kind         string       `json:"kind,omitempty"`
	Events       []string     `json:"events"`
	Schedule     string       `json:"schedule"`
	RunID        string       `json:"run_id,omitempty"`
	ComparisonID string       `json:"comparison_id,omitempty"`
	Commit       string       `json:"commit,omitempty"`
	CommitA      string       `json:"commit_a,omitempty"`
	CommitB      string       `json:"commit_b,omitempty"`
	Status       store.Status `json:"status"`
	Reason       string       `json:"reason,omitempty"`
	// Verdicts are a comparison's worse verdicts (B regressed against A).
	Verdicts []Verdict `json:"verdicts,omitempty"`
	// Findings are the run's warning-or-worse findings.
	Findings []Finding `json:"findings"`
	// ChangePoints are those that appeared with this run (for a
	// comparison: in its schedule's B/A ratios, RunID naming the
	// comparison).
	ChangePoints []analysis.RunChangePoint `json:"change_points"`
	// GateReasons say why a completed run failed its gate (thresholds,
	// findings at or above the schedule's --fail-on).
	GateReasons []string `json:"gate_reasons,omitempty"`
	// URL is the run's (the comparison's) page in the browser UI ("" when
	// no UI base was set); HistoryURL the schedule's page.
	URL        string `json:"url,omitempty"`
	HistoryURL string `json:"history_url,omitempty"`
}

// Finding is a finding as a notification carries it.
type Finding struct {
	Kind     string            `json:"kind"`
	Severity analysis.Severity `json:"severity"`
	Summary  string            `json:"summary"`
}

// Verdict is a comparison's verdict on one metric as a notification
// carries it: the B/A ratio (geometric mean of the pairs') and its 95 %
// interval, and the line a person reads.
type Verdict struct {
	Metric  string           `json:"metric"`
	Outcome analysis.Outcome `json:"outcome"`
	Ratio   float64          `json:"ratio"`
	CI      [2]float64       `json:"ci"`
	Pairs   int              `json:"pairs"`
	Summary string           `json:"summary"`
}

// CompareEvents returns what is worth telling about comparison c, and its
// worse verdicts: it failed or was cancelled, B is worse than A on some
// metric, or points (the change points its B/A ratios brought) is not
// empty. A verdict that is better, no_difference or inconclusive is not
// worth a notification.
func CompareEvents(c store.Comparison, points []analysis.RunChangePoint) ([]string, []Verdict) {
	var events []string
	var worse []Verdict
	for _, v := range c.Verdicts {
		if v.Outcome == analysis.Worse {
			worse = append(worse, Verdict{Metric: v.Metric, Outcome: v.Outcome, Ratio: v.Ratio, CI: v.CI, Pairs: v.Pairs, Summary: v.Summary})
		}
	}
	if c.Status == store.Failed || c.Status == store.Cancelled {
		events = append(events, EventFailed)
	}
	if len(worse) > 0 {
		events = append(events, EventWorse)
	}
	if len(points) > 0 {
		events = append(events, EventChangePoint)
	}
	return events, worse
}

// Events returns what is worth telling about run, and the findings worth
// listing (warning or worse). gateReasons are why the run's gate failed
// (none: it passed or judged nothing).
func Events(run store.Run, fs []analysis.Finding, points []analysis.RunChangePoint, gateReasons []string) ([]string, []Finding) {
	var events []string
	var worth []Finding
	for _, f := range fs {
		if f.Severity.Rank() >= analysis.Warning.Rank() {
			worth = append(worth, Finding{Kind: f.Kind, Severity: f.Severity, Summary: f.Summary})
		}
	}
	if len(worth) > 0 {
		events = append(events, EventFindings)
	}
	if run.Status == store.Failed || run.Status == store.Cancelled {
		events = append(events, EventFailed)
	}
	if len(points) > 0 {
		events = append(events, EventChangePoint)
	}
	if run.Status == store.Completed && len(gateReasons) > 0 {
		events = append(events, EventGateFailed)
	}
	return events, worth
}

// ErrRejected: the receiver answered with a status that a retry will not
// change (a 4xx other than 408 and 429).
var ErrRejected = errors.New("notification rejected")

// DefaultTimeout bounds one POST when the client has no timeout.
const DefaultTimeout = 10 * time.Second

// Post sends p to url as JSON with c (http.DefaultClient when nil).
func Post(ctx context.Context, c *http.Client, url string, p Payload) error {
	if c == nil {
		c = http.DefaultClient
	}
	if p.Type == "" {
		p.Type = Type
	}
	if p.Findings == nil {
		p.Findings = []Finding{}
	}
	if p.ChangePoints == nil {
		p.ChangePoints = []analysis.RunChangePoint{}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	if c.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRejected, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "longhaul-notify")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("notify %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("notify %s: %s", url, resp.Status)
	}
	return fmt.Errorf("%w: %s answered %s", ErrRejected, url, resp.Status)
}
