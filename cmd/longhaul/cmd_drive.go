package main

import "github.com/spf13/cobra"

// driveCmd is a placeholder until its issue lands.
func (a *app) driveCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "drive",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul drive is not implemented yet")
		},
	}
}
