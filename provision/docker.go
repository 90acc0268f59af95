package provision

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// Docker runs the target and its database as containers through
// testcontainers-go. It is safe for concurrent use; Teardown, Check and Sweep
// need only the Environment and the labels, so another Docker value (a
// restarted worker) can manage what this one created.
type Docker struct {
	opts    Options
	cli     client.APIClient
	tcLog   tcLogger
	buildMu sync.Mutex   // one image build at a time: a second run of the same commit waits and reuses
	builds  atomic.Int64 // images built (not reused), for tests

	pullMu     sync.Mutex
	pullFailed map[string]time.Time // ref → when a pull of it last failed
}

// pullRetryAfter is how long a failed pull is not retried: where no
// registry answers, every provision would otherwise wait for it again.
const pullRetryAfter = 10 * time.Minute

var (
	_ Provisioner = (*Docker)(nil)
	_ Sweeper     = (*Docker)(nil)
)

// NewDocker connects to the Docker engine (DOCKER_HOST or the default
// socket) and checks that it answers. It disables Ryuk for the whole process
// first (see the package doc); it fails if testcontainers was already
// configured with Ryuk enabled. With no engine the error wraps ErrNoEngine
// and is one line naming the local provider.
func NewDocker(ctx context.Context, opts Options) (*Docker, error) {
	opts = opts.withDefaults()
	if err := checkRoute(opts.Route); err != nil {
		return nil, err
	}
	lg := tcLogger{opts.Logger}
	configureTestcontainers(lg)
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(lg))
	if err != nil {
		return nil, noEngine(err)
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Health(hctx); err != nil {
		return nil, noEngine(err)
	}
	if !p.Config().Config.RyukDisabled {
		return nil, errors.New("docker provider: testcontainers was configured with Ryuk enabled before longhaul started it; Ryuk would remove a soak's containers when a worker restarts: set TESTCONTAINERS_RYUK_DISABLED=true")
	}
	return &Docker{opts: opts, cli: p.Client(), tcLog: lg}, nil
}

func noEngine(err error) error {
	return fmt.Errorf("%w (%s): use `provider: local` in the scenario (or --provider local) to run the target as a local process", ErrNoEngine, oneLine(err))
}

var configureOnce sync.Once

// configureTestcontainers sets, once per process and before testcontainers
// reads its configuration (which it also does once per process):
//   - TESTCONTAINERS_RYUK_DISABLED=true (exactly "true": testcontainers
//     accepts no other spelling), the Ryuk policy of the package doc;
//   - TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 unless set: ports are published
//     on 127.0.0.1 only, and testcontainers would otherwise probe them on the
//     bridge gateway when /.dockerenv exists (a worker in a container that
//     shares the host's network and engine);
//   - its default logger to lg, so its banner does not land on stderr.
func configureTestcontainers(lg tcLogger) {
	configureOnce.Do(func() {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		if _, ok := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !ok {
			_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
		}
		tclog.SetDefault(lg)
	})
}

// tcLogger sends testcontainers' log lines to slog at debug level.
type tcLogger struct{ l *slog.Logger }

func (t tcLogger) Printf(format string, v ...any) {
	t.l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "testcontainers")
}

// labelsFor are the labels on everything of env.
func labelsFor(env Environment) map[string]string {
	return map[string]string{
		LabelManaged:     "1",
		LabelRun:         env.RunID,
		LabelIncarnation: strconv.Itoa(env.Incarnation),
		LabelEnv:         env.ID,
	}
}

// Available reports whether the images spec needs are present or can be
// pulled (a git-ref build is assumed buildable). Provider "auto" uses it.
func (d *Docker) Available(ctx context.Context, spec scenarios.Environment) error {
	if dbKind(spec.Database) != "" {
		if _, _, err := d.databaseImage(ctx, spec.Database); err != nil {
			return err
		}
	}
	t := spec.Target
	switch {
	case t.Image != "":
		return d.ensureImage(ctx, t.Image, "target.image")
	case t.Build != nil && t.Build.Repo != "":
		return nil
	}
	return fmt.Errorf("%w: the docker provider needs target.image or target.build.repo", ErrInvalidSpec)
}

