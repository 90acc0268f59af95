package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/store"
)

// Comparisons: `longhaul compare` follows one with a line per round
// (RoundLine, or a RoundObject per NDJSON line) and ends with the report
// (WriteComparisonText, or one ComparisonObject); `longhaul report ID`
// prints a stored one the same way and `longhaul comparisons` lists them.

// RoundObject is one round of a comparison in JSON: a progress line of
// `longhaul compare --format json` (Type "round") and an element of
// ComparisonObject.Rounds (Type empty).
type RoundObject struct {
	Type       string       `json:"type,omitempty"`
	Index      int          `json:"index"`
	Pair       int          `json:"pair"`
	Side       store.Side   `json:"side"`
	RunID      string       `json:"run_id"`
	Status     store.Status `json:"status"`
	Reason     string       `json:"reason,omitempty"`
	ForeignCPU float64      `json:"foreign_cpu"`
	Disturbed  bool         `json:"disturbed"`
	Superseded bool         `json:"superseded,omitempty"`
	Seconds    float64      `json:"seconds,omitempty"`
}

// ComparisonObject is a comparison in JSON: the last NDJSON line of
// `longhaul compare --format json` and what `longhaul report ID --format
// json` prints for a comparison.
type ComparisonObject struct {
	Type   string       `json:"type"`
	ID     string       `json:"id"`
	Name   string       `json:"name"`
	Status store.Status `json:"status"`
	Reason string       `json:"reason,omitempty"`
	// SameBuild is set for an A-vs-A comparison: its intervals measure
	// the machine's noise floor.
	SameBuild     bool               `json:"same_build"`
	A             store.Build        `json:"a"`
	B             store.Build        `json:"b"`
	Order         string             `json:"order"`
	Pairs         int                `json:"pairs"`
	MaxPairs      int                `json:"max_pairs,omitempty"`
	MaxDuration   float64            `json:"max_duration_s,omitempty"`
	Stopped       string             `json:"stopped,omitempty"`
	RoundDuration float64            `json:"round_duration_s"`
	Window        float64            `json:"window_s"`
	Warmup        float64            `json:"warmup_s"`
	Provider      string             `json:"provider,omitempty"`
	Host          string             `json:"host,omitempty"`
	Rounds        []RoundObject      `json:"rounds"`
	Equivalence   equivalence.Result `json:"equivalence"`
	Verdicts      []analysis.Verdict `json:"verdicts"`
	Worse         []string           `json:"worse,omitempty"`
	CreatedAt     time.Time          `json:"created_at"`
	StartedAt     time.Time          `json:"started_at,omitzero"`
	EndedAt       time.Time          `json:"ended_at,omitzero"`
}

// RoundJSON is r as a RoundObject (Type left empty).
func RoundJSON(r store.Round) RoundObject {
	o := RoundObject{
		Index: r.Index, Pair: r.Pair, Side: r.Side, RunID: r.RunID, Status: r.Status, Reason: r.Reason,
		ForeignCPU: round3(r.ForeignCPU), Disturbed: r.Disturbed, Superseded: r.Superseded,
	}
	if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
		o.Seconds = round3(r.EndedAt.Sub(r.StartedAt).Seconds())
	}
	return o
}

// ComparisonJSON is c as a ComparisonObject.
func ComparisonJSON(c store.Comparison) ComparisonObject {
	o := ComparisonObject{
		Type: "comparison", ID: c.ID, Name: c.Name, Status: c.Status, Reason: c.Reason, SameBuild: c.SameBuild(),
		A: c.A, B: c.B, Order: c.Order, Pairs: c.Pairs, MaxPairs: c.MaxPairs, MaxDuration: c.MaxDuration.Seconds(), Stopped: c.Stopped,
		RoundDuration: c.RoundDuration.Seconds(), Window: c.Window.Seconds(), Warmup: c.Warmup.Seconds(),
		Provider: c.Provider, Host: c.Host, Rounds: []RoundObject{}, Equivalence: c.Equivalence,
		Verdicts: c.Verdicts, Worse: WorseMetrics(c.Verdicts), CreatedAt: c.CreatedAt.UTC(),
		StartedAt: c.StartedAt.UTC(), EndedAt: c.EndedAt.UTC(),
	}
	if o.Equivalence.Status == "" {
		o.Equivalence.Status = equivalence.Skipped
	}
	if o.Verdicts == nil {
		o.Verdicts = []analysis.Verdict{}
	}
	for _, r := range c.Rounds {
		o.Rounds = append(o.Rounds, RoundJSON(r))
	}
	return o
}

