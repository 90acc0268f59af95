package provision

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// dockerForTest returns a docker provider, or skips when no engine answers.
func dockerForTest(t *testing.T) *Docker {
	t.Helper()
	d, err := NewDocker(context.Background(), Options{
		DataDir: t.TempDir(), StopGrace: time.Second, Logger: testLogger(t), PullTimeout: 20 * time.Second,
	})
	if errors.Is(err, ErrNoEngine) {
		t.Skipf("docker tests need an engine: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const targetDockerfile = "FROM scratch\nCOPY target /target\nENTRYPOINT [\"/target\"]\n"

// buildTestImage builds a FROM scratch image of the test target, tagged tag,
// removed when the test ends.
func buildTestImage(t *testing.T, d *Docker, tag string) {
	t.Helper()
	bin, err := os.ReadFile(targetBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range map[string][]byte{"Dockerfile": []byte(targetDockerfile), "target": bin} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content))})
		tw.Write(content)
	}
	tw.Close()
	ctx := testContext(t, 2*time.Minute)
	resp, err := d.cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tail := &tailBuffer{n: 20}
	if err := readBuildStream(resp.Body, tail); err != nil {
		t.Fatalf("build %s: %v\n%s", tag, err, tail)
	}
	t.Cleanup(func() { removeImage(d, tag) })
}

func removeImage(d *Docker, tag string) {
	d.cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
}

// labelled counts the containers, networks and volumes carrying label=value.
func labelled(t *testing.T, d *Docker, label, value string) (containers, networks, volumes int) {
	t.Helper()
	ctx := context.Background()
	f := client.Filters{}.Add("label", label+"="+value)
	cs, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := d.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Items), len(ns.Items), len(vs.Items)
}

func assertNoLabelled(t *testing.T, d *Docker, label, value string) {
	t.Helper()
	if c, n, v := labelled(t, d, label, value); c+n+v > 0 {
		t.Errorf("left behind with %s=%s: %d containers, %d networks, %d volumes", label, value, c, n, v)
	}
}

