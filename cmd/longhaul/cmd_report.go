package main

import "github.com/spf13/cobra"

// reportCmd is a placeholder until its issue lands.
func (a *app) reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "report",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul report is not implemented yet")
		},
	}
}