// ensureImage makes sure ref is present locally, pulling it once if not.
func (d *Docker) ensureImage(ctx context.Context, ref, what string) error {
	if d.imagePresent(ctx, ref) {
		return nil
	}
	d.pullMu.Lock()
	failedAt, failed := d.pullFailed[ref]
	d.pullMu.Unlock()
	var err error
	if failed && time.Since(failedAt) < pullRetryAfter {
		err = fmt.Errorf("a pull failed %s ago", time.Since(failedAt).Round(time.Second))
	} else {
		pctx, cancel := context.WithTimeout(ctx, d.opts.PullTimeout)
		defer cancel()
		d.opts.Logger.Info("pulling image", "image", ref)
		err = d.pull(pctx, ref)
		if err == nil && d.imagePresent(ctx, ref) {
			return nil
		}
		if err == nil {
			err = errors.New("pull finished but the image is absent")
		}
		if ctx.Err() == nil { // the pull failed, not the caller's context
			d.pullMu.Lock()
			if d.pullFailed == nil {
				d.pullFailed = map[string]time.Time{}
			}
			d.pullFailed[ref] = time.Now()
			d.pullMu.Unlock()
		}
	}
	return fmt.Errorf("%w: %s %s is not present and cannot be pulled (%s): build it locally (scripts/offline-images.sh builds longhaul's offline images) or name a local image", ErrImageMissing, what, ref, oneLine(err))
}

func (d *Docker) imagePresent(ctx context.Context, ref string) bool {
	_, err := d.cli.ImageInspect(ctx, ref)
	return err == nil
}

// pull makes one attempt to pull ref; testcontainers' own pull retries with
// backoff for minutes, which is wrong where no registry exists.
func (d *Docker) pull(ctx context.Context, ref string) error {
	resp, err := d.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer resp.Close()
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return err
		}
		if msg.Error != nil {
			return msg.Error
		}
	}
	return nil
}

// databaseImages returns the image database.kind asks for (database.image,
// else the kind's default) and the kind's offline fallback.
func (d *Docker) databaseImages(db scenarios.Database) (want, offline string) {
	switch dbKind(db) {
	case "mysql":
		want, offline = DefaultMySQLImage, OfflineMySQLImage
	case "mariadb":
		want, offline = DefaultMariaDBImage, OfflineMySQLImage
	case "mongodb":
		want = DefaultMongoImage // no offline build: MongoDB has no Debian package
	default:
		want, offline = d.opts.PostgresImage, d.opts.OfflineImage
	}
	return firstNonEmpty(db.Image, want), offline
}

// databaseImage returns the database image to run and whether it is the
// offline fallback.
func (d *Docker) databaseImage(ctx context.Context, db scenarios.Database) (img string, offline bool, err error) {
	want, fallback := d.databaseImages(db)
	err = d.ensureImage(ctx, want, "database.image")
	if err == nil {
		return want, want == fallback, nil
	}
	if want != fallback && d.imagePresent(ctx, fallback) {
		return fallback, true, nil
	}
	if fallback == "" {
		return "", false, fmt.Errorf("%w: database image %s is not present and cannot be pulled, and longhaul builds no offline %s image: load one into this docker engine (docker load, or docker pull where a registry is reachable), or set database.image to a local %s image", ErrImageMissing, want, dbKind(db), dbKind(db))
	}
	return "", false, fmt.Errorf("%w: database image %s is not present and cannot be pulled, and the offline fallback %s is absent too: run scripts/offline-images.sh to build it, or set database.image to a local %s image", ErrImageMissing, want, fallback, dbKind(db))
}

