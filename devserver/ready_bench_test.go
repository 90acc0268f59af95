package devserver

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// ready starts a server on dir, a client and a worker, and returns how long
// it took until the server lists the worker as a poller of its queue: the
// moment a soak submitted now would start. stop tears it all down.
func ready(b *testing.B, dir string) (time.Duration, func()) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	s, err := Start(ctx, Options{DataDir: dir, Port: benchPort(b), Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: s.Address(), Namespace: s.Namespace(), Logger: sdklog.NewStructuredLogger(quietLogger())})
	if err != nil {
		b.Fatal(err)
	}
	w := worker.New(c, "bench", worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	for {
		d, err := c.DescribeTaskQueue(ctx, "bench", enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil && len(d.GetPollers()) > 0 {
			break
		}
		if ctx.Err() != nil {
			b.Fatalf("no poller on the task queue: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(t0)
	return took, func() { w.Stop(); c.Close(); s.Stop() }
}

func benchPort(b *testing.B) int {
	p, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkReady measures start-up to "frontend accepting and worker
// polling" on a new database file and on an existing one (a restart).
// Run it with bench/devserver/run.sh; the requirement is < 5 s.
func BenchmarkReady(b *testing.B) {
	b.Run("new-file", func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			took, stop := ready(b, b.TempDir())
			total += took
			b.StopTimer()
			stop()
			b.StartTimer()
		}
		b.ReportMetric(total.Seconds()/float64(b.N), "s/ready")
	})
	b.Run("existing-file", func(b *testing.B) {
		dir := b.TempDir()
		_, stop := ready(b, dir)
		stop()
		var total time.Duration
		for i := 0; i < b.N; i++ {
			took, stop := ready(b, dir)
			total += took
			b.StopTimer()
			stop()
			b.StartTimer()
		}
		b.ReportMetric(total.Seconds()/float64(b.N), "s/ready")
	})
}
