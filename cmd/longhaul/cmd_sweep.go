package main

import "github.com/spf13/cobra"

// sweepCmd is a placeholder until its issue lands.
func (a *app) sweepCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sweep",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul sweep is not implemented yet")
		},
	}
}