// tearDownUnlabelled tears env down and asserts that nothing labelled with it
// is left and that Check then reports it gone.
func tearDownUnlabelled(t *testing.T, ctx context.Context, d *Docker, env Environment) {
	t.Helper()
	if err := d.Teardown(ctx, env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	assertNoLabelled(t, d, LabelEnv, env.ID)
	if err := d.Check(ctx, env); !errors.Is(err, ErrGone) {
		t.Errorf("Check after teardown = %v, want ErrGone", err)
	}
}

// targetBesideDatabase skips t unless the database image def or its offline
// stand-in is present (builder names what makes them), then builds the test
// target's image and returns its tag.
func targetBesideDatabase(ctx context.Context, t *testing.T, d *Docker, def, offline, builder string) string {
	t.Helper()
	if !d.imagePresent(ctx, def) && !d.imagePresent(ctx, offline) {
		t.Skipf("neither %s nor %s is present and no registry answers here: run %s", def, offline, builder)
	}
	img := testTag("target")
	buildTestImage(t, d, img)
	return img
}

func testTag(name string) string { return fmt.Sprintf("longhaul-test/%s:%d", name, os.Getpid()) }

func TestDockerTargetWithPostgres(t *testing.T) {
	d := dockerForTest(t)
	ctx := testContext(t, 4*time.Minute)
	img := targetBesideDatabase(ctx, t, d, DefaultPostgresImage, OfflinePostgresImage, "scripts/offline-images.sh")
	spec := scenarios.Environment{
		Provider: "docker",
		Target: scenarios.Target{
			Image:         img,
			Env:           map[string]string{"DATABASE_URL": "{{.Database.URL}}", "DATA_FILE": "{{.EnvDir}}/data.db"},
			Health:        "/health",
			HealthTimeout: scenarios.Duration(30 * time.Second),
			Resources:     scenarios.Resources{Memory: "256m", CPUs: 0.5, PIDs: 100},
		},
		Database: scenarios.Database{Kind: "postgres", Name: "shop", User: "app", Password: "secret"},
	}
	env, err := d.Provision(ctx, Request{RunID: "docker-pg", Incarnation: 1, Spec: spec})
	t.Cleanup(func() { d.Teardown(context.Background(), env) })
	if err != nil {
		t.Fatal(err)
	}

	if !strings.HasPrefix(env.TargetURL, "http://127.0.0.1:") || env.Target.ContainerID == "" || env.Provider != "docker" {
		t.Fatalf("env = %+v, want a docker target on 127.0.0.1", env)
	}
	if got := get(t, env.TargetURL+"/health"); got != "ok\n" {
		t.Errorf("health = %q", got)
	}
	db := env.Database
	if db == nil || db.Process.ContainerID == "" || !strings.Contains(db.TargetURL, "@db:5432/shop") || !strings.Contains(db.URL, "@127.0.0.1:") {
		t.Fatalf("env.Database = %+v, want a container reachable as db:5432 and on 127.0.0.1", db)
	}
	if got := get(t, env.TargetURL+"/env/DATABASE_URL"); got != db.TargetURL {
		t.Errorf("target DATABASE_URL = %q, want %q", got, db.TargetURL)
	}
	// {{.EnvDir}}: the environment volume, at /longhaul/env in the
	// container and at env.EnvDir on this host, writable for any user.
	if got := get(t, env.TargetURL+"/env/DATA_FILE"); got != ContainerEnvDir+"/data.db" {
		t.Errorf("target DATA_FILE = %q, want %s/data.db", got, ContainerEnvDir)
	}
	if st, err := os.Stat(env.EnvDir); err != nil || st.Mode()&os.ModePerm != 0o777 || st.Mode()&os.ModeSticky == 0 {
		t.Errorf("env.EnvDir %q: %v, %v; want a directory with mode 1777", env.EnvDir, st.Mode(), err)
	}
	if got := get(t, env.TargetURL+"/dial?addr=db:5432"); got != "ok\n" {
		t.Errorf("target cannot reach db:5432 on the run's network: %q", got)
	}
	// The driver's route: the container's own loopback, which still reaches
	// the database on the run's network.
	if env.Route != RouteNetNS || env.NetNS == nil {
		t.Fatalf("route %q, netns %+v, notes %q: want %s", env.Route, env.NetNS, env.Notes, RouteNetNS)
	}
	if got := getInNamespace(t, *env.NetNS, "/dial?addr=db:5432"); got != "ok\n" {
		t.Errorf("through the namespace: target cannot reach db:5432: %q", got)
	}
	if !d.imagePresent(ctx, DefaultPostgresImage) && (db.Image != OfflinePostgresImage || len(env.Notes) == 0) {
		t.Errorf("database image %q, notes %q: want the offline fallback noted", db.Image, env.Notes)
	}
	assertConnectsAsApp(t, ctx, db.URL, "connect from the host")

	// Limits, loopback-only ports and labels, as the engine reports them.
	for _, id := range []string{env.Target.ContainerID, db.Process.ContainerID} {
		r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := r.Container
		for port, bs := range c.HostConfig.PortBindings {
			for _, b := range bs {
				if b.HostIP.String() != "127.0.0.1" {
					t.Errorf("container %s port %s published on %q, want 127.0.0.1 only", shortID(id), port, b.HostIP)
				}
			}
		}
		for k, want := range map[string]string{LabelManaged: "1", LabelRun: "docker-pg", LabelIncarnation: "1", LabelEnv: env.ID} {
			if got := c.Config.Labels[k]; got != want {
				t.Errorf("container %s label %s = %q, want %q", shortID(id), k, got, want)
			}
		}
		if id != env.Target.ContainerID {
			continue
		}
		hc := c.HostConfig
		if hc.Memory != 256<<20 || hc.MemorySwap != 256<<20 || hc.NanoCPUs != 5e8 || hc.PidsLimit == nil || *hc.PidsLimit != 100 {
			t.Errorf("target limits: memory %d swap %d nanocpus %d pids %v; want 256 MiB, no swap, 0.5 CPU, 100 pids",
				hc.Memory, hc.MemorySwap, hc.NanoCPUs, hc.PidsLimit)
		}
	}
	if c, n, v := labelled(t, d, LabelEnv, env.ID); c != 2 || n != 1 || v != 2 {
		t.Errorf("labelled resources: %d containers, %d networks, %d volumes; want 2, 1, 2 (database, environment)", c, n, v)
	}
	if err := d.Check(ctx, env); err != nil {
		t.Errorf("Check: %v", err)
	}

	tearDownUnlabelled(t, ctx, d, env)
	if err := d.Teardown(ctx, env); err != nil {
		t.Errorf("second Teardown: %v, want nil (idempotent)", err)
	}
}

// fixtureRepo makes a git repository with a FROM scratch Dockerfile and the
// static test target committed, and returns its path.
func fixtureRepo(t *testing.T) string {
	repo := filepath.Join(t.TempDir(), "Soak-Fixture")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(targetBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repo, "target"), bin, 0o755)
	os.WriteFile(filepath.Join(repo, "Dockerfile"), []byte(targetDockerfile), 0o644)
	gitT(t, repo, "init", "-q")
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-q", "-m", "first")
	return repo
}

