package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// ErrBadInput is matched (errors.Is) by the errors of ImportError and
// ExportID that are the user's to fix: a file that is missing, unreadable
// or not k6 output, an ID the store does not have, an op or side that does
// not fit. Nothing was stored or written. The message is one line that
// stands alone (it carries no "bad input" prefix).
var ErrBadInput = errors.New("bad input")

type badInputError struct{ err error }

func (e badInputError) Error() string        { return e.err.Error() }
func (e badInputError) Unwrap() error        { return e.err }
func (e badInputError) Is(target error) bool { return target == ErrBadInput }

func badInputf(format string, args ...any) error {
	return badInputError{fmt.Errorf(format, args...)}
}

// ParseImportFlags checks longhaul import k6's --format and --window and
// returns the output format. Its errors match ErrBadInput and name the flag.
func ParseImportFlags(format string, window time.Duration) (report.Format, error) {
	f, err := report.ParseFormat(format)
	if err != nil {
		return "", badInputf("--format: %v", err)
	}
	if window <= 0 {
		return "", badInputf("--window must be > 0, got %s", window)
	}
	return f, nil
}

// ImportError explains err, returned by ImportK6 for file with res, in one
// line. It matches ErrBadInput when the file is to blame and nothing was
// stored; an error after the run was created names the run (whose windows
// so far are kept).
func ImportError(file string, res ImportResult, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return badInputf("import %s: %v", file, unwrapPath(err))
	case errors.Is(err, ErrNothingUsable):
		return badInputf("import %s: %v (is it k6 run --out json output?)", file, err)
	case res.Run.ID == "":
		return badInputf("import %s: %v", file, err)
	}
	return fmt.Errorf("import %s into run %s: %w", file, res.Run.ID, err)
}

// unwrapPath is the cause of a *fs.PathError without its path, which the
// message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ImportJSON is the object of `longhaul import k6 --format json`.
type ImportJSON struct {
	Type       string             `json:"type"` // "import"
	RunID      string             `json:"run_id"`
	Name       string             `json:"name"`
	Windows    int                `json:"windows"`
	Lines      int64              `json:"lines"`
	Points     int64              `json:"points"`
	LatePoints int64              `json:"late_points"`
	Requests   int64              `json:"requests"`
	BadLines   int64              `json:"bad_lines"`
	FirstBad   []BadLine          `json:"first_bad_lines,omitempty"`
	Missing    []string           `json:"missing,omitempty"`
	Custom     []string           `json:"custom,omitempty"`
	Start      time.Time          `json:"start"`
	End        time.Time          `json:"end"`
	Findings   []analysis.Finding `json:"findings"` // [] when none
}

// WriteImportJSON writes res as one ImportJSON object on a line.
func WriteImportJSON(w io.Writer, res ImportResult) error {
	s := res.Stats
	fs := res.Findings
	if fs == nil {
		fs = []analysis.Finding{}
	}
	b, err := json.Marshal(ImportJSON{
		Type: "import", RunID: res.Run.ID, Name: res.Run.Name, Windows: s.Windows, Lines: s.Lines, Points: s.Points,
		LatePoints: s.LatePoints, Requests: s.Requests, BadLines: s.BadLines, FirstBad: s.BadLineNumbers,
		Missing: s.Missing, Custom: s.Custom, Start: s.Start.UTC(), End: s.End.UTC(), Findings: fs,
	})
	if err != nil {
		return fmt.Errorf("encode import: %w", err)
	}
	if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// WriteImportText writes what ImportK6 did: the run and its size, the bad
// lines left out (those the stats list, then how many more), late points,
// the series k6 did not have and the custom ones, the findings, and the
// commands that show the run. where names the store; windowLen is the
// window length the file was cut into.
func WriteImportText(w io.Writer, res ImportResult, where string, windowLen time.Duration) error {
	ew := &errWriter{w: w}
	s := res.Stats
	fmt.Fprintf(ew, "imported run %s (%s) into %s: %d windows of %s, %d points, %d requests, %s to %s\n",
		res.Run.ID, res.Run.Name, where, s.Windows, windowLen, s.Points, s.Requests, utcTime(s.Start), utcTime(s.End))
	if s.BadLines > 0 {
		fmt.Fprintf(ew, "%d bad lines left out:\n", s.BadLines)
		for _, b := range s.BadLineNumbers {
			fmt.Fprintf(ew, "  %s\n", b)
		}
		if int64(len(s.BadLineNumbers)) < s.BadLines {
			fmt.Fprintf(ew, "  ... and %d more\n", s.BadLines-int64(len(s.BadLineNumbers)))
		}
	}
	if s.LatePoints > 0 {
		fmt.Fprintf(ew, "%d points arrived after their window had closed and were left out\n", s.LatePoints)
	}
	if len(s.Missing) > 0 {
		fmt.Fprintf(ew, "not in the file: %s\n", strings.Join(s.Missing, ", "))
	}
	if len(s.Custom) > 0 {
		fmt.Fprintf(ew, "custom series: %s\n", strings.Join(s.Custom, ", "))
	}
	report.WriteFindings(ew, res.Findings)
	fmt.Fprintf(ew, "longhaul report %s shows it; longhaul export %s --format csv takes it out\n", res.Run.ID, res.Run.ID)
	if ew.err != nil {
		return fmt.Errorf("write output: %w", ew.err)
	}
	return nil
}

func utcTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// errWriter keeps the first write error, so that a report of many lines
// checks it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// ExportStore is what ExportID needs of a store (store.Store has it).
type ExportStore interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	GetComparison(ctx context.Context, id string) (store.Comparison, error)
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
}

