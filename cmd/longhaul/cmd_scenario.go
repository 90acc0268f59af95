package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// scenarioCmd groups the commands that work on scenario files.
func (a *app) scenarioCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "Work with scenario files (see scenarios/README.md for the format)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files; print every problem as file:line: message (exit 2 if any)",
		Long: `Validate checks each scenario file as longhaul run would before it starts
anything: its keys and values (every problem as file:line: message), and
whether this host can serve its environment — a Docker engine and the images
for the docker provider, the target's command and PostgreSQL or MariaDB
server binaries for the local one. Any problem: exit 2.

A file with no target at all (no environment.target.url, nothing to start) is
a load description for longhaul drive --target URL: validate says so, and that
run would refuse it.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			bad := false
			for _, f := range files {
				s, err := scenarios.LoadFile(f)
				if err == nil {
					err = provision.Preflight(cmd.Context(), s.Environment, "", provision.Options{Logger: discard, Route: a.getenv(dockerRouteEnv)})
					switch {
					case err == nil:
						fmt.Fprintf(a.stdout, "%s: ok\n", f)
					case errors.Is(err, provision.ErrNoTarget):
						fmt.Fprintf(a.stdout, "%s: ok for longhaul drive --target URL; longhaul run refuses it (%v)\n", f, err)
					default:
						bad = true
						fmt.Fprintf(a.stderr, "%s: %v\n", f, err)
					}
					continue
				}
				bad = true
				var errs scenarios.Errors
				if !errors.As(err, &errs) {
					fmt.Fprintf(a.stderr, "%s: %v\n", f, err)
					continue
				}
				for _, e := range errs {
					fmt.Fprintln(a.stderr, e.Error())
				}
			}
			if bad {
				return errSilent{exitBadInput}
			}
			return nil
		},
	})
	return cmd
}
