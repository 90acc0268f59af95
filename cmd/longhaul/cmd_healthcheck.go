package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
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
			c, err := client.DialContext(ctx, client.Options{HostPort: args[0], Logger: sdklog.NewStructuredLogger(discard)})
			if err != nil {
				return fmt.Errorf("temporal at %s: %v", args[0], err)
			}
			defer c.Close()
			if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
				return fmt.Errorf("temporal at %s: %v", args[0], err)
			}
			return nil
		},
	}
}
