package activities

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestServerProbesThreads: for a target longhaul runs (here this test's own
// process) every window gets the thread probe's readings; with the process
// probe turned off, none.
func TestServerProbesThreads(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	off := false
	for _, tt := range []struct {
		name string
		spec scenarios.Probes
		want bool
	}{{"process probe on", scenarios.Probes{}, true}, {"process probe off", scenarios.Probes{Process: &off}, false}} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ServerProbes(logger)(ctx, Environment{PID: os.Getpid(), TargetURL: "http://127.0.0.1:1"}, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			time.Sleep(50 * time.Millisecond)
			w := window.Window{Index: 0, End: time.Now(), Requests: 10}
			p.Sample(ctx, &w)
			got := w.Probes.HottestThreadCores != nil && w.Probes.HottestThread != "" && w.Probes.DriverCores != nil && w.Probes.CoresAllowed != nil
			if got != tt.want {
				t.Errorf("thread readings %v, want %v: %+v (failures %v)", got, tt.want, w.Probes, w.ProbeFailures)
			}
		})
	}
}
