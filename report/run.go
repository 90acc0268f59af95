package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// RunReport is everything known about one stored run.
type RunReport struct {
	Run      store.Run
	Windows  []window.Window
	Summary  window.Summary
	Findings []analysis.Finding
	// ProbeProblems sums up the windows' probe failures (ProbeProblems).
	ProbeProblems []ProbeProblem
	// Statements are the database round trips (RunStatements); nil
	// without pg_stat_statements.
	Statements *DatabaseStatements
	// Thresholds are the run's judged thresholds (SetThresholds).
	Thresholds []thresholds.Result
	// Gate is the run's gate (JudgeRun); nil while the run has not ended.
	Gate *thresholds.Gate
	// Notifications are those a scheduled run sent or failed to send.
	Notifications []store.Notification
	// CrashLines are what the target printed during each crash finding's
	// window, when its output was kept (SetCrashLines); the text report
	// shows them instead of the crash event's own last lines.
	CrashLines map[CrashWindow][]string
}

// CrashWindow names the window a crash finding is in.
type CrashWindow struct{ Incarnation, Window int }

// SetCrashLines finds, in the run's kept logs (store.Logs with data),
// what the target printed during each crash finding's window.
func (rep *RunReport) SetCrashLines(ls []store.TargetLog) {
	for _, f := range rep.Findings {
		if f.Kind != analysis.KindCrash {
			continue
		}
		var mine []store.TargetLog
		for _, l := range ls {
			if l.Incarnation == f.Incarnation || f.Incarnation == 0 {
				mine = append(mine, l)
			}
		}
		if lines, ok := WindowLines(mine, "target", f.Evidence.FirstWindow); ok {
			if rep.CrashLines == nil {
				rep.CrashLines = map[CrashWindow][]string{}
			}
			rep.CrashLines[CrashWindow{f.Incarnation, f.Evidence.FirstWindow}] = lines
		}
	}
}

// NewRunReport assembles a report, summarising ws with window.Merge; the
// gate is judged on the findings alone until SetThresholds adds the
// thresholds.
func NewRunReport(r store.Run, ws []window.Window, fs []analysis.Finding) (RunReport, error) {
	s, err := window.Merge(ws)
	if err != nil {
		return RunReport{}, fmt.Errorf("summarise run %s: %w", r.ID, err)
	}
	rep := RunReport{Run: r, Windows: ws, Summary: s, Findings: fs, ProbeProblems: ProbeProblems(ws),
		Statements: RunStatements(ws, TopStatementsShown)}
	rep.SetThresholds(nil)
	return rep, nil
}

// SetThresholds records the run's judged thresholds and judges the gate again.
func (rep *RunReport) SetThresholds(rs []thresholds.Result) {
	rep.Thresholds = rs
	rep.Gate = nil
	if g, ok := JudgeRun(rep.Run, rs, rep.Findings); ok {
		rep.Gate = &g
	}
}

// gated reports whether the run has anything for a gate to judge: thresholds
// or a --fail-on severity.
func (rep RunReport) gated() bool {
	return rep.Gate != nil && (len(rep.Thresholds) > 0 || rep.Run.FailOn != "")
}

