package workflows

import (
	"fmt"
	"sync"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/longhaul-dev/longhaul/activities"
)

// RegisterWorkflows registers SoakWorkflow under WorkflowName,
// CompareWorkflow under CompareWorkflowName and ScheduledSoakWorkflow under
// ScheduledWorkflowName on r.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(SoakWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterWorkflowWithOptions(CompareWorkflow, workflow.RegisterOptions{Name: CompareWorkflowName})
	r.RegisterWorkflowWithOptions(ScheduledSoakWorkflow, workflow.RegisterOptions{Name: ScheduledWorkflowName})
}

// Worker is a longhaul worker: one SDK worker on the general queue (the
// workflows and the store-bound activities) and one on this host's queue
// (the environment-bound activities). Stop is idempotent.
type Worker struct {
	general, host worker.Worker
	hostQueue     string
	stopOnce      sync.Once
}

// NewWorker returns a worker for c running a's activities. a.HostTaskQueue
// names the host queue (activities.DefaultHostQueue() when empty). opts
// apply to both SDK workers.
func NewWorker(c client.Client, a *activities.Activities, opts worker.Options) *Worker {
	if a.HostTaskQueue == "" {
		a.HostTaskQueue = activities.DefaultHostQueue()
	}
	w := &Worker{
		general:   worker.New(c, activities.GeneralQueue, opts),
		host:      worker.New(c, a.HostTaskQueue, opts),
		hostQueue: a.HostTaskQueue,
	}
	RegisterWorkflows(w.general)
	activities.Register(w.general, a)
	activities.Register(w.host, a)
	return w
}

// HostQueue is the host task queue this worker polls.
func (w *Worker) HostQueue() string { return w.hostQueue }

// Start starts polling both queues.
func (w *Worker) Start() error {
	if err := w.host.Start(); err != nil {
		return fmt.Errorf("start worker on %s: %w", w.hostQueue, err)
	}
	if err := w.general.Start(); err != nil {
		w.host.Stop()
		return fmt.Errorf("start worker on %s: %w", activities.GeneralQueue, err)
	}
	return nil
}

// Stop stops both workers, waiting for running activities up to the
// options' WorkerStopTimeout.
func (w *Worker) Stop() {
	w.stopOnce.Do(func() {
		w.general.Stop()
		w.host.Stop()
	})
}
