package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// reportFlags are the flags of longhaul report.
type reportFlags struct {
	format string
	failOn failOnFlag
	storeFlags
}

func (a *app) reportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report ID",
		Short: "Print a stored run (status, windows, summary, findings, thresholds, gate) or comparison",
		Long: `Report prints a stored run: its status, one line per window, the summary, the
probe problems, the findings and, when the scenario has thresholds or the run
was started with --fail-on, each threshold with its value and the gate. The
gate is judged with the run's own --fail-on unless --fail-on is given here.
The exit code is 0 whatever the gate says (see the "gate" line).

For a comparison's ID it prints the comparison: its sides, the equivalence
check, one line per round and the verdict of every metric (--format json:
one comparison object, as the last line of longhaul compare --format json).`,
		Example: "  longhaul report 0199a3c4-...\n  longhaul report 0199a3c4-... --format json\n  longhaul report 0199a3c4-... --fail-on critical\n  longhaul report 0199a3c4-... --format html > report.html",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.report(cmd.Context(), args[0], f, cmd.Flags().Changed("fail-on"))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "text", "output: text, json (NDJSON: run, windows, summary, findings, gate), or html (the UI's run page as one self-contained file)")
	f.failOn.register(fs)
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) report(ctx context.Context, id string, f reportFlags, failOnSet bool) error {
	html := f.format == "html"
	format, err := report.ParseFormat(f.format)
	if err != nil && !html {
		return badInputf("--format: %v (or html)", err)
	}
	failOn, err := f.failOn.severity()
	if err != nil {
		return err
	}
	return a.withStore(ctx, f.storeFlags, func(st store.Store, where string) error {
		switch {
		case html:
			err = charts.WriteStoredPage(ctx, a.stdout, st, id)
		case failOnSet:
			err = report.WriteStored(ctx, a.stdout, st, id, format, &failOn)
		default:
			err = report.WriteStored(ctx, a.stdout, st, id, format, nil)
		}
		if errors.Is(err, report.ErrNotStored) {
			return badInputf("no run or comparison %s in %s (see longhaul runs, longhaul comparisons)", id, where)
		}
		return err
	})
}