// IDOptions tune ExportID.
type IDOptions struct {
	Format Format
	// Op exports one op's figures ("" for all).
	Op string
	// Side is the comparison side to export, A or B (any case); a
	// comparison is exported only as FormatBenchstat with a side, a run
	// never with one.
	Side string
	// Where names the store, for the message of an unknown ID.
	Where string
	// Warmup is the warm-up of a run with a stored scenario (its
	// load.warmup); nil or a run without one: no warm-up.
	Warmup func(store.Run) time.Duration
}

// ExportID writes the stored run id's windows (Export), or, when id names a
// comparison, one side's rounds (ExportRounds), to out. The warnings are
// for the user (a comparison with no completed round of that side yet);
// errors the user is to fix match ErrBadInput.
func ExportID(ctx context.Context, out io.Writer, st ExportStore, id string, opts IDOptions) (warnings []string, err error) {
	run, err := st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c, cerr := st.GetComparison(ctx, id)
		if errors.Is(cerr, store.ErrNotFound) {
			return nil, badInputf("no run or comparison %s in %s (see longhaul runs)", id, opts.Where)
		}
		if cerr != nil {
			return nil, fmt.Errorf("read comparison %s: %w", id, cerr)
		}
		return exportComparison(ctx, out, st, c, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	if opts.Side != "" {
		return nil, badInputf("--side is for a comparison; %s is a run", id)
	}
	ws, err := st.Windows(ctx, id, store.AllWindows)
	if err != nil {
		return nil, fmt.Errorf("read windows of run %s: %w", id, err)
	}
	if opts.Op != "" && !hasOp(ws, opts.Op) {
		return nil, badInputf("--op %s: run %s has no such op (ops: %s)", opts.Op, id, strings.Join(opNames(ws), ", "))
	}
	warmup := time.Duration(0)
	if run.Scenario != "" && opts.Warmup != nil {
		warmup = opts.Warmup(run)
	}
	return nil, Export(out, ws, opts.Format, ExportOptions{Op: opts.Op, Warmup: warmup})
}

func exportComparison(ctx context.Context, out io.Writer, st ExportStore, c store.Comparison, opts IDOptions) ([]string, error) {
	side := store.Side(strings.ToUpper(opts.Side))
	if opts.Format != FormatBenchstat || (side != store.SideA && side != store.SideB) {
		return nil, badInputf("%s is a comparison: export one side's rounds with --format benchstat --side A (or B)", c.ID)
	}
	n, err := ExportRounds(ctx, out, c, side, opts.Op, func(ctx context.Context, runID string) ([]window.Window, error) {
		return st.Windows(ctx, runID, store.AllWindows)
	})
	if err != nil {
		return nil, fmt.Errorf("export comparison %s: %w", c.ID, err)
	}
	if n == 0 {
		return []string{fmt.Sprintf("comparison %s has no completed round of side %s yet", c.ID, side)}, nil
	}
	return nil, nil
}

func hasOp(ws []window.Window, op string) bool {
	for _, w := range ws {
		if _, ok := w.Ops[op]; ok {
			return true
		}
	}
	return false
}

// opNames are the ops of ws, sorted.
func opNames(ws []window.Window) []string {
	var out []string
	for _, w := range ws {
		for name := range w.Ops {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}