// Provision brings up the run incarnation's network, PostgreSQL (when asked)
// and the target, in that order, after removing leftovers of an earlier
// attempt at the same incarnation. Images are resolved (and built) before
// anything is created. On error everything labelled with the environment is
// removed again and the partial Environment is returned with the error.
func (d *Docker) Provision(ctx context.Context, req Request) (env Environment, err error) {
	spec := req.Spec
	t := spec.Target
	kind := dbKind(spec.Database)
	if err := checkDatabaseKind(kind); err != nil {
		return Environment{}, err
	}
	limits, err := containerLimits(t.Resources)
	if err != nil {
		return Environment{}, err
	}
	env = Environment{
		ID:          EnvironmentID(req.RunID, req.Incarnation),
		RunID:       req.RunID,
		Incarnation: req.Incarnation,
		Provider:    "docker",
		Host:        d.opts.Hostname,
		CreatedAt:   time.Now().UTC(),
	}
	log := d.opts.Logger.With("env", env.ID)
	labels := labelsFor(env)

	// Resolve images first: a missing image or a failed build creates nothing.
	var dbImage string
	var offline bool
	if kind != "" {
		if dbImage, offline, err = d.databaseImage(ctx, spec.Database); err != nil {
			return env, err
		}
		want, _ := d.databaseImages(spec.Database)
		if dbImage != want {
			note := fmt.Sprintf("database image %s is absent and cannot be pulled; using the offline image %s", want, dbImage)
			log.Warn(note)
			env.Notes = append(env.Notes, note)
		}
	}
	switch {
	case t.Image != "":
		if err := d.ensureImage(ctx, t.Image, "target.image"); err != nil {
			return env, err
		}
		env.Image = t.Image
	case t.Build != nil && t.Build.Repo != "":
		if env.Image, env.Commit, err = d.buildFromGit(ctx, t.Build); err != nil {
			return env, err
		}
	default:
		return env, fmt.Errorf("%w: the docker provider needs target.image or target.build.repo (a Dockerfile at a git ref)", ErrInvalidSpec)
	}

	if n, err := d.removeLabelled(ctx, map[string]string{LabelRun: req.RunID, LabelIncarnation: strconv.Itoa(req.Incarnation)}); err != nil {
		return env, fmt.Errorf("remove leftovers of %s: %w", env.ID, err)
	} else if len(n) > 0 {
		log.Info("removed leftovers of an earlier attempt", "removed", len(n))
	}
	defer func() {
		if err != nil {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if terr := d.Teardown(tctx, env); terr != nil {
				log.Warn("cleanup after failed provision", "err", terr)
			}
		}
	}()

	netName := "longhaul-" + env.ID
	if _, err := d.cli.NetworkCreate(ctx, netName, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		return env, fmt.Errorf("create network %s: %w", netName, err)
	}
	env.Network = netName

	data := templateData{RunID: req.RunID, Incarnation: req.Incarnation, EnvDir: ContainerEnvDir}
	envVol, err := d.envVolume(ctx, &env, labels)
	if err != nil {
		return env, err
	}
	if kind != "" {
		start := d.startPostgres
		switch {
		case scenarios.IsMySQL(kind):
			start = d.startMySQL
		case scenarios.IsMongoDB(kind):
			start = d.startMongo
		}
		db, tdb, err := start(ctx, env, dbImage, offline, spec.Database, labels)
		if db != nil {
			env.Database = db
		}
		if err != nil {
			return env, err
		}
		data.Database = tdb
		// Its start, which each Check compares with: a later one is a
		// restart no check saw (RestartedError).
		if r, err := d.cli.ContainerInspect(ctx, db.Process.ContainerID, client.ContainerInspectOptions{}); err == nil && r.Container.State != nil {
			db.Process.StartedAt, _ = engineTime(r.Container.State.StartedAt)
		}
	}

	port := t.Port
	if port == 0 {
		port = DefaultContainerPort
	}
	data.Port = port
	scheme := "http"
	if spec.TLS != nil {
		if env.EnvDir == "" {
			return env, fmt.Errorf("%w: environment.tls: the environment volume has no mountpoint on this host to write the certificate to", ErrInvalidSpec)
		}
		if data.TLS, err = makeSelfSigned(env.EnvDir, ContainerEnvDir); err != nil {
			return env, err
		}
		scheme = "https"
	}
	vars, err := renderEnv(t.Env, req.ExtraEnv, port, data, req.LookupEnv)
	if err != nil {
		return env, err
	}
	envMap := make(map[string]string, len(vars))
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		envMap[k] = v
	}
	timeout := t.HealthTimeout.D()
	if timeout <= 0 {
		timeout = DefaultHealthTimeout
	}
	portSpec := strconv.Itoa(port) + "/tcp"
	exposed := []string{portSpec}
	bindings := loopbackBinding(portSpec)
	var extra []string
	for _, p := range req.Publish {
		if p < 1 || p > 65535 {
			return env, fmt.Errorf("%w: port %d to publish: want 1..65535", ErrInvalidSpec, p)
		}
		ps := strconv.Itoa(p) + "/tcp"
		if _, dup := bindings[network.MustParsePort(ps)]; dup {
			continue
		}
		maps.Copy(bindings, loopbackBinding(ps))
		exposed = append(exposed, ps)
		extra = append(extra, ps)
	}
	var ready wait.Strategy = wait.ForListeningPort(portSpec).SkipInternalCheck().WithStartupTimeout(timeout)
	if t.Health != "" {
		ready = wait.ForHTTP(t.Health).WithPort(portSpec).WithForcedIPv4LocalHost().
			WithTLS(scheme == "https", &tls.Config{InsecureSkipVerify: true}). // readiness only; the driver verifies
			WithStatusCodeMatcher(func(s int) bool { return s >= 200 && s <= 299 }).
			WithStartupTimeout(timeout).WithPollInterval(200 * time.Millisecond)
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(d.tcLog),
		testcontainers.WithEnv(envMap),
		testcontainers.WithLabels(labels),
		tcnetwork.WithNetworkName([]string{"target"}, netName),
		testcontainers.WithExposedPorts(exposed...),
		testcontainers.WithMounts(testcontainers.VolumeMount(envVol, ContainerEnvDir)),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = bindings
			hc.Resources = limits
		}),
		testcontainers.WithWaitStrategyAndDeadline(timeout+10*time.Second, ready),
	}
	if len(t.Command) > 0 {
		argv, err := renderArgs(t.Command, data, req.LookupEnv)
		if err != nil {
			return env, err
		}
		opts = append(opts, testcontainers.WithCmd(argv...))
	}
	log.Info("starting target", "image", env.Image)
	ctr, err := testcontainers.Run(ctx, env.Image, opts...)
	if ctr != nil {
		env.Target.ContainerID = ctr.GetContainerID()
	}
	if err != nil {
		waited := "port " + portSpec + " accepting connections"
		if t.Health != "" {
			waited = "GET " + t.Health + " answering 2xx"
		}
		return env, fmt.Errorf("start target %s (waited up to %s for %s): %w", env.Image, timeout, waited, startError(ctx, d.cli, ctr, err))
	}
	mapped, err := ctr.MappedPort(ctx, portSpec)
	if err != nil {
		return env, fmt.Errorf("start target: mapped port: %w", err)
	}
	env.TargetURL = scheme + "://127.0.0.1:" + strconv.Itoa(int(mapped.Num()))
	for _, ps := range extra {
		m, err := ctr.MappedPort(ctx, ps)
		if err != nil {
			return env, fmt.Errorf("start target: mapped port of %s: %w", ps, err)
		}
		if env.Ports == nil {
			env.Ports = map[int]int{}
		}
		cp, _ := strconv.Atoi(strings.TrimSuffix(ps, "/tcp"))
		env.Ports[cp] = int(m.Num())
	}
	log.Info("target ready", "url", env.TargetURL, "container", shortID(env.Target.ContainerID))
	if err := d.chooseRoute(ctx, &env, port, log); err != nil {
		return env, err
	}
	return env, nil
}

