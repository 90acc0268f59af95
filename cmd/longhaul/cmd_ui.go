package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/schedule"
	"github.com/longhaul-dev/longhaul/store"
)

// uiFlags are the flags of longhaul ui.
type uiFlags struct {
	addr      string
	token     string
	temporal  string
	namespace string
	storeFlags
}

func (a *app) uiCmd() *cobra.Command {
	var f uiFlags
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the browser UI: runs, per-window charts, findings",
		Long: `UI serves the runs in the store as web pages: the list of runs, each run's
findings and per-window charts (throughput, latency, CPU, memory, database),
the window table and downloads. Read-only; everything comes from this binary.

It binds to loopback by default. Binding to any other address needs a token
(--token or $LONGHAUL_UI_TOKEN): open the printed address once, with its
?token=, and a cookie keeps you in.`,
		Example: `  longhaul ui
  longhaul ui --addr 127.0.0.1:9000 --store postgres://longhaul@db/longhaul
  LONGHAUL_UI_TOKEN=$(openssl rand -hex 16) longhaul ui --addr 0.0.0.0:8099`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.ui(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "addr", charts.DefaultAddr, "HOST:PORT to serve on")
	fs.StringVar(&f.token, "token", "", "token required of every visitor (default $LONGHAUL_UI_TOKEN; needed off loopback)")
	fs.StringVar(&f.temporal, "temporal", "", "Temporal frontend HOST:PORT whose schedules the schedules page lists (default: none)")
	fs.StringVar(&f.namespace, "namespace", "default", "Temporal namespace")
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) ui(ctx context.Context, f uiFlags) error {
	return a.withStore(ctx, f.storeFlags, func(st store.Store, where string) error {
		var schedules charts.Schedules
		if f.temporal != "" {
			c, err := a.dialTemporal(ctx, f.temporal, f.namespace, discard)
			if err != nil {
				return err
			}
			defer c.Close()
			schedules = schedule.New(c).Summaries
		}
		ui, err := charts.Listen(charts.Options{Store: st, Addr: f.addr, Token: cmp.Or(f.token, a.getenv("LONGHAUL_UI_TOKEN")), Log: a.logger(), Schedules: schedules})
		if err != nil {
			return badInput{err}
		}
		defer ui.Close()
		fmt.Fprintf(a.stdout, "longhaul UI at %s (store %s); Ctrl-C stops it\n", ui.URL(), where)
		a.untilInterrupted(ctx)
		return nil
	})
}

// startUI serves the UI for a command that runs soaks, with the schedules
// page's lister when schedules is not nil. addr "off" serves nothing (nil,
// nil). When anyPort is set and addr's port is taken, a free port on the
// same host is used instead.
func (a *app) startUI(st store.Store, addr string, anyPort bool, schedules charts.Schedules) (*charts.Running, error) {
	if strings.EqualFold(addr, "off") || addr == "" {
		return nil, nil
	}
	ui, err := charts.Listen(charts.Options{
		Store: st, Addr: addr, Token: a.getenv("LONGHAUL_UI_TOKEN"), Log: a.logger(), Schedules: schedules, AnyPortIfTaken: anyPort,
	})
	if err != nil {
		return nil, badInputf("--ui-addr: %v", err)
	}
	return ui, nil
}
