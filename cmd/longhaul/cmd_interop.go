package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/interop"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// importFlags are the flags of longhaul import k6.
type importFlags struct {
	name   string
	window time.Duration
	format string
	storeFlags
}

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Bring results of another tool in as a run (k6)",
	}
	var f importFlags
	k6 := &cobra.Command{
		Use:   "k6 FILE",
		Short: "Import k6 JSON output (k6 run --out json=FILE) as a run of kind imported",
		Long: `Import k6 reads k6's JSON output (one object per line; plain or gzip),
streaming in constant memory, cuts its points into windows by their
timestamps and stores them as a completed run of kind "imported": requests
from http_reqs, latency from http_req_duration, errors from http_req_failed
(classified by status and error_code), ops from the name tag (else method
and URL template), VUs from vus, dropped starts from dropped_iterations, and
other metrics as custom series. The analysis runs on it and says what it
cannot judge without server-side probes. Lines that are not k6 output are
counted and listed by line number; only a file with nothing usable fails.
Exit code: 0 imported, 2 bad input (no file, nothing usable).`,
		Example: "  longhaul import k6 results.json.gz --name checkout-nightly --window 30s",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.importK6(cmd.Context(), args[0], f)
		},
	}
	fs := k6.Flags()
	fs.StringVar(&f.name, "name", "", "name of the run (default: the file's name)")
	fs.DurationVar(&f.window, "window", interop.DefaultK6Window, "length of one window")
	fs.StringVar(&f.format, "format", "text", "output: text, or json (one {\"type\":\"import\"} object)")
	f.storeFlags.register(fs)
	cmd.AddCommand(k6)
	return cmd
}

// importObject is longhaul import k6 --format json.
type importObject struct {
	Type       string             `json:"type"`
	RunID      string             `json:"run_id"`
	Name       string             `json:"name"`
	Windows    int                `json:"windows"`
	Lines      int64              `json:"lines"`
	Points     int64              `json:"points"`
	LatePoints int64              `json:"late_points"`
	Requests   int64              `json:"requests"`
	BadLines   int64              `json:"bad_lines"`
	FirstBad   []interop.BadLine  `json:"first_bad_lines,omitempty"`
	Missing    []string           `json:"missing,omitempty"`
	Custom     []string           `json:"custom,omitempty"`
	Start      time.Time          `json:"start"`
	End        time.Time          `json:"end"`
	Findings   []analysis.Finding `json:"findings"`
}