// ContainerEnvDir is where the docker provider mounts the environment's
// volume in the target, and what {{.EnvDir}} renders to in target.env and
// target.command: a target that keeps its files there (a SQLite database,
// PocketBase's pb_data) can be read by the probes from this host.
const ContainerEnvDir = "/longhaul/env"

// envVolume creates the environment's labelled volume and records its
// mountpoint in env.EnvDir. The mountpoint is made writable for every user
// (mode 1777, like /tmp), since the target may run as any user and a new
// volume's directory belongs to root; a worker that may not do that (not
// root) leaves it as it is, with a note.
func (d *Docker) envVolume(ctx context.Context, env *Environment, labels map[string]string) (string, error) {
	name := "longhaul-" + env.ID + "-env"
	res, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: labels})
	if err != nil {
		return "", fmt.Errorf("create the environment volume %s: %w", name, err)
	}
	if mp := res.Volume.Mountpoint; mp != "" {
		if err := os.Chmod(mp, 0o777|os.ModeSticky); err != nil {
			note := fmt.Sprintf("the environment volume's directory %s is not writable for every user (%v): a target that does not run as root cannot write %s", mp, err, ContainerEnvDir)
			d.opts.Logger.Warn(note)
			env.Notes = append(env.Notes, note)
		}
		env.EnvDir = mp
	}
	return name, nil
}

