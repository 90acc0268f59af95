package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// CheckHealth is nil when the Temporal frontend at hostPort (this package's
// server or any other) answers its health check before ctx ends: the
// container health check of `longhaul healthcheck`, for images with no
// shell and no curl.
func CheckHealth(ctx context.Context, hostPort string) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return fmt.Errorf("temporal at %s: %v", hostPort, err)
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal at %s: %v", hostPort, err)
	}
	return nil
}
