package main

import "github.com/spf13/cobra"

// runsCmd is a placeholder until its issue lands.
func (a *app) runsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "runs",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul runs is not implemented yet")
		},
	}
}