func TestDockerBuildsOncePerCommit(t *testing.T) {
	d := dockerForTest(t)
	ctx := testContext(t, 4*time.Minute)
	repo := fixtureRepo(t)
	spec := scenarios.Environment{Target: scenarios.Target{
		Build:  &scenarios.Build{Repo: repo, Ref: "HEAD"},
		Health: "/health",
	}}
	provision := func(run string) Environment {
		t.Helper()
		// The image this commit will get: none may exist before, and it is
		// removed after, whatever happens.
		tag := "longhaul-target/soak-fixture:" + gitT(t, repo, "rev-parse", "HEAD")
		if run == "build-1" || run == "build-3" {
			removeImage(d, tag)
		}
		t.Cleanup(func() { removeImage(d, tag) })
		env, err := d.Provision(ctx, Request{RunID: run, Spec: spec})
		t.Cleanup(func() { d.Teardown(context.Background(), env) })
		if err != nil {
			t.Fatal(err)
		}
		get(t, env.TargetURL+"/health")
		if err := d.Teardown(ctx, env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	first := provision("build-1")
	c1 := gitT(t, repo, "rev-parse", "HEAD")
	if want := "longhaul-target/soak-fixture:" + c1; first.Image != want || first.Commit != c1 {
		t.Errorf("image %q commit %q, want %q at %s", first.Image, first.Commit, want, c1)
	}
	second := provision("build-2")
	if second.Image != first.Image || d.builds.Load() != 1 {
		t.Errorf("second run of the same commit: image %q, %d builds; want %q reused, 1 build", second.Image, d.builds.Load(), first.Image)
	}

	os.WriteFile(filepath.Join(repo, "CHANGELOG"), []byte("two\n"), 0o644)
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-q", "-m", "second")
	c2 := gitT(t, repo, "rev-parse", "HEAD")
	third := provision("build-3")
	if want := "longhaul-target/soak-fixture:" + c2; third.Image != want || d.builds.Load() != 2 {
		t.Errorf("new commit: image %q, %d builds; want %q, 2 builds", third.Image, d.builds.Load(), want)
	}
	if !d.imagePresent(ctx, first.Image) || !d.imagePresent(ctx, third.Image) {
		t.Errorf("both commits' images should exist: %s, %s", first.Image, third.Image)
	}
}

func TestDockerFailuresLeaveNothing(t *testing.T) {
	d := dockerForTest(t)
	img := testTag("target")
	buildTestImage(t, d, img)
	brokenRepo := func(t *testing.T) string {
		repo := filepath.Join(t.TempDir(), "broken")
		os.MkdirAll(repo, 0o755)
		os.WriteFile(filepath.Join(repo, "Dockerfile"), []byte("FROM scratch\nCOPY missing-binary /target\n"), 0o644)
		gitT(t, repo, "init", "-q")
		gitT(t, repo, "add", ".")
		gitT(t, repo, "commit", "-q", "-m", "broken")
		return repo
	}
	tests := []struct {
		name    string
		target  func(t *testing.T) scenarios.Target
		wantErr error
		wantMsg []string
	}{
		{
			name:    "missing image",
			target:  func(*testing.T) scenarios.Target { return scenarios.Target{Image: "longhaul-test/no-such-image:1"} },
			wantErr: ErrImageMissing,
			wantMsg: []string{"longhaul-test/no-such-image:1", "scripts/offline-images.sh"},
		},
		{
			name: "failing build",
			target: func(t *testing.T) scenarios.Target {
				return scenarios.Target{Build: &scenarios.Build{Repo: brokenRepo(t)}}
			},
			wantErr: ErrBuild,
			wantMsg: []string{"last lines of the build log", "COPY missing-binary /target", "missing-binary"},
		},
		{
			name: "failing wait",
			target: func(*testing.T) scenarios.Target {
				return scenarios.Target{Image: img, Env: map[string]string{"FAIL_HEALTH": "1"}, Health: "/health",
					HealthTimeout: scenarios.Duration(2 * time.Second)}
			},
			wantErr: ErrNotReady,
			wantMsg: []string{"last lines of the container's log", "target: listening on :8080"},
		},
		{
			name: "bad resources",
			target: func(*testing.T) scenarios.Target {
				return scenarios.Target{Image: img, Resources: scenarios.Resources{Memory: "lots"}}
			},
			wantErr: ErrInvalidSpec,
			wantMsg: []string{`memory "lots"`},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t, 2*time.Minute)
			run := fmt.Sprintf("fail-%d", i)
			env, err := d.Provision(ctx, Request{RunID: run, Spec: scenarios.Environment{Target: tt.target(t)}})
			t.Cleanup(func() { d.Teardown(context.Background(), env) })
			assertProvisionError(t, err, tt.wantErr, tt.wantMsg)
			assertNoLabelled(t, d, LabelRun, run)
		})
	}
}

