package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/fleet"
	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/store"
)

// serverFlags are the flags of longhaul server.
type serverFlags struct {
	persistence string
	addr        string
	uiAddr      string
	namespace   string
	pushURL     string
	storeFlags
}

// serverStartTimeout bounds the server's start: a new PostgreSQL database
// takes its whole schema (~20 migration steps) first.
const serverStartTimeout = 3 * time.Minute

func (a *app) serverCmd() *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a Temporal server for a team (on PostgreSQL) until Ctrl-C",
		Long: `Server runs the embedded Temporal server for workers and clients on other
machines, with its state in PostgreSQL (--persistence postgres://…; the
database and DATABASE` + devserver.VisibilitySuffix + ` are created when missing) or in an
SQLite file. The schema is set up or migrated at every start; two servers
starting at once on one database are safe. The namespace is created.

It is one node: for a highly available cluster run Temporal's own images and
point 'longhaul worker --temporal' and 'longhaul run --temporal' at it.
With --ui-addr it also serves the browser UI on the runs of --store. With
--push-url it pushes the fleet's state every 10 s (runs queued, pending and
running; measurement slots held per worker host; package fleet) and its own
process metrics to VictoriaMetrics.`,
		Example: `  longhaul server --persistence postgres://temporal:secret@db:5432/temporal --addr 0.0.0.0:7233
  longhaul worker --temporal server.internal:7233 --store postgres://longhaul:secret@db/results`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.server(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.persistence, "persistence", "", "Temporal's state: a postgres:// URL or an SQLite file (default $LONGHAUL_PERSISTENCE, else DATA/temporal/"+devserver.DBFileName+")")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:7233", "HOST:PORT the frontend serves on (0.0.0.0:7233 for other machines)")
	fs.StringVar(&f.namespace, "namespace", devserver.DefaultNamespace, "Temporal namespace to create")
	uiAddrFlag(fs, &f.uiAddr, "off", "serve the browser UI on HOST:PORT")
	pushURLFlag(fs, &f.pushURL, "push the fleet's state (queued and running soaks, slots held per host) of --store every 10 s to URL")
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) server(ctx context.Context, f serverFlags) error {
	host, port, err := devserver.ParseListenAddr(f.addr)
	if err != nil {
		return badInputf("--addr: %v", err)
	}
	if err := asBadInput(launch.CheckPushURL(f.pushURL)); err != nil {
		return err
	}
	opts := devserver.Options{Host: host, Port: port, Namespace: f.namespace, Logger: a.logger()}
	temporalDir := func() (string, error) {
		dir, err := a.dataDir(f.data)
		return filepath.Join(dir, datadir.TemporalDir), err
	}
	if err := opts.SetPersistence(cmp.Or(f.persistence, a.getenv("LONGHAUL_PERSISTENCE")), temporalDir); err != nil {
		return badInput{err}
	}
	startCtx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	srv, err := devserver.Start(startCtx, opts)
	cancel()
	if err != nil {
		return badInput{err}
	}
	defer srv.Stop()
	withUI := !strings.EqualFold(f.uiAddr, "off") && f.uiAddr != ""
	var (
		st    store.Store
		where string
	)
	if withUI || f.pushURL != "" {
		if st, where, err = a.openStore(ctx, f.storeFlags); err != nil {
			return err
		}
		defer st.Close()
	}
	if f.pushURL != "" {
		pctx, stopPush := context.WithCancel(ctx)
		defer stopPush()
		hostname, _ := os.Hostname()
		go fleet.Pusher{Store: st, URL: f.pushURL, Host: hostname, Logger: a.logger()}.Run(pctx)
		fmt.Fprintf(a.stdout, "pushing the fleet's state of store %s to %s\n", where, f.pushURL)
	}
	if withUI {
		ui, err := a.startUI(st, f.uiAddr, false, nil)
		if err != nil {
			return err
		}
		defer ui.Close()
		fmt.Fprintf(a.stdout, "longhaul UI at %s (store %s)\n", ui.URL(), where)
	}
	fmt.Fprintf(a.stdout, "temporal server at %s (namespace %s), persistence %s\n", srv.ListenAddress(), srv.Namespace(), srv.Persistence())
	fmt.Fprintf(a.stdout, "workers: longhaul worker --temporal %s --store postgres://…\n", srv.Address())
	a.untilInterrupted(ctx)
	fmt.Fprintln(a.stderr, "longhaul: stopping the server; runs in flight continue when it starts again")
	return nil
}
