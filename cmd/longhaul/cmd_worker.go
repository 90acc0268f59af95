package main

import "github.com/spf13/cobra"

// workerCmd is a placeholder until its issue lands.
func (a *app) workerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "not implemented yet",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return badInputf("longhaul worker is not implemented yet")
		},
	}
}
