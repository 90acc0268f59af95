package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/interop"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
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

// importK6 is longhaul import k6 FILE.
func (a *app) importK6(ctx context.Context, file string, f importFlags) error {
	format, err := interop.ParseImportFlags(f.format, f.window)
	if err != nil {
		return err
	}
	return a.withStore(ctx, f.storeFlags, func(st store.Store, where string) error {
		res, err := interop.ImportK6(ctx, st, file, interop.ImportOptions{Name: f.name, K6Options: interop.K6Options{Window: f.window}})
		if err != nil {
			return interop.ImportError(file, res, err)
		}
		if format == report.JSON {
			return interop.WriteImportJSON(a.stdout, res)
		}
		return interop.WriteImportText(a.stdout, res, where, f.window)
	})
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

// export is longhaul export ID.
func (a *app) export(ctx context.Context, id string, f exportFlags) error {
	format, err := interop.ParseFormat(f.format)
	if err != nil {
		return badInputf("--format: %v", err)
	}
	return a.withStore(ctx, f.storeFlags, func(st store.Store, where string) error {
		warnings, err := interop.ExportID(ctx, a.stdout, st, id, interop.IDOptions{
			Format: format, Op: f.op, Side: f.side, Where: where,
			Warmup: func(run store.Run) time.Duration { return a.storedScenario(run).Load.Warmup.D() },
		})
		for _, w := range warnings {
			fmt.Fprintf(a.stderr, "longhaul: %s\n", w)
		}
		return err
	})
}