// readyLine is what PostgreSQL logs when it accepts connections. On a first
// start, the official image logs it twice (a temporary server runs the init
// scripts, then the real one starts); so does the offline image, whose
// entrypoint mirrors it.
const readyLine = "database system is ready to accept connections"

// pgDataDir is where the database's labelled volume is mounted; PGDATA is a
// subdirectory, as the official image's documentation recommends for mounts.
const pgDataDir = "/var/lib/postgresql/data"

// startPostgres starts the database container on env's network with alias
// "db" and its data in a labelled volume.
func (d *Docker) startPostgres(ctx context.Context, env Environment, img string, offline bool, spec scenarios.Database, labels map[string]string) (*DatabaseEndpoint, *templateDB, error) {
	name, usr, pw := dbNames(spec)
	vol := "longhaul-" + env.ID + "-pgdata"
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vol, Labels: labels}); err != nil {
		return nil, nil, fmt.Errorf("start postgres: create volume: %w", err)
	}
	d.opts.Logger.Info("starting postgres", "env", env.ID, "image", img, "offline", offline)
	// longhaul's own images (the default and the offline one) have
	// PostgreSQL's contrib modules, so they load pg_stat_statements for the
	// database probe's statement counts; an image named in database.image
	// is started as it is (a server missing the module would not start),
	// and the probe says when the counts are missing.
	var cmd []string
	statStatements := spec.Image == ""
	if statStatements {
		cmd = []string{"postgres", "-c", "shared_preload_libraries=pg_stat_statements"}
	}
	ctr, err := runPostgres(ctx, img, 2,
		testcontainers.WithCmd(cmd...),
		testcontainers.WithLogger(d.tcLog),
		testcontainers.WithEnv(map[string]string{
			"POSTGRES_USER":     usr,
			"POSTGRES_PASSWORD": pw,
			"POSTGRES_DB":       name,
			"PGDATA":            pgDataDir + "/pgdata",
		}),
		testcontainers.WithLabels(labels),
		tcnetwork.WithNetworkName([]string{"db"}, env.Network),
		testcontainers.WithMounts(testcontainers.VolumeMount(vol, pgDataDir)),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = loopbackBinding("5432/tcp")
		}),
	)
	db := &DatabaseEndpoint{Kind: "postgres", Image: img}
	if ctr != nil {
		db.Process.ContainerID = ctr.GetContainerID()
	}
	if err != nil {
		return db, nil, fmt.Errorf("start postgres %s: %w", img, startError(ctx, d.cli, ctr, err))
	}
	mapped, err := ctr.MappedPort(ctx, "5432/tcp")
	if err != nil {
		return db, nil, fmt.Errorf("start postgres: mapped port: %w", err)
	}
	db.URL = postgresURL(usr, pw, "127.0.0.1", int(mapped.Num()), name)
	db.TargetURL = postgresURL(usr, pw, "db", 5432, name)
	if statStatements {
		// POSTGRES_USER is the image's superuser.
		createStatStatements(ctx, db.URL, d.opts.Logger.With("env", env.ID))
	}
	return db, &templateDB{URL: db.TargetURL, DSN: db.TargetURL, Host: "db", Port: 5432, Name: name, User: usr, Password: pw}, nil
}

// runPostgres starts a PostgreSQL container in the shape of the
// testcontainers modules: the module's defaults first (port, wait strategy),
// then the caller's options. A container that was created is returned even
// with an error, so the caller can remove it.
func runPostgres(ctx context.Context, img string, readyOccurrences int, opts ...testcontainers.ContainerCustomizer) (*testcontainers.DockerContainer, error) {
	moduleOpts := []testcontainers.ContainerCustomizer{
		testcontainers.WithExposedPorts("5432/tcp"),
		testcontainers.WithWaitStrategyAndDeadline(2*time.Minute,
			wait.ForLog(readyLine).WithOccurrence(readyOccurrences).WithStartupTimeout(2*time.Minute),
			wait.ForListeningPort("5432/tcp").WithStartupTimeout(2*time.Minute),
		),
	}
	ctr, err := testcontainers.Run(ctx, img, append(moduleOpts, opts...)...)
	if err != nil {
		return ctr, fmt.Errorf("run postgres: %w", err)
	}
	return ctr, nil
}

