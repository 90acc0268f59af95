// Package devservertest starts the embedded Temporal server for a test, with
// a client of it: the first lines of every test that runs workflows against
// a real server.
package devservertest

import (
	"context"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/devserver"
)

// Start starts the embedded server with opts and dials a client of it with
// copts (its HostPort and Namespace set to the server's). Both end when t
// does; any failure fails t.
func Start(ctx context.Context, t testing.TB, opts devserver.Options, copts client.Options) (*devserver.Server, client.Client) {
	t.Helper()
	srv, err := devserver.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	copts.HostPort, copts.Namespace = srv.Address(), srv.Namespace()
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return srv, c
}