// WriteRunText prints a run: its header (id, name, kind, status and reason,
// target, environment, times), one line per window, the summary table, the probe
// problems (if any), the findings, and — when the run has thresholds or a
// --fail-on severity — each threshold with its value and the gate.
func WriteRunText(out io.Writer, rep RunReport) error {
	b := bufio.NewWriter(out)
	r := rep.Run
	fmt.Fprintf(b, "run %s: %s (%s)\n", r.ID, r.Name, r.Kind)
	status := string(r.Status)
	if r.Reason != "" {
		status += ": " + r.Reason
	}
	fmt.Fprintf(b, "status:  %s\n", status)
	if r.TargetURL != "" {
		fmt.Fprintf(b, "target:  %s\n", r.TargetURL)
	}
	for _, l := range environmentLines(r.Environment) {
		fmt.Fprintln(b, l)
	}
	if r.WorkflowID != "" {
		fmt.Fprintf(b, "workflow: %s\n", r.WorkflowID)
	}
	if r.Schedule != "" {
		fmt.Fprintf(b, "schedule: %s (longhaul history %s)\n", r.Schedule, r.Schedule)
	}
	if r.Commit != "" {
		fmt.Fprintf(b, "commit:  %s\n", r.Commit)
	}
	fmt.Fprintf(b, "created: %s  started: %s  ended: %s\n", utc(r.CreatedAt), utc(r.StartedAt), utc(r.EndedAt))
	if r.Incarnations > 1 {
		fmt.Fprintf(b, "incarnations: %d\n", r.Incarnations)
	}

	if len(rep.Windows) > 0 {
		fmt.Fprintln(b)
		t := NewText(b, TextOptions{Columns: ColumnsOf(rep.Windows), Table: FastestGrowingTable(rep.Windows)})
		for _, w := range rep.Windows {
			if err := t.Window(w); err != nil {
				return err
			}
		}
		t.writeLegend()
		if err := t.out.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(b)
	writeSummary(b, rep.Summary)
	fmt.Fprintln(b)
	writeStatements(b, rep.Statements)
	WriteProbeProblems(b, rep.ProbeProblems)
	writeFindings(b, rep.Findings, rep.Run.ID, rep.CrashLines)
	WriteNotifications(b, rep.Notifications)
	if rep.gated() {
		fmt.Fprintln(b)
		WriteThresholds(b, rep.Thresholds)
		WriteGate(b, *rep.Gate)
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write run report: %w", err)
	}
	return nil
}

// WriteRunJSON prints a run as NDJSON: a {"type":"run"} object, the windows
// and the summary exactly as JSONWriter prints them, one
// {"type":"statements"} object when the run counted statements
// (DatabaseStatements), one {"type":"probe_problem"} object per ProbeProblem, one {"type":"finding"}
// object per finding, one {"type":"notification"} object per notification,
// then — once the run has ended — one {"type":"gate"} object (GateObject:
// the gate and every threshold).
func WriteRunJSON(out io.Writer, rep RunReport) error {
	j := NewJSON(out)
	if err := j.write(runObject{Type: "run", Run: rep.Run}); err != nil {
		return err
	}
	for _, w := range rep.Windows {
		if err := j.Window(w); err != nil {
			return err
		}
	}
	if err := j.Summary(rep.Summary); err != nil {
		return err
	}
	if rep.Statements != nil {
		if err := j.write(statementsObject{Type: "statements", DatabaseStatements: rep.Statements}); err != nil {
			return err
		}
	}
	for _, p := range rep.ProbeProblems {
		if err := j.write(probeProblemObject{Type: "probe_problem", ProbeProblem: p}); err != nil {
			return err
		}
	}
	for _, f := range rep.Findings {
		if err := j.write(findingObject{Type: "finding", Finding: f}); err != nil {
			return err
		}
	}
	if err := WriteNotificationsJSON(out, rep.Notifications); err != nil {
		return err
	}
	if rep.Gate != nil {
		g := GateJSON(*rep.Gate, rep.Thresholds)
		g.Type = "gate"
		if err := j.write(g); err != nil {
			return err
		}
	}
	return nil
}

type runObject struct {
	Type string `json:"type"`
	store.Run
}

type findingObject struct {
	Type string `json:"type"`
	analysis.Finding
}

type notificationObject struct {
	Type string `json:"type"`
	store.Notification
}

type statementsObject struct {
	Type string `json:"type"`
	*DatabaseStatements
}

type probeProblemObject struct {
	Type string `json:"type"`
	ProbeProblem
}

// WriteFindings prints findings, most severe first (stable otherwise), as
// "severity kind: summary" with the evidence that is set on an indented line
// below; or "no findings".
func WriteFindings(out io.Writer, fs []analysis.Finding) {
	writeFindings(out, fs, "", nil)
}

// writeFindings is WriteFindings, with a crash finding followed by what
// the target printed during its window when crashLines has it (run runID's),
// else by the crash event's own last lines.
func writeFindings(out io.Writer, fs []analysis.Finding, runID string, crashLines map[CrashWindow][]string) {
	if len(fs) == 0 {
		fmt.Fprintln(out, "no findings")
		return
	}
	fmt.Fprintln(out, "findings:")
	sorted := slices.Clone(fs)
	slices.SortStableFunc(sorted, func(a, b analysis.Finding) int { return b.Severity.Rank() - a.Severity.Rank() })
	for _, f := range sorted {
		fmt.Fprintf(out, "  %s %s: %s\n", f.Severity, f.Kind, f.Summary)
		if ev := evidence(f); ev != "" {
			fmt.Fprintf(out, "      %s\n", ev)
		}
		if lines, ok := crashLines[CrashWindow{f.Incarnation, f.Evidence.FirstWindow}]; ok && f.Kind == analysis.KindCrash && len(lines) > 0 {
			writeWindowLines(out, lines, runID, f.Evidence.FirstWindow)
			continue
		}
		if out2 := f.Evidence.Output; len(out2) > 0 {
			n := findingOutputLines
			if f.Kind == analysis.KindCrash {
				n = crashOutputLines
			}
			shown := out2[max(0, len(out2)-n):]
			fmt.Fprintf(out, "      its last %d lines (of %d kept):\n", len(shown), len(out2))
			for _, l := range shown {
				fmt.Fprintf(out, "        | %s\n", outputLine(l))
			}
		}
	}
}

// writeWindowLines prints the last crashOutputLines of what the target
// printed during window index, saying how many were left out before them
// and which command prints them all.
func writeWindowLines(out io.Writer, lines []string, runID string, index int) {
	shown := lines[max(0, len(lines)-crashOutputLines):]
	fmt.Fprintf(out, "      what it printed during window %d (%d %s):\n", index, len(lines), pluralWord(len(lines), "line", "lines"))
	if left := len(lines) - len(shown); left > 0 {
		fmt.Fprintf(out, "        [… %d earlier %s left out; longhaul logs %s --window %d prints them all]\n", left, pluralWord(left, "line", "lines"), runID, index)
	}
	for _, l := range shown {
		fmt.Fprintf(out, "        | %s\n", outputLine(l))
	}
}

// outputLineBytes is where the report cuts a line of the target's output
// (a request dumped whole, a JSON log record): `longhaul logs` has it all.
const outputLineBytes = 300

// outputLine is l cut at outputLineBytes (on a character boundary), saying
// how much was cut.
func outputLine(l string) string {
	if len(l) <= outputLineBytes {
		return l
	}
	cut := outputLineBytes
	for cut > 0 && !utf8.RuneStart(l[cut]) {
		cut--
	}
	return fmt.Sprintf("%s[… %d more bytes]", l[:cut], len(l)-cut)
}

// findingOutputLines is how many of a finding's last output lines (a
// database's at its stop) the text report prints; crashOutputLines a
// crash's. The run page and the JSON report have all that were kept.
const (
	findingOutputLines = 10
	crashOutputLines   = 50
)

// WriteNotifications prints the notifications, one line each, under
// "notifications:"; nothing when there are none.
func WriteNotifications(out io.Writer, ns []store.Notification) {
	if len(ns) == 0 {
		return
	}
	fmt.Fprintln(out, "notifications:")
	for _, n := range ns {
		fmt.Fprintf(out, "  %s %s -> %s: %s\n", utc(n.At), strings.Join(n.Events, ", "), n.URL, n.Outcome())
	}
}

// WriteNotificationsJSON prints one {"type":"notification"} line per
// notification.
func WriteNotificationsJSON(out io.Writer, ns []store.Notification) error {
	for _, n := range ns {
		if err := writeJSONLine(out, notificationObject{Type: "notification", Notification: n}); err != nil {
			return err
		}
	}
	return nil
}

// evidence lists the set fields of f's evidence, "; "-separated.
func evidence(f analysis.Finding) string {
	e := f.Evidence
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if f.Incarnation > 0 {
		add("incarnation %d", f.Incarnation)
	}
	switch {
	case e.LastWindow > e.FirstWindow:
		add("windows %d-%d", e.FirstWindow, e.LastWindow)
	case e.FirstWindow > 0 || e.LastWindow > 0:
		add("window %d", e.FirstWindow)
	}
	if e.Slope != 0 {
		add("slope %s %s", num(e.Slope), e.SlopeUnit)
	}
	if e.PerKRequests != 0 {
		add("%s bytes per 1k requests", num(e.PerKRequests))
	}
	if e.PValue != 0 {
		add("p-value %s", num(e.PValue))
	}
	if e.Correlation != 0 {
		add("correlation %s", num(e.Correlation))
	}
	if e.Table != "" {
		add("table %s", e.Table)
	}
	if e.Op != "" {
		add("op %s", e.Op)
	}
	if len(e.Ops) > 0 {
		ops := make([]string, len(e.Ops))
		for i, o := range e.Ops {
			ops[i] = fmt.Sprintf("%s %s->%s", o.Op, num(o.P50BeforeMs), num(o.P50AfterMs))
		}
		add("p50 ms by op: %s", strings.Join(ops, ", "))
	}
	if e.Before != 0 || e.After != 0 {
		add("%s -> %s %s", num(e.Before), num(e.After), e.Unit)
	}
	if len(e.Missing) > 0 {
		add("missing %s", strings.Join(missingLabels(e.Missing), ", "))
	}
	if e.Cause != "" {
		add("cause %s", strings.ReplaceAll(e.Cause, "_", " "))
	}
	if e.Thread != "" {
		add("busiest thread %s", e.Thread)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Notes)) {
		add("%s %s", analysis.NoteLabel(k), analysis.FormatNote(k, e.Notes[k]))
	}
	return strings.TrimSpace(strings.Join(parts, "; "))
}

