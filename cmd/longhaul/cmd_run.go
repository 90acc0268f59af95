package main

import "github.com/spf13/cobra"

// runCmd is a placeholder until its issue lands.
func (a *app) runCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "run",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul run is not implemented yet")
		},
	}
}
