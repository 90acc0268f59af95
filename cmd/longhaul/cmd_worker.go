package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/soakworker"
)

// workerFlags are the flags of longhaul worker.
type workerFlags struct {
	temporal    string
	namespace   string
	metricsAddr string
	verbose     bool
	pushURL     string
	hostID      string
	slots       int
	storeFlags
}

func (a *app) workerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT",
		Short: "Run a longhaul worker for a Temporal cluster until Ctrl-C",
		Long: `Worker polls the general task queue and this host's queue of a Temporal
cluster: it runs soaks' workflows and the activities of environments placed on
this host. Every worker of a cluster must share one store (--store, or
$LONGHAUL_STORE; PostgreSQL for workers on several hosts).

The host queue is longhaul-host-ID (ID: --host-id, default the hostname), so
a worker restarted with the same host id takes over the environments there;
$LONGHAUL_HOST_QUEUE overrides the whole queue name.`,
		Example: `  longhaul worker --temporal temporal.internal:7233 --store postgres://longhaul@db/longhaul`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.worker(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.temporal, "temporal", "", "Temporal frontend HOST:PORT (required)")
	fs.StringVar(&f.namespace, "namespace", "default", "Temporal namespace")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve worker and run metrics at http://ADDR/metrics")
	verboseFlag(fs, &f.verbose)
	fs.StringVar(&f.hostID, "host-id", "", "this host's id: its queue is longhaul-host-ID and its runs record it as their host (default the hostname)")
	fs.IntVar(&f.slots, "slots", 1, "measurement slots: how many soaks (or comparisons) this host drives at once; more wait, queued, for a free slot on any host")
	pushURLFlag(fs, &f.pushURL, "push the live metrics of the runs this worker drives after every window to URL (unless the run names its own)")
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) worker(ctx context.Context, f workerFlags) error {
	if f.temporal == "" {
		return badInputf("--temporal HOST:PORT is required (for the embedded server use 'longhaul dev')")
	}
	if err := asBadInput(launch.CheckPushURL(f.pushURL)); err != nil {
		return err
	}
	if f.slots < 1 {
		return badInputf("--slots must be at least 1, got %d", f.slots)
	}
	svc, err := a.openHost(ctx, f.storeFlags, f.metricsAddr, f.verbose)
	if err != nil {
		return err
	}
	defer svc.Close()
	c, err := a.dialTemporal(ctx, f.temporal, f.namespace, svc.Logs.Temporal)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := a.startWorker(ctx, c, svc, soakworker.Config{PushURL: f.pushURL, HostID: f.hostID, Slots: f.slots})
	if err != nil {
		return err
	}
	defer w.Stop()
	slots := "1 measurement slot"
	if f.slots != 1 {
		slots = fmt.Sprintf("%d measurement slots", f.slots)
	}
	fmt.Fprintf(a.stdout, "worker on %s (namespace %s), queues longhaul and %s, %s; store %s\n", f.temporal, f.namespace, w.HostQueue(), slots, svc.Where)
	a.untilInterrupted(ctx)
	fmt.Fprintln(a.stderr, "longhaul: stopping the worker; its runs resume on the next worker of this host")
	return nil
}
