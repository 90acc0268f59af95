package main

import "github.com/spf13/cobra"

// analyzeCmd is a placeholder until its issue lands.
func (a *app) analyzeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "analyze",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul analyze is not implemented yet")
		},
	}
}
