package main

import "github.com/spf13/cobra"

// devCmd is a placeholder until its issue lands.
func (a *app) devCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "dev",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul dev is not implemented yet")
		},
	}
}