// WriteComparisonJSON prints c as one ComparisonObject line.
func WriteComparisonJSON(out io.Writer, c store.Comparison) error {
	return writeJSONLine(out, ComparisonJSON(c))
}

// WriteRoundJSON prints a progress line {"type":"round",...} for r.
func WriteRoundJSON(out io.Writer, r store.Round) error {
	o := RoundJSON(r)
	o.Type = "round"
	return writeJSONLine(out, o)
}

// WriteEquivalenceJSON prints a progress line {"type":"equivalence",...}
// with the check's result.
func WriteEquivalenceJSON(out io.Writer, e equivalence.Result) error {
	return writeJSONLine(out, struct {
		Type string `json:"type"`
		equivalence.Result
	}{"equivalence", e})
}

func writeJSONLine(out io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if _, err := out.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// WorseMetrics names the metrics whose verdict is worse, in verdict order.
func WorseMetrics(vs []analysis.Verdict) []string {
	var out []string
	for _, v := range vs {
		if v.Outcome == analysis.Worse {
			out = append(out, v.Metric)
		}
	}
	return out
}

// RoundLine is a round that ended, in one line: "round 3/6 (pair 2, B):
// completed in 31s, foreign CPU 4 %, run 0199…-r2". total is the number of
// rounds planned (0: left out).
func RoundLine(r store.Round, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "round %d", r.Index+1)
	if total > 0 {
		fmt.Fprintf(&b, "/%d", total)
	}
	fmt.Fprintf(&b, " (pair %d, %s): %s", r.Pair+1, r.Side, r.Status)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", oneLine(r.Reason))
	}
	if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
		fmt.Fprintf(&b, " in %s", r.EndedAt.Sub(r.StartedAt).Round(time.Second))
	}
	fmt.Fprintf(&b, ", foreign CPU %s", pctOf(r.ForeignCPU))
	if r.Disturbed {
		b.WriteString(" — disturbed")
	}
	if r.Superseded {
		b.WriteString(" (superseded by a rerun)")
	}
	fmt.Fprintf(&b, ", run %s", r.RunID)
	return b.String()
}

// EquivalenceLine is the equivalence check in one line.
func EquivalenceLine(e equivalence.Result) string {
	switch e.Status {
	case equivalence.Identical:
		return fmt.Sprintf("identical (%d requests)", e.Requests)
	case equivalence.Different:
		s := fmt.Sprintf("different after %d requests", e.Requests)
		if d := e.FirstDifference; d != nil {
			where := d.JSONPath
			if where == "" {
				where = d.What
			}
			s = fmt.Sprintf("different: request %d (op %s, %s %s): %s: A %s, B %s", d.Request, d.Op, d.Method, d.Path, where, d.A, d.B)
		}
		return s
	case "":
		return "not run"
	case equivalence.Skipped:
		if e.Reason != "" {
			return "skipped (" + e.Reason + ")"
		}
		return "skipped"
	}
	return string(e.Status)
}

