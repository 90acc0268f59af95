package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

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
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			bad := false
			for _, f := range files {
				_, err := scenarios.LoadFile(f)
				if err == nil {
					fmt.Fprintf(a.stdout, "%s: ok\n", f)
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