// startError describes a failed container start: when the container exists
// (it started but did not get ready, or exited), ErrNotReady with the last
// lines of its log; else err as it is.
func startError(ctx context.Context, cli client.APIClient, ctr *testcontainers.DockerContainer, err error) error {
	if ctr == nil {
		return err
	}
	return errWithTail(fmt.Errorf("%w: %s", ErrNotReady, oneLine(err)), "the container's log", containerTail(ctx, cli, ctr.GetContainerID()))
}

// moduleEndpoint is the endpoint of a database container that a
// testcontainers module started (ctr may be nil, or the partial container,
// when err is set) and the 127.0.0.1 port its container port is published
// on, or err with the container's state and log tail.
func (d *Docker) moduleEndpoint(ctx context.Context, kind, img string, ctr testcontainers.Container, port string, err error) (*DatabaseEndpoint, int, error) {
	db := &DatabaseEndpoint{Kind: kind, Image: img}
	dc, _ := ctr.(*testcontainers.DockerContainer)
	if dc != nil {
		db.Process.ContainerID = dc.GetContainerID()
	}
	if err != nil {
		return db, 0, fmt.Errorf("start %s %s: %w", kind, img, startError(ctx, d.cli, dc, err))
	}
	mapped, err := ctr.MappedPort(ctx, port)
	if err != nil {
		return db, 0, fmt.Errorf("start %s: mapped port: %w", kind, err)
	}
	return db, int(mapped.Num()), nil
}

// loopbackBinding publishes port on a random 127.0.0.1 port only.
func loopbackBinding(port string) network.PortMap {
	p := network.MustParsePort(port)
	return network.PortMap{p: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: ""}}}
}

// containerLimits turns target.resources into container limits, with the
// defaults for zero values (see DefaultMemoryBytes).
func containerLimits(r scenarios.Resources) (container.Resources, error) {
	mem := DefaultMemoryBytes
	if r.Memory != "" {
		var err error
		if mem, err = ParseBytes(r.Memory); err != nil {
			return container.Resources{}, fmt.Errorf("%w: target.resources.memory %q: want a size like 512m or 1g", ErrInvalidSpec, r.Memory)
		}
		if mem < 6<<20 {
			return container.Resources{}, fmt.Errorf("%w: target.resources.memory %q: docker needs at least 6m", ErrInvalidSpec, r.Memory)
		}
	}
	cpus := r.CPUs
	if cpus == 0 {
		cpus = DefaultCPUs
	}
	if cpus < 0.01 {
		return container.Resources{}, fmt.Errorf("%w: target.resources.cpus %v: want a positive fraction of cores", ErrInvalidSpec, r.CPUs)
	}
	pids := r.PIDs
	if pids == 0 {
		pids = DefaultPIDs
	}
	if pids < 0 {
		return container.Resources{}, fmt.Errorf("%w: target.resources.pids %d: want a positive count", ErrInvalidSpec, r.PIDs)
	}
	return container.Resources{
		Memory:     mem,
		MemorySwap: mem, // no swap: a leak ends in an OOM kill, not a thrashing host
		NanoCPUs:   int64(cpus * 1e9),
		PidsLimit:  &pids,
	}, nil
}

// containerLines returns the last n non-empty lines of a container's output.
func containerLines(ctx context.Context, cli client.APIClient, id string, n int) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(2 * n)})
	if err != nil {
		return nil
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return lastLinesFrom(bytes.NewReader(demux(b)), n)
}

// containerTail returns the last 20 lines of a container's output.
func containerTail(ctx context.Context, cli client.APIClient, id string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "40"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return tailOf(demux(b), 20)
}

// demux strips the 8-byte frame headers of a non-TTY container log stream.
func demux(b []byte) []byte {
	var out []byte
	for len(b) >= 8 && (b[0] == 1 || b[0] == 2) && b[1] == 0 && b[2] == 0 && b[3] == 0 {
		n := int(b[4])<<24 | int(b[5])<<16 | int(b[6])<<8 | int(b[7])
		if 8+n > len(b) {
			n = len(b) - 8
		}
		out = append(out, b[8:8+n]...)
		b = b[8+n:]
	}
	return append(out, b...)
}

