package devserver_test

import (
	"context"
	"fmt"
	"log"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/devserver"
)

// Start a file-backed server, talk to it with the SDK, stop it. A second
// Start on the same directory continues the workflows in flight.
func ExampleStart() {
	ctx := context.Background()
	s, err := devserver.Start(ctx, devserver.Options{DataDir: "/tmp/longhaul-example"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Stop()

	c, err := client.Dial(client.Options{HostPort: s.Address(), Namespace: s.Namespace()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("temporal at", s.Address())
}
