package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// reportFlags are the flags of longhaul report.
type reportFlags struct {
	format string
	storeFlags
}

func (a *app) reportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:     "report RUN_ID",
		Short:   "Print a stored run: status, windows, summary, findings",
		Example: "  longhaul report 0199a3c4-...\n  longhaul report 0199a3c4-... --format json\n  longhaul report 0199a3c4-... --format html > report.html",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.report(cmd.Context(), args[0], f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "text", "output: text, json (NDJSON: run, windows, summary, findings), or html (the UI's run page as one self-contained file)")
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) report(ctx context.Context, id string, f reportFlags) error {
	html := f.format == "html"
	format, err := report.ParseFormat(f.format)
	if err != nil && !html {
		return badInputf("--format: %v (or html)", err)
	}
	if f.store == "" {
		f.store = a.getenv("LONGHAUL_STORE")
	}
	st, where, err := a.openStore(ctx, f.storeFlags)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return badInputf("no run %s in %s (see longhaul runs)", id, where)
	}
	if err != nil {
		return fmt.Errorf("read run %s: %w", id, err)
	}
	if html {
		return charts.WriteRunPage(ctx, a.stdout, st, run.ID)
	}
	ws, err := st.Windows(ctx, id, store.AllWindows)
	if err != nil {
		return fmt.Errorf("read windows of run %s: %w", id, err)
	}
	fs, err := st.Findings(ctx, id)
	if err != nil {
		return fmt.Errorf("read findings of run %s: %w", id, err)
	}
	rep, err := report.NewRunReport(run, ws, fs)
	if err != nil {
		return err
	}
	if format == report.JSON {
		return report.WriteRunJSON(a.stdout, rep)
	}
	return report.WriteRunText(a.stdout, rep)
}
