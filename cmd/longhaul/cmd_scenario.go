package main

import "github.com/spf13/cobra"

// scenarioCmd is a placeholder until its issue lands.
func (a *app) scenarioCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "scenario",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul scenario is not implemented yet")
		},
	}
}