// Teardown stops the target (SIGTERM, SIGKILL after StopGrace) and removes
// every container, network and volume labelled with env's id, plus the ids
// env names. It is idempotent.
func (d *Docker) Teardown(ctx context.Context, env Environment) error {
	if env.ID == "" {
		return nil
	}
	if id := env.Target.ContainerID; id != "" {
		grace := int(d.opts.StopGrace.Seconds())
		if grace < 1 {
			grace = 1
		}
		if _, err := d.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace}); err != nil && !cerrdefs.IsNotFound(err) {
			d.opts.Logger.Debug("stop target", "container", shortID(id), "err", err)
		}
	}
	var errs []error
	for _, id := range []string{env.Target.ContainerID, dbContainer(env)} {
		if id == "" {
			continue
		}
		if err := d.removeContainer(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := d.removeLabelled(ctx, map[string]string{LabelEnv: env.ID}); err != nil {
		errs = append(errs, err)
	}
	if env.Network != "" {
		if _, err := d.cli.NetworkRemove(ctx, env.Network, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", env.Network, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tear down %s: %w", env.ID, err)
	}
	d.opts.Logger.Info("environment removed", "env", env.ID)
	return nil
}

func dbContainer(env Environment) string {
	if env.Database == nil {
		return ""
	}
	return env.Database.Process.ContainerID
}

func (d *Docker) removeContainer(ctx context.Context, id string) error {
	_, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) {
		return fmt.Errorf("remove container %s: %w", shortID(id), err)
	}
	return nil
}

func isRemovalInProgress(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// removeLabelled removes the containers, then networks, then volumes that
// carry all of labels, and describes what it removed.
func (d *Docker) removeLabelled(ctx context.Context, labels map[string]string) ([]string, error) {
	f := client.Filters{}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f = f.Add("label", k+"="+labels[k])
	}
	return d.removeMatching(ctx, f, func(map[string]string) bool { return true })
}

// removeMatching removes the containers, then networks, then volumes that
// match f and for which remove returns true.
func (d *Docker) removeMatching(ctx context.Context, f client.Filters, remove func(labels map[string]string) bool) ([]string, error) {
	var removed []string
	var errs []error
	cs, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		if !remove(c.Labels) {
			continue
		}
		if err := d.removeContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "container "+shortID(c.ID)+describe(c.Labels))
	}
	ns, err := d.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, n := range ns.Items {
		if !remove(n.Labels) {
			continue
		}
		if _, err := d.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			continue
		}
		removed = append(removed, "network "+n.Name+describe(n.Labels))
	}
	vs, err := d.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list volumes: %w", err))...)
	}
	for _, v := range vs.Items {
		if !remove(v.Labels) {
			continue
		}
		if _, err := d.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
			continue
		}
		removed = append(removed, "volume "+v.Name+describe(v.Labels))
	}
	return removed, errors.Join(errs...)
}