// SideLine describes one build of a comparison.
func SideLine(b store.Build) string {
	var parts []string
	switch {
	case b.Image != "":
		parts = append(parts, "image "+b.Image)
	case b.Ref != "":
		s := "ref " + b.Ref
		if b.Commit != "" {
			s += " (" + shortCommit(b.Commit) + ")"
		}
		parts = append(parts, s)
	default:
		parts = append(parts, "the scenario's build")
	}
	if len(b.Env) > 0 {
		keys := slices.Sorted(maps.Keys(b.Env))
		kv := make([]string, len(keys))
		for i, k := range keys {
			kv[i] = k + "=" + b.Env[k]
		}
		parts = append(parts, "env "+strings.Join(kv, " "))
	}
	return strings.Join(parts, ", ")
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// PairsLine says how many pairs a comparison runs or ran: "3 pairs", or
// for one that adds pairs until decided "5 pairs (until decided, at most
// 10): stopped, decided".
func PairsLine(c store.Comparison) string {
	if c.MaxPairs == 0 {
		return fmt.Sprintf("%d %s", c.Pairs, pluralWord(c.Pairs, "pair", "pairs"))
	}
	bound := fmt.Sprintf("at most %d", c.MaxPairs)
	if c.MaxDuration > 0 {
		bound += fmt.Sprintf(" or %s", c.MaxDuration)
	}
	if c.Pairs == 0 {
		return "pairs until decided (" + bound + ")"
	}
	line := fmt.Sprintf("%d %s (until decided, %s)", c.Pairs, pluralWord(c.Pairs, "pair", "pairs"), bound)
	if c.Stopped != "" {
		line += ": stopped, " + strings.ReplaceAll(c.Stopped, "_", " ")
	}
	return line
}

// LookLines are a sequential comparison's state after a pair, for the
// terminal: "after pair 4:", then one line per primary metric
// ("CPU/request: +28 % … +37 %, worse — decided after pair 4") and what is
// still undecided.
func LookLines(l store.Look) []string {
	out := []string{fmt.Sprintf("after pair %d:", l.Pairs)}
	s := analysis.Sequential{Verdicts: l.Verdicts, Undecided: l.Undecided, Pairs: l.Pairs}
	for _, line := range s.Progress() {
		out = append(out, "  "+line)
	}
	return out
}

// HistoryLine says once, at the start of a sequential comparison, where
// the noise its intervals use comes from.
func HistoryLine(n int) string {
	if n == 0 {
		return "no earlier comparison of this scenario on this host: the noise comes from this comparison's own pairs, added until the primary metrics are decided (it is kept, so the next comparison pools it)"
	}
	return fmt.Sprintf("noise pooled with %d earlier %s of this scenario on this host", n, pluralWord(n, "comparison", "comparisons"))
}

// WriteLookJSON prints a progress line {"type":"look",...} for l.
func WriteLookJSON(out io.Writer, l store.Look) error {
	return writeJSONLine(out, struct {
		Type string `json:"type"`
		store.Look
	}{"look", l})
}

// WriteComparisonText prints a comparison: its header (sides, order,
// rounds' length), whether it is an A-vs-A (noise floor) comparison, the
// equivalence check, one line per round and one line per metric's verdict.
func WriteComparisonText(out io.Writer, c store.Comparison) error {
	b := bufio.NewWriter(out)
	fmt.Fprintf(b, "comparison %s: %s\n", c.ID, c.Name)
	status := string(c.Status)
	if c.Reason != "" {
		status += ": " + c.Reason
	}
	fmt.Fprintf(b, "status:  %s\n", status)
	fmt.Fprintf(b, "A:       %s\n", SideLine(c.A))
	fmt.Fprintf(b, "B:       %s\n", SideLine(c.B))
	fmt.Fprintf(b, "plan:    %s, order %s, rounds of %s in %s windows, warm-up %s",
		PairsLine(c), c.Order, c.RoundDuration, c.Window, c.Warmup)
	if c.Provider != "" {
		fmt.Fprintf(b, ", provider %s", c.Provider)
	}
	if c.Host != "" {
		fmt.Fprintf(b, ", host %s", c.Host)
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "created: %s  started: %s  ended: %s\n", utc(c.CreatedAt), utc(c.StartedAt), utc(c.EndedAt))
	same := c.SameBuild()
	if same {
		fmt.Fprintln(b, "A vs A: both sides are the same build, so this measures the machine's noise floor:")
		fmt.Fprintln(b, "        a verdict other than no_difference or inconclusive is a false one.")
	}
	fmt.Fprintf(b, "\nequivalence: %s\n", EquivalenceLine(c.Equivalence))

	if len(c.Rounds) > 0 {
		fmt.Fprintln(b, "\nrounds:")
		for _, r := range c.Rounds {
			fmt.Fprintf(b, "  %s\n", RoundLine(r, 0))
		}
	}
	if len(c.Verdicts) > 0 {
		fmt.Fprintln(b, "\nverdicts (B against A, ratio B/A per pair):")
		for _, v := range c.Verdicts {
			line := v.Summary
			if line == "" {
				line = fmt.Sprintf("%s: %s", analysis.MetricLabel(v.Metric), v.Outcome)
			}
			fmt.Fprintf(b, "  %s", line)
			if v.Method != "" && v.Pairs > 0 {
				fmt.Fprintf(b, " [%s]", v.Method)
			}
			if same {
				if n := v.Noise(); n > 0 {
					fmt.Fprintf(b, "; noise floor ±%s", pctOf(n))
				}
			}
			fmt.Fprintln(b)
			// What the CPU profiles say moved, biggest mover first.
			for _, d := range v.ProfileDiff {
				fmt.Fprintf(b, "      %s\n", d.Sentence("B"))
			}
			for _, d := range v.AllocDiff {
				fmt.Fprintf(b, "      %s\n", d.Sentence("B"))
			}
		}
		if note := analysis.IntervalNote(c.Verdicts); note != "" {
			fmt.Fprintf(b, "  (%s)\n", note)
		}
		if w := WorseMetrics(c.Verdicts); len(w) > 0 {
			fmt.Fprintf(b, "\nB is worse on %s\n", strings.Join(w, ", "))
		}
	} else if c.Status == store.Completed {
		fmt.Fprintln(b, "\nno verdicts")
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("write comparison report: %w", err)
	}
	return nil
}

// WriteComparisonsText prints comparisons as a table: id, name, status,
// sides, pairs, outcome counts, created.
func WriteComparisonsText(out io.Writer, cs []store.Comparison) error {
	if len(cs) == 0 {
		_, err := fmt.Fprintln(out, "no comparisons")
		return err
	}
	l := newListing("ID\tNAME\tSTATUS\tA\tB\tPAIRS\tVERDICTS\tCREATED\tREASON")
	for _, c := range cs {
		l.row("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", c.ID, c.Name, c.Status,
			SideLine(c.A), SideLine(c.B), c.Pairs, verdictCounts(c.Verdicts), utc(c.CreatedAt), oneLine(c.Reason))
	}
	if err := l.writeTo(out); err != nil {
		return fmt.Errorf("write comparisons: %w", err)
	}
	return nil
}

// WriteComparisonsJSON prints one ComparisonObject per line.
func WriteComparisonsJSON(out io.Writer, cs []store.Comparison) error {
	for _, c := range cs {
		if err := WriteComparisonJSON(out, c); err != nil {
			return err
		}
	}
	return nil
}

// verdictCounts is "1 worse, 7 no_difference" (outcomes in a fixed order).
func verdictCounts(vs []analysis.Verdict) string {
	if len(vs) == 0 {
		return "-"
	}
	n := map[analysis.Outcome]int{}
	for _, v := range vs {
		n[v.Outcome]++
	}
	var parts []string
	for _, o := range []analysis.Outcome{analysis.Better, analysis.Worse, analysis.NoDifference, analysis.Inconclusive} {
		if n[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[o], o))
		}
	}
	return strings.Join(parts, ", ")
}

// pctOf formats a share (0.042) as "4.2 %".
func pctOf(x float64) string {
	p := x * 100
	if p >= 9.95 || p == 0 {
		return fmt.Sprintf("%.0f %%", p)
	}
	return fmt.Sprintf("%.1f %%", p)
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
