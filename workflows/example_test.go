package workflows_test

import (
	"context"
	"log"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/workflows"
)

// Submit a soak of a run whose record (with its scenario) is in the store,
// and wait for it. Workers (workflows.NewWorker) run it.
func Example() {
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	in := workflows.SoakInput{RunID: "0199-example", Name: "hello", Duration: time.Hour, Window: 30 * time.Second}
	run, err := c.ExecuteWorkflow(context.Background(),
		client.StartWorkflowOptions{ID: "longhaul-soak-" + in.RunID, TaskQueue: activities.GeneralQueue},
		workflows.WorkflowName, in)
	if err != nil {
		log.Fatal(err)
	}
	var res workflows.SoakResult
	if err := run.Get(context.Background(), &res); err != nil {
		log.Fatal(err) // failed or cancelled: the store has the reason
	}
	log.Printf("run %s %s: %d windows, %d gaps", res.RunID, res.Status, res.Windows, res.Gaps)
}
