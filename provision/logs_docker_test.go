package provision

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// A container's output is cut by window with the engine's timestamp of
// each line, and following a restarted target shows its new incarnation's
// lines only. One real container: provisioned (window 0), restarted by
// hand (window 1: the old process's "stopping" and the new one's start),
// then quiet (window 2); then killed and restarted as incarnation 2.
func TestDockerOutputByWindowAndFollowAfterRestart(t *testing.T) {
	d := dockerForTest(t)
	img := testTag("logs-by-window")
	buildTestImage(t, d, img)
	ctx := testContext(t, 2*time.Minute)
	req := Request{RunID: "docker-logs", Incarnation: 1,
		Spec: scenarios.Environment{Target: scenarios.Target{Image: img, Health: "/health", Port: 8080}}}
	t0 := time.Now()
	env, err := d.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Teardown(context.Background(), env) })
	t1 := time.Now()
	grace := 1
	if _, err := d.cli.ContainerRestart(ctx, env.Target.ContainerID, client.ContainerRestartOptions{Timeout: &grace}); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		outs, err := d.Logs(ctx, env, 1<<20)
		if err == nil && len(outs) == 1 && strings.Count(string(outs[0].Text), "target: listening") == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t2 := time.Now()
	time.Sleep(100 * time.Millisecond)
	t3 := time.Now()

	outs, err := d.ReadOutput(ctx, env, LogRequest{MaxBytes: 1 << 20, Windows: []WindowTime{{0, t0, t1}, {1, t1, t2}, {2, t2, t3}}})
	if err != nil || len(outs) != 1 {
		t.Fatalf("ReadOutput = %+v, %v", outs, err)
	}
	o := outs[0]
	if !strings.HasPrefix(string(o.Text), "target: listening") {
		t.Errorf("kept text = %.60q…, want the target's lines without the engine's timestamps", o.Text)
	}
	byIndex := map[int]string{}
	for _, w := range o.Windows {
		byIndex[w.Index] = string(o.Text[w.From:w.To])
	}
	if w0 := byIndex[0]; strings.Count(w0, "target: listening") != 1 || strings.Contains(w0, "stopping") {
		t.Errorf("window 0 = %q, want the first start only", w0)
	}
	if w1 := byIndex[1]; !strings.HasPrefix(w1, "target: stopping\n") || strings.Count(w1, "target: listening") != 1 {
		t.Errorf("window 1 = %q, want the stop and the second start", w1)
	}
	if w2, ok := byIndex[2]; !ok || w2 != "" {
		t.Errorf("window 2 = %q (%v), want known and empty", w2, ok)
	}

	// Killed and restarted as incarnation 2: following it shows its own
	// start, none of the two starts before.
	killTargetContainer(ctx, t, d, env)
	req.Incarnation = 2
	env2, err := d.RestartTarget(ctx, req, env)
	if err != nil {
		t.Fatal(err)
	}
	env = env2
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var out lockedbuf.Buffer
	if err := d.FollowLogs(fctx, env2, LogTarget, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Count(got, "target: listening") != 1 || strings.Contains(got, "stopping") {
		t.Errorf("following incarnation 2 = %q, want its own start only", got)
	}
}

// killTargetContainer kills env's target container with SIGKILL and
// returns how Check says it stopped, once it does (nil if ctx ends first).
func killTargetContainer(ctx context.Context, t *testing.T, d *Docker, env Environment) *ExitError {
	t.Helper()
	if _, err := d.cli.ContainerKill(ctx, env.Target.ContainerID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	var exit *ExitError
	for ctx.Err() == nil {
		if err := d.Check(ctx, env); errors.As(err, &exit) {
			return exit
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