func describe(labels map[string]string) string {
	return " (run " + labels[LabelRun] + ", incarnation " + labels[LabelIncarnation] + ")"
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Check reports whether the target (and database) containers are running
// and the target accepts connections by its route (inside its network
// namespace, or at its published port). A database container that runs
// but was started again since the environment recorded its start (someone
// ran docker restart between two checks: fast enough never to be seen
// stopped) is a RestartedError: its published port changed with it.
//
// Its three questions (inspect the target, inspect the database, dial the
// target) are asked at once, so the check takes as long as the slowest
// rather than their sum: under heavy load (load average 46 on two cores)
// one engine call took over a second, and two in a row did not fit the
// drive's check budget, so such a check recorded nothing. An inspect that
// fails (not "no such container") is asked once more within the budget.
func (d *Docker) Check(ctx context.Context, env Environment) error {
	ids := []string{env.Target.ContainerID, dbContainer(env)}
	var states [2]container.InspectResponse
	var errs [2]error
	var dialErr error
	var wg sync.WaitGroup
	for i, id := range ids {
		if id == "" {
			continue
		}
		wg.Go(func() { states[i], errs[i] = d.inspectOnce(ctx, id) })
	}
	wg.Go(func() { dialErr = dialTarget(ctx, env) })
	wg.Wait()
	for i, id := range ids {
		if id == "" {
			continue
		}
		if err := errs[i]; err != nil {
			if cerrdefs.IsNotFound(err) {
				return fmt.Errorf("%w: container %s of %s does not exist", ErrGone, shortID(id), env.ID)
			}
			return fmt.Errorf("check %s: %w", env.ID, err)
		}
		r := states[i]
		if st := r.State; st == nil || !st.Running {
			return &ExitError{d.stoppedEvent(ctx, env, id, r)}
		}
		if i == 1 {
			if err := databaseRestarted(env, r); err != nil {
				err.Event.Output = containerLines(ctx, d.cli, id, ExitLines)
				return err
			}
		}
	}
	if dialErr != nil {
		return fmt.Errorf("%w: target %s: %v", ErrGone, env.TargetURL, dialErr)
	}
	return nil
}

// inspectOnce inspects container id, and once more when the engine's answer
// was an error other than "no such container" and ctx has time left (a
// connection to the engine dropped under load).
func (d *Docker) inspectOnce(ctx context.Context, id string) (container.InspectResponse, error) {
	r, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) && ctx.Err() == nil {
		r, err = d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	}
	return r.Container, err
}

// stoppedEvent is the event of container id of env found not running: the
// target's exit or the database's, how (exit code, out of memory), when,
// and its last lines.
func (d *Docker) stoppedEvent(ctx context.Context, env Environment, id string, c container.InspectResponse) window.Event {
	setting, kind, what := "", window.EventDatabaseExit, "database"
	if id == env.Target.ContainerID {
		setting, kind, what = "target.resources.memory", window.EventTargetExit, "target"
	}
	ev := window.Event{Kind: kind, Container: shortID(id),
		Detail: fmt.Sprintf("the %s container %s is not running%s", what, shortID(id), whyStopped(c, setting))}
	if st := c.State; st != nil {
		if t, ok := engineTime(st.FinishedAt); ok {
			ev.At = t
		}
		if st.Status == container.StateExited || st.OOMKilled {
			code := st.ExitCode
			ev.ExitCode = &code
		}
		if st.OOMKilled {
			ev.OOMKilled, ev.OOMSource = true, "container state"
		}
	}
	ev.Output = containerLines(ctx, d.cli, id, ExitLines)
	return ev
}

// engineTime parses a time in a container's state (RFC 3339); the zero
// time the engine reports for "never" ("0001-01-01T00:00:00Z") is not one.
func engineTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// whyStopped says why a container that is not running stopped, when its
// state tells: killed at its memory limit (a leaking target does this in a
// long enough soak; setting names the scenario field that raises the
// limit), or its exit code.
func whyStopped(c container.InspectResponse, setting string) string {
	st := c.State
	switch {
	case st == nil:
		return ""
	case st.OOMKilled:
		limit := ""
		if c.HostConfig != nil && c.HostConfig.Memory > 0 {
			limit = fmt.Sprintf(" of %.0f MiB", float64(c.HostConfig.Memory)/(1<<20))
		}
		if setting != "" {
			limit += " — " + setting + " sets it"
		}
		return fmt.Sprintf(" (killed for running out of memory: it reached its limit%s)", limit)
	case st.Status == container.StateExited:
		return fmt.Sprintf(" (exited with code %d)", st.ExitCode)
	}
	return fmt.Sprintf(" (%s)", st.Status)
}

// Sweep removes every container, network and volume labelled dev.longhaul=1
// whose run is not running.
func (d *Docker) Sweep(ctx context.Context, isRunning func(runID string) bool) ([]string, error) {
	f := client.Filters{}.Add("label", LabelManaged+"=1")
	verdict := map[string]bool{} // ask once per run
	removed, err := d.removeMatching(ctx, f, func(labels map[string]string) bool {
		run := labels[LabelRun]
		running, ok := verdict[run]
		if !ok {
			running = isRunning(run)
			verdict[run] = running
		}
		return !running
	})
	if err != nil {
		return removed, fmt.Errorf("sweep docker: %w", err)
	}
	return removed, nil
}