// missingLabels names Evidence.Missing entries for a person.
func missingLabels(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = analysis.MissingLabel(n)
	}
	return out
}

// num formats a figure compactly: 4 significant digits, no exponent for
// everyday magnitudes.
func num(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// WriteRunsText prints runs as a table: id, name, kind, status, created,
// duration (up to now for a run that has not ended) and reason.
func WriteRunsText(out io.Writer, runs []store.Run, now time.Time) error {
	if len(runs) == 0 {
		_, err := fmt.Fprintln(out, "no runs")
		return err
	}
	l := newListing("ID\tNAME\tKIND\tSTATUS\tCREATED\tDURATION\tREASON")
	for _, r := range runs {
		dur := "-"
		if !r.StartedAt.IsZero() {
			end := r.EndedAt
			if end.IsZero() {
				end = now
			}
			dur = clock(end.Sub(r.StartedAt).Truncate(time.Second))
		}
		kind := r.Kind
		if r.Schedule != "" {
			kind += " (" + r.Schedule + ")"
		}
		l.row("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, kind, r.Status, utc(r.CreatedAt), dur, oneLine(r.Reason))
	}
	if err := l.writeTo(out); err != nil {
		return fmt.Errorf("write runs: %w", err)
	}
	return nil
}

// listing is the table of a listing command: columns aligned, without the
// padding tabwriter leaves after the last cells of short rows.
type listing struct {
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

// newListing starts a listing with its tab-separated header line.
func newListing(header string) *listing {
	l := &listing{}
	l.tw = tabwriter.NewWriter(&l.buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(l.tw, header)
	return l
}

// row adds a tab-separated row.
func (l *listing) row(format string, args ...any) { fmt.Fprintf(l.tw, format, args...) }

// writeTo writes the aligned, trimmed table to out.
func (l *listing) writeTo(out io.Writer) error {
	if err := l.tw.Flush(); err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(l.buf.String(), "\n"), "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " ")
	}
	_, err := io.WriteString(out, strings.Join(lines, "\n")+"\n")
	return err
}

// WriteRunsJSON prints runs as NDJSON, one run object per line.
func WriteRunsJSON(out io.Writer, runs []store.Run) error {
	b := bufio.NewWriter(out)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	for _, r := range runs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write runs: %w", err)
		}
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write runs: %w", err)
	}
	return nil
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
