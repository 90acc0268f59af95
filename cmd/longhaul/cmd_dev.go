package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/soakworker"
)

// devFlags are the flags of longhaul dev.
type devFlags struct {
	port        int
	worker      bool
	metricsAddr string
	uiAddr      string
	verbose     bool
	pushURL     string
	storeFlags
}

func (a *app) devCmd() *cobra.Command {
	var f devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the embedded Temporal server and a worker until Ctrl-C",
		Long: `Dev runs the embedded Temporal server (state in DATA/temporal/temporal.db)
and a worker in this process until interrupted, and prints the address to give
'longhaul run --temporal'. Runs in flight when it stops continue when it
starts again on the same data directory.`,
		Example: `  longhaul dev
  longhaul run scenarios/demo.yaml --temporal 127.0.0.1:7233`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.dev(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.port, "port", 0, "frontend port on 127.0.0.1 (default 7233, or a free port when 7233 is taken)")
	fs.BoolVar(&f.worker, "worker", true, "also run a worker in this process (--worker=false: the server only; run 'longhaul worker' beside it)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve worker and run metrics at http://ADDR/metrics")
	pushURLFlag(fs, &f.pushURL, "push each run's live metrics after every window to URL")
	uiAddrFlag(fs, &f.uiAddr, charts.DefaultAddr, "serve the browser UI on HOST:PORT (a free port when it is taken)")
	verboseFlag(fs, &f.verbose)
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) dev(ctx context.Context, f devFlags) error {
	if f.port < 0 || f.port > 65535 {
		return badInputf("--port %d: want 1..65535", f.port)
	}
	if err := asBadInput(launch.CheckPushURL(f.pushURL)); err != nil {
		return err
	}
	svc, err := a.openHost(ctx, f.storeFlags, f.metricsAddr, f.verbose)
	if err != nil {
		return err
	}
	defer svc.Close()
	srv, err := a.startDevServer(ctx, svc.DataDir, f.port, svc.Logs.Temporal)
	if err != nil {
		return err
	}
	defer srv.Stop()
	c, err := a.dialTemporal(ctx, srv.Address(), srv.Namespace(), svc.Logs.Temporal)
	if err != nil {
		return err
	}
	defer c.Close()
	ui, err := a.startUI(svc.Store, f.uiAddr, true, schedule.New(c).Summaries)
	if err != nil {
		return err
	}
	if ui != nil {
		defer ui.Close()
	}
	workerNote := "no worker"
	if f.worker {
		w, err := a.startWorker(ctx, c, svc, soakworker.Config{PushURL: f.pushURL})
		if err != nil {
			return err
		}
		defer w.Stop()
		workerNote = "worker on " + w.HostQueue()
	}
	fmt.Fprintf(a.stdout, "temporal dev server at %s (namespace %s), %s; store %s\n", srv.Address(), srv.Namespace(), workerNote, svc.Where)
	if ui != nil {
		fmt.Fprintf(a.stdout, "longhaul UI at %s\n", ui.URL())
	}
	fmt.Fprintf(a.stdout, "run soaks with: longhaul run FILE --temporal %s\n", srv.Address())
	a.untilInterrupted(ctx)
	fmt.Fprintln(a.stderr, "longhaul: stopping the dev server; runs in flight continue when it starts again")
	return nil
}
