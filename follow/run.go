package follow

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// Run is what following a run needs to know about it.
type Run struct {
	ID       string
	Format   report.Format
	Duration time.Duration // for the progress bar
	Window   time.Duration // sets the poll interval
	// Lines renders longhaul's warnings on the terminal; the follower keeps
	// its progress bar intact around them (nil: none).
	Lines *report.WarningLines
	// DetachNote is printed when the user detaches (a second Ctrl-C).
	DetachNote string
	// LogPath is the Temporal log file, named when the run fails.
	LogPath string
}

// FollowRun prints the run's windows as they reach the store until the
// workflow ends, then the run report: summary, probe problems, findings,
// thresholds and gate. Its error is an Exit for a run that failed, was
// cancelled or failed its gate.
func FollowRun(ctx context.Context, t Terminal, st store.Store, wf Workflow, r Run) error {
	var progress *report.Progress
	if r.Format == report.Text {
		progress = report.NewProgress(t.Stderr, time.Now(), r.Duration)
	}
	if r.Lines != nil {
		r.Lines.SetProgress(progress)
		defer r.Lines.SetProgress(nil)
	}
	out, err := report.NewWindowWriter(r.Format, t.Stdout, report.TextOptions{Progress: progress})
	if err != nil {
		return err
	}
	var totals report.Totals
	var failures []window.Window // probe failures only, for the report's probe problems
	next := 0
	printNew := func() error {
		ws, err := st.Windows(ctx, r.ID, store.WindowQuery{Incarnation: -1, FromIndex: next})
		if err != nil {
			return storeRead{fmt.Errorf("read windows of run %s: %w", r.ID, err)}
		}
		for _, w := range ws {
			if err := out.Window(w); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			_ = totals.Add(w)
			failures = append(failures, window.Window{Index: w.Index, Gap: w.Gap, ProbeFailures: w.ProbeFailures})
			next = max(next, w.Index+1)
		}
		return nil
	}
	return (&loop{
		what: "run", poll: min(max(r.Window/4, 100*time.Millisecond), time.Second),
		progress: progress, detachNote: r.DetachNote, tick: printNew,
		status: func() (store.Status, string) {
			if next > 0 {
				return store.Running, "" // windows are coming: it got its slot long ago
			}
			run, err := st.GetRun(ctx, r.ID)
			if err != nil {
				return "", ""
			}
			return run.Status, run.Reason
		},
		finish: func() error {
			return finishRun(ctx, t, st, r, out, totals.Summary(), report.ProbeProblems(failures))
		},
	}).run(ctx, t, wf)
}

// finishRun prints the end of a followed run and maps the outcome to the
// exit code.
func finishRun(ctx context.Context, t Terminal, st store.Store, r Run, out report.WindowWriter, sum window.Summary, problems []report.ProbeProblem) error {
	run, err := st.GetRun(ctx, r.ID)
	if err != nil {
		return storeRead{fmt.Errorf("read run %s: %w", r.ID, err)}
	}
	fs, err := st.Findings(ctx, r.ID)
	if err != nil {
		return storeRead{fmt.Errorf("read findings of run %s: %w", r.ID, err)}
	}
	v, err := ReadVerdict(ctx, st, run, fs)
	if err != nil {
		return storeRead{err}
	}
	if r.Format == report.JSON {
		if err := WriteReportObject(t.Stdout, run, sum, fs, problems, v); err != nil {
			return err
		}
	} else {
		// A run that ended before its first window (a missing image, a
		// failed build) has no summary to show: its reason is the report.
		if sum.Windows > 0 || sum.Gaps > 0 {
			if err := out.Summary(sum); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			fmt.Fprintln(t.Stdout)
		}
		status := string(run.Status)
		if run.Reason != "" {
			status += ": " + run.Reason
		}
		fmt.Fprintf(t.Stdout, "run %s %s\n", run.ID, status)
		report.WriteProbeProblems(t.Stdout, problems)
		report.WriteFindings(t.Stdout, fs)
		if v.Gated() {
			fmt.Fprintln(t.Stdout)
			report.WriteThresholds(t.Stdout, v.Thresholds)
			report.WriteGate(t.Stdout, v.Gate)
		}
	}
	if run.Status == store.Failed && r.LogPath != "" {
		fmt.Fprintf(t.Stderr, "longhaul: Temporal's own log lines are in %s\n", r.LogPath)
	}
	return v.Err()
}

// Verdict is what a finished run says to its caller: its thresholds, the
// gate, and the exit code (0 passed, 1 failed or cancelled, 3 completed but
// the gate failed).
type Verdict struct {
	Run        store.Run
	Thresholds []thresholds.Result
	Gate       thresholds.Gate
}

// ReadVerdict judges a run from its stored thresholds and findings fs.
func ReadVerdict(ctx context.Context, st store.Store, run store.Run, fs []analysis.Finding) (Verdict, error) {
	rs, err := st.Thresholds(ctx, run.ID)
	if err != nil {
		return Verdict{}, fmt.Errorf("read thresholds of run %s: %w", run.ID, err)
	}
	g, _ := report.JudgeRun(run, rs, fs)
	return Verdict{Run: run, Thresholds: rs, Gate: g}, nil
}

// Err maps the verdict to an Exit (nil: exit 0).
func (v Verdict) Err() error {
	switch {
	case v.Run.Status != store.Completed:
		return Exit{ExitFailed}
	case !v.Gate.Passed:
		return Exit{ExitGate}
	}
	return nil
}

// Gated reports whether the run has anything for a gate to judge.
func (v Verdict) Gated() bool { return len(v.Thresholds) > 0 || v.Run.FailOn != "" }

// ReportObject is the last NDJSON line of longhaul run --format json.
type ReportObject struct {
	Type    string          `json:"type"`
	RunID   string          `json:"run_id"`
	Status  store.Status    `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	Windows int             `json:"windows"`
	Gaps    int             `json:"gaps,omitempty"`
	Summary json.RawMessage `json:"summary"`
	// ProbeProblems: the probes that failed during the run (report.ProbeProblems).
	ProbeProblems []report.ProbeProblem `json:"probe_problems,omitempty"`
	Findings      []analysis.Finding    `json:"findings"`
	// Thresholds (never null) and Gate ("passed" or "failed"), with the
	// reasons a gate failed.
	Thresholds  []thresholds.Result `json:"thresholds"`
	Gate        string              `json:"gate"`
	FailOn      string              `json:"fail_on,omitempty"`
	GateReasons []string            `json:"gate_reasons,omitempty"`
}

// WriteReportObject writes a run's ReportObject as one JSON line.
func WriteReportObject(out io.Writer, run store.Run, sum window.Summary, fs []analysis.Finding, problems []report.ProbeProblem, v Verdict) error {
	// The summary has the shape of the drive's summary line, without its "type".
	b, err := json.Marshal(report.SummaryJSON(sum))
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	delete(m, "type")
	if b, err = json.Marshal(m); err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if fs == nil {
		fs = []analysis.Finding{}
	}
	g := report.GateJSON(v.Gate, v.Thresholds)
	line, err := json.Marshal(ReportObject{
		Type: "report", RunID: run.ID, Status: run.Status, Reason: run.Reason,
		Windows: sum.Windows, Gaps: sum.Gaps, Summary: b, ProbeProblems: problems, Findings: fs,
		Thresholds: g.Thresholds, Gate: g.Gate, FailOn: g.FailOn, GateReasons: g.Reasons,
	})
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if _, err := fmt.Fprintf(out, "%s\n", line); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