func (a *app) importK6(ctx context.Context, file string, f importFlags) error {
	format, err := report.ParseFormat(f.format)
	if err != nil {
		return badInputf("--format: %v", err)
	}
	if f.window <= 0 {
		return badInputf("--window must be > 0, got %s", f.window)
	}
	st, where, err := a.openStore(ctx, f.storeFlags)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := interop.ImportK6(ctx, st, file, interop.ImportOptions{Name: f.name, K6Options: interop.K6Options{Window: f.window}})
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return badInputf("import %s: %v", file, unwrapPath(err))
	case errors.Is(err, interop.ErrNothingUsable):
		return badInputf("import %s: %v (is it k6 run --out json output?)", file, err)
	case err != nil && res.Run.ID == "":
		return badInputf("import %s: %v", file, err)
	case err != nil:
		return fmt.Errorf("import %s into run %s: %w", file, res.Run.ID, err)
	}
	s := res.Stats
	if format == report.JSON {
		fsOut := res.Findings
		if fsOut == nil {
			fsOut = []analysis.Finding{}
		}
		b, err := json.Marshal(importObject{
			Type: "import", RunID: res.Run.ID, Name: res.Run.Name, Windows: s.Windows, Lines: s.Lines, Points: s.Points,
			LatePoints: s.LatePoints, Requests: s.Requests, BadLines: s.BadLines, FirstBad: s.BadLineNumbers,
			Missing: s.Missing, Custom: s.Custom, Start: s.Start.UTC(), End: s.End.UTC(), Findings: fsOut,
		})
		if err != nil {
			return fmt.Errorf("encode import: %w", err)
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintf(a.stdout, "imported run %s (%s) into %s: %d windows of %s, %d points, %d requests, %s to %s\n",
		res.Run.ID, res.Run.Name, where, s.Windows, f.window, s.Points, s.Requests, utcTime(s.Start), utcTime(s.End))
	if s.BadLines > 0 {
		fmt.Fprintf(a.stdout, "%d bad lines left out:\n", s.BadLines)
		for _, b := range s.BadLineNumbers {
			fmt.Fprintf(a.stdout, "  %s\n", b)
		}
		if int64(len(s.BadLineNumbers)) < s.BadLines {
			fmt.Fprintf(a.stdout, "  ... and %d more\n", s.BadLines-int64(len(s.BadLineNumbers)))
		}
	}
	if s.LatePoints > 0 {
		fmt.Fprintf(a.stdout, "%d points arrived after their window had closed and were left out\n", s.LatePoints)
	}
	if len(s.Missing) > 0 {
		fmt.Fprintf(a.stdout, "not in the file: %s\n", strings.Join(s.Missing, ", "))
	}
	if len(s.Custom) > 0 {
		fmt.Fprintf(a.stdout, "custom series: %s\n", strings.Join(s.Custom, ", "))
	}
	report.WriteFindings(a.stdout, res.Findings)
	fmt.Fprintf(a.stdout, "longhaul report %s shows it; longhaul export %s --format csv takes it out\n", res.Run.ID, res.Run.ID)
	return nil
}

func utcTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// exportFlags are the flags of longhaul export.
type exportFlags struct {
	format string
	op     string
	side   string
	storeFlags
}

func (a *app) exportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "Write a run's windows (or a comparison's rounds) as CSV, NDJSON or benchstat input",
		Long: `Export writes a stored run's windows to stdout:

  --format csv        one row per window with a header: time, index,
                      incarnation, requests, errors by class, dropped, rps,
                      p50..max, VUs, probe readings, custom series
  --format json       the windows as NDJSON, as longhaul drive --format json
                      prints them
  --format benchstat  Go benchmark lines, one per window after warm-up, with
                      units p50-ms .. max-ms, req/s, errors/req, cpu-µs/req ...:
                      benchstat a.txt b.txt compares two runs

--op NAME exports one op's figures. For a comparison ID, --format benchstat
--side A (or B) writes one line per round of that side (its windows after
warm-up merged): export both sides and benchstat compares the builds.`,
		Example: `  longhaul export 0199a3c4-... --format csv > windows.csv
  longhaul export RUN_A --format benchstat > a.txt; longhaul export RUN_B --format benchstat > b.txt; benchstat a.txt b.txt
  longhaul export COMPARISON --format benchstat --side A > a.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.export(cmd.Context(), args[0], f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "csv", "csv, json or benchstat")
	fs.StringVar(&f.op, "op", "", "export this op's figures only")
	fs.StringVar(&f.side, "side", "", "for a comparison: A or B (with --format benchstat)")
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) export(ctx context.Context, id string, f exportFlags) error {
	format, err := interop.ParseFormat(f.format)
	if err != nil {
		return badInputf("--format: %v", err)
	}
	st, where, err := a.openStore(ctx, f.storeFlags)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c, cerr := st.GetComparison(ctx, id)
		if errors.Is(cerr, store.ErrNotFound) {
			return badInputf("no run or comparison %s in %s (see longhaul runs)", id, where)
		}
		if cerr != nil {
			return fmt.Errorf("read comparison %s: %w", id, cerr)
		}
		return a.exportComparison(ctx, st, c, format, f)
	}
	if err != nil {
		return fmt.Errorf("read run %s: %w", id, err)
	}
	if f.side != "" {
		return badInputf("--side is for a comparison; %s is a run", id)
	}
	ws, err := st.Windows(ctx, id, store.AllWindows)
	if err != nil {
		return fmt.Errorf("read windows of run %s: %w", id, err)
	}
	if f.op != "" && !hasOp(ws, f.op) {
		return badInputf("--op %s: run %s has no such op (ops: %s)", f.op, id, strings.Join(opNames(ws), ", "))
	}
	warmup := time.Duration(0)
	if run.Scenario != "" {
		warmup = a.storedScenario(run).Load.Warmup.D()
	}
	return interop.Export(a.stdout, ws, format, interop.ExportOptions{Op: f.op, Warmup: warmup})
}

func (a *app) exportComparison(ctx context.Context, st store.Store, c store.Comparison, format interop.Format, f exportFlags) error {
	side := store.Side(strings.ToUpper(f.side))
	if format != interop.FormatBenchstat || (side != store.SideA && side != store.SideB) {
		return badInputf("%s is a comparison: export one side's rounds with --format benchstat --side A (or B)", c.ID)
	}
	n, err := interop.ExportRounds(ctx, a.stdout, c, side, f.op, func(ctx context.Context, runID string) ([]window.Window, error) {
		return st.Windows(ctx, runID, store.AllWindows)
	})
	if err != nil {
		return fmt.Errorf("export comparison %s: %w", c.ID, err)
	}
	if n == 0 {
		fmt.Fprintf(a.stderr, "longhaul: comparison %s has no completed round of side %s yet\n", c.ID, side)
	}
	return nil
}

func hasOp(ws []window.Window, op string) bool {
	for _, w := range ws {
		if _, ok := w.Ops[op]; ok {
			return true
		}
	}
	return false
}

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