func TestDockerSweep(t *testing.T) {
	d := dockerForTest(t)
	ctx := testContext(t, 2*time.Minute)
	img := testTag("target")
	buildTestImage(t, d, img)
	spec := scenarios.Environment{Target: scenarios.Target{Image: img, Health: "/health"}}
	var envs []Environment
	for _, run := range []string{"sweep-running", "sweep-over"} {
		env, err := d.Provision(ctx, Request{RunID: run, Spec: spec})
		t.Cleanup(func() { d.Teardown(context.Background(), env) })
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	// Default limits apply when the spec gives none.
	r, err := d.cli.ContainerInspect(ctx, envs[0].Target.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hc := r.Container.HostConfig; hc.Memory != DefaultMemoryBytes || hc.NanoCPUs != 1e9 || *hc.PidsLimit != DefaultPIDs {
		t.Errorf("default limits: memory %d nanocpus %d pids %d", hc.Memory, hc.NanoCPUs, *hc.PidsLimit)
	}

	// Another provider value, as after a worker restart.
	other := dockerForTest(t)
	removed, err := other.Sweep(ctx, func(run string) bool { return run != "sweep-over" })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 3 || !strings.HasPrefix(removed[0], "container ") || !strings.HasPrefix(removed[1], "network ") || !strings.HasPrefix(removed[2], "volume ") {
		t.Errorf("removed %q, want the over run's container, network and environment volume", removed)
	}
	assertNoLabelled(t, d, LabelRun, "sweep-over")
	if err := other.Check(ctx, envs[0]); err != nil {
		t.Errorf("the running run's environment after sweep: %v", err)
	}
	if err := other.Check(ctx, envs[1]); !errors.Is(err, ErrGone) {
		t.Errorf("Check of the swept environment = %v, want ErrGone", err)
	}
	if err := other.Teardown(ctx, envs[0]); err != nil {
		t.Fatal(err)
	}
	assertNoLabelled(t, d, LabelRun, "sweep-running")
}

func TestAutoFallsBackToLocal(t *testing.T) {
	d := dockerForTest(t) // auto only falls back for a reason when an engine answers
	_ = d
	p, err := New("auto", Options{DataDir: t.TempDir(), StopGrace: time.Second, Logger: testLogger(t), PullTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, time.Minute)
	spec := localSpec(t, nil)
	spec.Provider = ""
	spec.Target.Image = "longhaul-test/no-such-image:1"
	env, err := p.Provision(ctx, Request{RunID: "auto", Spec: spec})
	t.Cleanup(func() { p.Teardown(context.Background(), env) })
	if err != nil {
		t.Fatal(err)
	}
	if env.Provider != "local" || len(env.Notes) == 0 || !strings.Contains(env.Notes[0], "provider auto chose local") ||
		!strings.Contains(env.Notes[0], "no-such-image") {
		t.Errorf("provider %q notes %q, want local with the reason", env.Provider, env.Notes)
	}
	if err := p.Check(ctx, env); err != nil {
		t.Error(err)
	}
	tearDownGone(t, ctx, p, env)
}

func TestNoEngineSaysUseLocal(t *testing.T) {
	// testcontainers falls back to the default socket whatever DOCKER_HOST
	// says, so the message is tested on the error it wraps.
	err := noEngine(errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock.\nIs the docker daemon running?"))
	got := err.Error()
	if !errors.Is(err, ErrNoEngine) || !strings.HasPrefix(got, "no Docker engine answers") ||
		!strings.Contains(got, "provider: local") || strings.Contains(got, "\n") {
		t.Errorf("no-engine error = %q, want one line starting 'no Docker engine answers' and naming provider: local", got)
	}
}

// TestDockerSurvivesOwnerDeath: the Ryuk policy. The worker that provisioned
// the containers is killed; they keep running (no reaper is watching them),
// and another provider value checks and removes them by the Environment.
func TestDockerSurvivesOwnerDeath(t *testing.T) {
	d := dockerForTest(t)
	img := testTag("target")
	buildTestImage(t, d, img)
	env := provisionInHelper(t, "docker", t.TempDir(), Request{RunID: "docker-orphan",
		Spec: scenarios.Environment{Target: scenarios.Target{Image: img, Health: "/health"}}})
	t.Cleanup(func() { d.Teardown(context.Background(), env) })
	ctx := testContext(t, time.Minute)
	if err := d.Check(ctx, env); err != nil {
		t.Fatalf("Check after the owner died: %v", err)
	}
	r, err := d.cli.ContainerInspect(ctx, env.Target.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Container.Config.Labels["org.testcontainers.reap"]; ok {
		t.Errorf("container is marked for the reaper (org.testcontainers.reap=%s): Ryuk would remove it when a worker dies", v)
	}
	get(t, env.TargetURL+"/health")
	if err := d.Teardown(ctx, env); err != nil {
		t.Fatal(err)
	}
	assertNoLabelled(t, d, LabelEnv, env.ID)
}
