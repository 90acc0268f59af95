package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
)

// offlineImages are the images the offline stack and the demo soak need;
// scripts/offline-images.sh builds them all.
var offlineImages = []string{
	"longhaul/longhaul:latest", "longhaul/postgres:15-offline",
	"longhaul/victoria-metrics:offline", "longhaul/demo-target:latest",
}

// composeStack is one docker-compose project of the repository's stack.
type composeStack struct {
	t       *testing.T
	dir     string // the repository root
	project string
	env     []string
	files   []string
}

func (c *composeStack) cmd(ctx context.Context, args ...string) *exec.Cmd {
	argv := []string{"-p", c.project}
	for _, f := range c.files {
		argv = append(argv, "-f", f)
	}
	cmd := exec.CommandContext(ctx, "docker-compose", append(argv, args...)...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), c.env...)
	return cmd
}

func (c *composeStack) run(timeout time.Duration, args ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if out, err := c.cmd(ctx, args...).CombinedOutput(); err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// leftovers lists the containers, networks and volumes of the project and
// of runs (provision's labels) that still exist.
func leftovers(t *testing.T, project string, runIDs ...string) []string {
	t.Helper()
	var left []string
	filters := []string{"label=com.docker.compose.project=" + project}
	for _, id := range runIDs {
		filters = append(filters, "label="+provision.LabelRun+"="+id)
	}
	for _, f := range filters {
		for _, kind := range [][]string{{"ps", "-a"}, {"network", "ls"}, {"volume", "ls"}} {
			args := append(append([]string(nil), kind...), "-q", "--filter", f)
			out, err := exec.Command("docker", args...).CombinedOutput()
			if err != nil {
				t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			for _, id := range strings.Fields(string(out)) {
				left = append(left, kind[0]+" "+id+" ("+f+")")
			}
		}
	}
	return left
}

// TestComposeStack: both compose files are valid; the offline stack comes
// up, with a second worker service of another host id (compose-b beside the
// stack's worker, compose-a); two short demo soaks submitted at once with
// --detach through it complete, their windows in the PostgreSQL results
// database, never two driven at once on one host; `docker-compose down -v`
// leaves no container, network or volume of the stack or of the runs.
func TestComposeStack(t *testing.T) {
	if testing.Short() {
		t.Skip("docker-compose stack (~2 min)")
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose is not installed")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers: %v %s", err, out)
	}
	for _, img := range offlineImages {
		if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil {
			t.Fatalf("image %s is missing: run scripts/offline-images.sh", img)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/var/run/docker.sock", &st); err != nil {
		t.Skipf("no Docker socket at /var/run/docker.sock: %v", err)
	}
	pgPort, temporalPort := freeport.ForTest(t), freeport.ForTest(t)
	fleet := filepath.Join(t.TempDir(), "worker-b.yml")
	if err := os.WriteFile(fleet, []byte(secondWorker), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &composeStack{
		t: t, dir: root, project: fmt.Sprintf("lhtest%d", os.Getpid()),
		files: []string{"docker-compose.yml", "docker-compose.offline.yml", fleet},
		env: []string{
			"LONGHAUL_HOST_ID=compose-a",
			"DOCKER_GID=" + strconv.Itoa(int(st.Gid)),
			"LONGHAUL_PG_PORT=" + strconv.Itoa(pgPort),
			"LONGHAUL_TEMPORAL_PORT=" + strconv.Itoa(temporalPort),
			"LONGHAUL_UI_PORT=" + strconv.Itoa(freeport.ForTest(t)),
			"LONGHAUL_VM_PORT=" + strconv.Itoa(freeport.ForTest(t)),
		},
	}
	for _, files := range [][]string{{"docker-compose.yml"}, {"docker-compose.yml", "docker-compose.offline.yml"}, c.files} {
		cc := *c
		cc.files = files
		cc.run(time.Minute, "config", "-q")
	}

	var runIDs []string
	downed := false
	t.Cleanup(func() {
		if !downed {
			if t.Failed() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				out, _ := c.cmd(ctx, "logs", "--no-color", "--tail", "60").CombinedOutput()
				cancel()
				t.Logf("stack logs:\n%s", out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			_ = c.cmd(ctx, "down", "-v", "--remove-orphans", "-t", "5").Run()
			cancel()
		}
	})
	t0 := time.Now()
	c.run(3*time.Minute, "up", "-d", "--no-build")
	t.Logf("%5.1fs stack up (temporal healthy)", time.Since(t0).Seconds())

	addr := "127.0.0.1:" + strconv.Itoa(temporalPort)
	results := fmt.Sprintf("postgres://longhaul:longhaul@127.0.0.1:%d/longhaul?sslmode=disable", pgPort)
	waitTemporal(t, addr, time.Minute)

	scenario := shortDemoScenario(t, root)
	for range 2 {
		r := startSoakRun(t, scenario, "--temporal", addr, "--store", results, "--detach", "--provider", "docker")
		if code := r.wait(t); code != exitOK {
			t.Fatalf("longhaul run --detach exit %d; stderr:\n%s", code, r.stderr.String())
		}
	}
	rs := openStore(t, results)
	var runs []store.Run
	deadline := time.Now().Add(3 * time.Minute)
	for {
		runs, err = rs.ListRuns(context.Background(), store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done := len(runs) == 2
		for _, r := range runs {
			done = done && r.Status.Done()
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	byHost := map[string][]store.Run{}
	for _, run := range runs {
		runIDs = append(runIDs, run.ID)
		t.Logf("%5.1fs run %s %s on %s", time.Since(t0).Seconds(), run.ID, run.Status, runHost(t, run))
		if run.Status != store.Completed {
			t.Fatalf("run status %s (%s), want completed", run.Status, run.Reason)
		}
		ws := runWindows(t, rs, run.ID)
		requests := int64(0)
		for _, w := range ws {
			requests += w.Requests
		}
		if len(ws) < 3 || requests == 0 {
			t.Errorf("run %s: %d windows with %d requests in the results database, want ≥ 3 windows with requests", run.ID, len(ws), requests)
		}
		h := runHost(t, run)
		if h != "compose-a" && h != "compose-b" {
			t.Errorf("run %s on host %q, want compose-a or compose-b", run.ID, h)
		}
		byHost[h] = append(byHost[h], run)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs in the results database, want 2", len(runs))
	}
	for h, rs := range byHost {
		if len(rs) == 2 && rs[0].StartedAt.Before(rs[1].EndedAt) && rs[1].StartedAt.Before(rs[0].EndedAt) {
			t.Errorf("host %s drove runs %s and %s at once", h, rs[0].ID, rs[1].ID)
		}
	}
	rs.Close()

	c.run(2*time.Minute, "down", "-v", "--remove-orphans", "-t", "5")
	downed = true
	t.Logf("%5.1fs stack down", time.Since(t0).Seconds())
	if left := leftovers(t, c.project, runIDs...); len(left) > 0 {
		t.Errorf("left after docker-compose down -v:\n%s", strings.Join(left, "\n"))
	}
}

// secondWorker is a compose file with a second worker service, of host id
// compose-b, beside the stack's (the test gives that one compose-a).
const secondWorker = `version: "3.8"
services:
  worker-b:
    image: longhaul/longhaul:latest
    network_mode: host
    command:
      - worker
      - --temporal=127.0.0.1:${LONGHAUL_TEMPORAL_PORT}
      - --store=postgres://longhaul:longhaul@127.0.0.1:${LONGHAUL_PG_PORT}/longhaul?sslmode=disable
      - --host-id=compose-b
    volumes:
      - /var/run/docker.sock:/var/run/docker.sock
    group_add:
      - "${DOCKER_GID}"
    depends_on:
      temporal:
        condition: service_healthy
      postgresql:
        condition: service_healthy
`

// waitTemporal waits until the frontend at addr serves the default namespace.
func waitTemporal(t *testing.T, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := client.NewNamespaceClient(client.Options{HostPort: addr, Logger: sdklog.NewStructuredLogger(discard)})
		if err == nil {
			_, err = c.Describe(ctx, "default")
			c.Close()
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("temporal at %s not serving after %s: %v", addr, timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// shortDemoScenario is scenarios/demo.yaml with a few seconds of load in 1 s
// windows.
func shortDemoScenario(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "scenarios", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for old, repl := range map[string]string{
		"  vus: 16 ":                   "  vus: 2 ",
		"  duration: 5m\n":             "  duration: 5s\n",
		"  window: 10s\n":              "  window: 1s\n",
		"  warmup: 20s ":               "  warmup: 1s ",
		"dir: ../examples/demo-target": "dir: " + filepath.Join(root, "examples", "demo-target"),
	} {
		if !strings.Contains(s, old) {
			t.Fatalf("scenarios/demo.yaml has no %q any more: update this test", old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	return writeScenario(t, s)
}
