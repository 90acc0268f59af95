package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/longhaul-dev/longhaul/devserver"
)

// healthcheckCmd is for container health checks, where the image has no
// shell and no curl: it asks a Temporal frontend whether it serves.
func (a *app) healthcheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "healthcheck HOST:PORT",
		Short:  "Exit 0 when the Temporal frontend at HOST:PORT serves (for container health checks)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			return devserver.CheckHealth(ctx, args[0])
		},
	}
}
