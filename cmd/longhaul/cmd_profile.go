package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/profiles"
	"github.com/longhaul-dev/longhaul/store"
)

// profileFlags are the flags of longhaul profile.
type profileFlags struct {
	window, from, to int
	side, kind, out  string
	storeFlags
}

func (a *app) profileCmd() *cobra.Command {
	var f profileFlags
	cmd := &cobra.Command{
		Use:   "profile ID",
		Short: "Write a run's (or a comparison side's) CPU or heap profiles, merged, as a .pb.gz for go tool pprof",
		Long: `Profile merges the profiles stored with a run (probes.profile in its
scenario) and writes them as one gzipped profile.proto that go tool pprof
opens. For a comparison, --side A or B merges that side's rounds.

--window N takes the profile of window N alone; --from N and --to M (window
indexes, both included) a range. --kind heap writes the heap profiles (the
first and the latest of each incarnation are kept) instead of CPU.
Exit code: 0 written, 2 bad input, no such run or no profiles.`,
		Example: `  longhaul profile 0199a3c4-... -o cpu.pb.gz && go tool pprof -top cpu.pb.gz
  longhaul profile cmp-0199a3c4-... --side B --from 10 --to 40 -o b.pb.gz
  longhaul profile 0199a3c4-... --kind heap --window 120 -o heap.pb.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.profile(cmd.Context(), args[0], f, cmd.Flags())
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.window, "window", -1, "the profile of this window alone")
	fs.IntVar(&f.from, "from", 0, "first window of the range")
	fs.IntVar(&f.to, "to", -1, "last window of the range (default: the end)")
	fs.StringVar(&f.side, "side", "", "a comparison's side: A or B")
	fs.StringVar(&f.kind, "kind", "cpu", "cpu or heap")
	fs.StringVarP(&f.out, "output", "o", "", "file to write (default: ID[-SIDE].pb.gz)")
	f.storeFlags.register(fs)
	return cmd
}

type changedFlags interface{ Changed(string) bool }

// profile is longhaul profile.
func (a *app) profile(ctx context.Context, id string, f profileFlags, set changedFlags) error {
	sel, err := profiles.NewSelection(id, f.side, f.kind, profiles.WindowRange{
		Window: f.window, From: f.from, To: f.to,
		HasWindow: set.Changed("window"), HasFrom: set.Changed("from"), HasTo: set.Changed("to"),
	})
	if err != nil {
		return badInput{err}
	}
	out := f.out
	if out == "" {
		out = id + ".pb.gz"
		if f.side != "" {
			out = id + "-" + f.side + ".pb.gz"
		}
	}
	return a.withStore(ctx, f.storeFlags, func(st store.Store, where string) error {
		file, err := os.Create(out)
		if err != nil {
			return badInputf("-o: %v", err)
		}
		n, err := profiles.Write(ctx, st, sel, file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		switch {
		case errors.Is(err, profiles.ErrBadSelection):
			os.Remove(out)
			return badInputf("%s (in %s)", strings.TrimPrefix(err.Error(), profiles.ErrBadSelection.Error()+": "), where)
		case errors.Is(err, profiles.ErrNone):
			os.Remove(out)
			return badInputf("no %s profiles of %s in that range (in %s): does its scenario have probes.profile?", sel.Kind, id, where)
		case err != nil:
			os.Remove(out)
			return fmt.Errorf("write the profiles of %s: %w", id, err)
		}
		fmt.Fprintf(a.stdout, "wrote %s: %d %s profiles merged (go tool pprof %s)\n", out, n, sel.Kind, out)
		return nil
	})
}
