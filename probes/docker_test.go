package probes

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// burnImage builds testdata/burn into a FROM scratch image and returns its
// tag; it skips the test when no docker engine answers. The image is
// removed when the test ends.
func burnImage(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker CLI not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("no docker engine answers: %v: %s", err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "burn"), "./testdata/burn")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build burn: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY burn /burn\nENTRYPOINT [\"/burn\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tag := "longhaul-probes-burn:test"
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	return tag
}

// burner is a running container of burnImage's image: each burn makes it
// spend 0.5 s of CPU and touch 32 MiB.
type burner struct {
	id     string
	stdin  io.Writer
	stdout *bufio.Reader
}

// startBurner runs burnImage's image with the extra docker run flags and
// returns once the engine has named its container; the container is
// removed when the test ends.
func startBurner(t *testing.T, dockerRunFlags ...string) burner {
	t.Helper()
	tag := burnImage(t)
	cidFile := filepath.Join(t.TempDir(), "cid")
	args := append([]string{"run", "-i", "--rm"}, dockerRunFlags...)
	args = append(args, "--cidfile", cidFile, "--label", "dev.longhaul.test=probes", tag)
	run := exec.Command("docker", args...)
	stdin, _ := run.StdinPipe()
	stdout, _ := run.StdoutPipe()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	t.Cleanup(func() {
		if id != "" {
			exec.Command("docker", "rm", "-f", id).Run()
		}
		run.Process.Kill()
		run.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); id == ""; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(cidFile); err == nil && len(b) == 64 {
			id = string(b)
		} else if time.Now().After(deadline) {
			t.Fatal("container did not start within 30s")
		}
	}
	return burner{id: id, stdin: stdin, stdout: bufio.NewReader(stdout)}
}

// burn has the container burn once and returns when it says it is done.
func (b burner) burn(t *testing.T) {
	t.Helper()
	b.stdin.Write([]byte("go\n"))
	if line, _ := b.stdout.ReadString('\n'); !strings.HasPrefix(line, "done") {
		t.Fatalf("container said %q, want done", line)
	}
}

func TestContainerStats(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image and runs a container")
	}
	burn := startBurner(t)
	cs, err := NewContainerStats(burn.id)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	var before ProcessReading
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if before, err = cs.Read(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Read before: %v", err)
		}
	}
	burn.burn(t)
	doneAt := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	after, err := cs.ReadNewerThan(rctx, doneAt)
	cancel()
	if err != nil {
		t.Fatalf("Read after: %v", err)
	}
	got := after.CPUSeconds - before.CPUSeconds
	// 0.5 s burned, plus touching 32 MiB and the Go runtime's own work.
	if got < 0.49 || got > 0.8 {
		t.Errorf("container CPU delta = %.3f s, want 0.5 s (-0.01/+0.3)", got)
	}
	if after.RSSBytes < 32<<20 {
		t.Errorf("container RSS = %d bytes, want at least 32 MiB", after.RSSBytes)
	}
	t.Logf("container: %.3f s CPU, RSS %d KiB", got, after.RSSBytes>>10)

	// Why ContainerStats streams: a one-shot call waits for the engine's
	// next one-second stats tick.
	var calls []time.Duration
	for range 3 {
		start := time.Now()
		res, err := cs.cli.ContainerStats(ctx, burn.id, client.ContainerStatsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		calls = append(calls, time.Since(start))
	}
	start := time.Now()
	if _, err := cs.Read(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("one-shot stats calls took %v; a Read from the stream %v", calls, time.Since(start))

	// Through a Sampler.
	s, err := New(Config{ContainerID: burn.id, Window: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Start(ctx)
	w := win(0, 100)
	s.Sample(ctx, w)
	if w.Probes.RSSBytes == nil || w.Probes.CPUSeconds == nil || w.Probes.CPUMicrosPerRequest == nil {
		t.Errorf("Sample of a container: %+v; problems %v", w.Probes, s.Problems())
	}

	exec.Command("docker", "rm", "-f", burn.id).Run()
	if _, err := cs.Read(ctx); err == nil {
		t.Error("Read of a removed container succeeded")
	} else if !strings.Contains(err.Error(), burn.id[:12]) && !errors.Is(err, ErrContainerNotRunning) {
		t.Errorf("Read of a removed container: %v, want it to name the container", err)
	}
}
