package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/store"
)

// uiFlags are the flags of longhaul ui.
type uiFlags struct {
	addr  string
	token string
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
	f.storeFlags.register(fs)
	return cmd
}

func (a *app) ui(ctx context.Context, f uiFlags) error {
	st, where, err := a.openStore(ctx, f.storeFlags)
	if err != nil {
		return err
	}
	defer st.Close()
	if f.token == "" {
		f.token = a.getenv("LONGHAUL_UI_TOKEN")
	}
	ui, err := charts.Listen(charts.Options{Store: st, Addr: f.addr, Token: f.token, Log: a.logger()})
	if err != nil {
		return badInput{err}
	}
	defer ui.Close()
	fmt.Fprintf(a.stdout, "longhaul UI at %s (store %s); Ctrl-C stops it\n", ui.URL(), where)
	select {
	case <-ctx.Done():
	case <-a.interrupts:
	}
	return nil
}

// uiAddrFlag registers --ui-addr for run and dev.
func uiAddrFlag(fs *pflag.FlagSet, p *string, def, what string) {
	fs.StringVar(p, "ui-addr", def, what+" ('off': no UI; a non-loopback address needs $LONGHAUL_UI_TOKEN)")
}

// startUI serves the UI for a command that runs soaks. addr "off" serves
// nothing (nil, nil). When fallback is set and addr's port is taken, a free
// port on the same host is used instead.
func (a *app) startUI(st store.Store, addr string, fallback bool) (*charts.Running, error) {
	if strings.EqualFold(addr, "off") || addr == "" {
		return nil, nil
	}
	opts := charts.Options{Store: st, Addr: addr, Token: a.getenv("LONGHAUL_UI_TOKEN"), Log: a.logger()}
	ui, err := charts.Listen(opts)
	if err != nil && fallback && errors.Is(err, syscall.EADDRINUSE) {
		if i := strings.LastIndex(addr, ":"); i >= 0 {
			opts.Addr = addr[:i] + ":0"
			ui, err = charts.Listen(opts)
		}
	}
	if err != nil {
		return nil, badInputf("--ui-addr: %v", err)
	}
	return ui, nil
}
