// Package provision brings up what a soak drives: the target (an image, a
// Dockerfile built at a git ref, or a local command) and its database, and
// tears them down again. The docker provider uses testcontainers-go; the local
// provider runs processes (and a private PostgreSQL cluster) on this host.
//
// Recipe:
//
//  1. Pick a provider with New (or NewDocker / NewLocal directly).
//  2. Provision(ctx, Request) returns an Environment: the loopback URL to
//     drive, the database's DSN, and the ids needed to probe and remove it.
//  3. Teardown(ctx, env) removes everything; Check(ctx, env) tells whether a
//     resumed drive can reuse it; Sweep removes leftovers of runs that are no
//     longer running (labelled containers, networks, volumes; local
//     processes and directories).
//
// Errors wrap ErrInvalidSpec (the user's to fix), ErrNoEngine,
// ErrImageMissing, ErrBuild, ErrNotReady (with the last lines of the build
// or container log) or ErrGone (Check), and say what to do.
//
// Environments are plain data (JSON), so they travel in Temporal activity
// results and the run record; any worker on the same host can tear one down.
//
// # Which provider
//
// New(kind, opts) returns a Provisioner that picks, per request: Request.Provider,
// else Spec.Provider, else kind, else "auto". A spec with only target.url is
// never provisioned ("url": Check is a TCP connect). "auto" is docker when an
// engine answers (checked once, cached) and the images are present or
// pullable, else local when the spec has a target.command; the choice is
// recorded in Environment.Provider, and Teardown/Check dispatch on it. So one
// spec can describe both ways: target.image for docker, target.build.command
// and target.command for local. In such a spec target.command is the local
// argv; it overrides the image's command only when the spec's own provider
// is docker.
//
// # Local provider
//
// The build command runs with sh -c in build.dir, with $LONGHAUL_ENV_DIR
// (EnvDirVar) naming the environment's own directory: output built there
// (`go build -o "$LONGHAUL_ENV_DIR/api"`) is found by target.command as
// {{.EnvDir}}/api and removed at teardown, so nothing is written into the
// source tree and concurrent runs do not share a binary. The target runs in
// its own process group on 127.0.0.1 (a free port in $PORT unless
// target.port is fixed), with stdout/stderr in a log file, never a pipe: a
// pipe would break (SIGPIPE) when the worker dies. Each environment has a
// state directory, Options.DataDir/provision/<env id>/, holding
// environment.json, so a worker restarted on the same host can Check and
// reuse the environment, and Sweep finds the leftovers of runs that are
// over. Every process longhaul starts carries LONGHAUL_ENV_ID in its
// environment: teardown kills the target's process group and every process
// carrying the marker (children that left the group included), and a
// recycled PID is never mistaken for the target. database: {kind: postgres}
// starts a private cluster (initdb + postgres from the newest
// /usr/lib/postgresql/*/bin) in a temp dir on a free loopback port; as root,
// it runs as the postgres user, since PostgreSQL refuses root.
//
// # Docker provider and the Ryuk policy
//
// One network per run incarnation; PostgreSQL (database.image, default
// postgres:16, falling back to OfflinePostgresImage when that is absent and
// cannot be pulled) reachable from the target as host "db"; the target from
// target.image or a Dockerfile built at a git ref and tagged
// longhaul-target/<name>:<commit> (reused when the tag exists); ports (the
// target's, and Request.Publish: a Node.js inspector's) published on random
// ports of 127.0.0.1 only; resource limits; the labels dev.longhaul=1,
// dev.longhaul.run, dev.longhaul.incarnation and dev.longhaul.env on every
// container, network and volume. A git-ref build resolves the ref with git
// rev-parse (ls-remote for a URL) and sends `git archive` of the commit's
// context directory to the engine, so no worktree is touched (submodules and
// LFS files are not included). Since ports are published on 127.0.0.1, a
// worker that runs in a container must share the host's network namespace.
//
// The route to a docker target (Environment.Route): the driver and the
// probes do not go through the published port when they can help it, since
// docker's userland proxy relays every byte of it and costs the measured
// host ~125 µs of CPU per request. Instead they open their connections
// inside the target container's network namespace (package netns), on the
// container's own 127.0.0.1: RouteNetNS, with Environment.NetNS. That needs
// CAP_SYS_ADMIN, the container's pid visible in this pid namespace, and a
// target listening on 0.0.0.0, :: or a loopback address inside its
// container; where any of these is missing, the route is RoutePublishedPort
// and the reason is logged once and kept in Environment.Notes.
// Options.Route = RoutePublishedPort forces the published port. Either way
// the published 127.0.0.1 port exists and Environment.TargetURL names it.
//
// Both providers first remove what an earlier attempt at the same run
// incarnation left, so a retried Provision starts clean.
//
// Ryuk, testcontainers' reaper, removes a session's containers about 10 s
// after the process that created them dies. For a soak that is the wrong
// guarantee: a worker restart (a deploy, a crash, kill -9) would destroy the
// target mid-run, although the workflow resumes the drive on the same host
// and could reuse it. So the docker provider always disables Ryuk (it sets
// TESTCONTAINERS_RYUK_DISABLED=true before the first testcontainers call, and
// refuses to start if testcontainers was already configured with Ryuk on).
// Cleanup is longhaul's own: Teardown at the end of every run (deferred, so
// cancellation and failure clean up too), and Sweep by label at every worker
// start and in `longhaul sweep` for runs that are no longer running.
package provision

import (
	"context"
	"time"

	"github.com/longhaul-dev/longhaul/netns"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// Request asks for one incarnation of a run's environment.
type Request struct {
	RunID       string
	Incarnation int
	Spec        scenarios.Environment
	// Provider overrides Spec.Provider when set ("docker", "local", "auto").
	Provider string
	// ExtraEnv is added to (and overrides) Spec.Target.Env.
	ExtraEnv map[string]string
	// Publish lists more ports of the target to reach from this host, such
	// as a Node.js inspector's (probes.heap.inspector.port). The docker
	// provider publishes each container port on a random 127.0.0.1 port and
	// records it in Environment.Ports; the local provider ignores it (a local
	// target's ports are this host's).
	Publish []int `json:"publish,omitempty"`
	// Prebuilt is a directory with the target already built (Builder.Build
	// for a comparison side): the local provider copies its files into the
	// environment's directory instead of running target.build.command, and
	// runs the target in the build's source tree. The docker provider
	// ignores it.
	Prebuilt string `json:"prebuilt,omitempty"`
	// LookupEnv resolves ${env:NAME} in the spec; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool) `json:"-"`
}

// Environment describes a provisioned environment. Every field is data, so it
// can be stored and sent between processes.
type Environment struct {
	ID          string    `json:"id"` // unique per run incarnation
	RunID       string    `json:"run_id"`
	Incarnation int       `json:"incarnation"`
	Provider    string    `json:"provider"` // "url", "local" or "docker"
	Host        string    `json:"host"`     // hostname of the machine it runs on
	CreatedAt   time.Time `json:"created_at"`

	// TargetURL is the target's base URL on this host's loopback (for a
	// docker target, its published port).
	TargetURL string `json:"target_url"`
	// Route is how the driver and the probes reach a docker target:
	// RouteNetNS (inside its container's network namespace, at NetNS.URL)
	// or RoutePublishedPort (at TargetURL); "" for other providers, whose
	// TargetURL is the target itself.
	Route string `json:"route,omitempty"`
	// NetNS is where the target listens inside its container's network
	// namespace, when Route is RouteNetNS.
	NetNS *netns.Target `json:"netns,omitempty"`
	// Target identifies the target for probes and teardown.
	Target Process `json:"target"`

	Database *DatabaseEndpoint `json:"database,omitempty"`

	// Ports maps each Request.Publish container port to the 127.0.0.1 port
	// it is published on (docker provider; nil for local targets).
	Ports map[int]int `json:"ports,omitempty"`

	// EnvDir is the environment's own directory on this host, which
	// {{.EnvDir}} names: the local provider's environment directory; for
	// the docker provider the mountpoint of the environment's volume
	// (labelled like the rest), mounted in the target at ContainerEnvDir,
	// which is what {{.EnvDir}} renders to inside the container. Probes read
	// the target's files there (probes.database.sqlite).
	EnvDir string `json:"env_dir,omitempty"`

	// Network is the docker network of the run (docker provider).
	Network string `json:"network,omitempty"`
	// Image is the target image used (docker), with the commit it was built
	// from when it was built from a git ref.
	Image  string `json:"image,omitempty"`
	Commit string `json:"commit,omitempty"`

	// Notes are human-readable remarks on how the environment was made (the
	// provider "auto" chose, an image fallback), for the run record.
	Notes []string `json:"notes,omitempty"`
}

// Process identifies a running target or database: a local process group or a
// container.
type Process struct {
	PID         int    `json:"pid,omitempty"`          // local: process (and group) id
	ContainerID string `json:"container_id,omitempty"` // docker
	// DataDir is a directory owned by this process that teardown removes
	// (local PostgreSQL cluster, build output).
	DataDir string `json:"data_dir,omitempty"`
	// StartedAt is when a restarted target container was started again
	// (TargetRestarter); its log for the incarnation starts there. Zero
	// for a target as provisioned. For a database container: its start as
	// the engine last reported it to longhaul (at provision and at each
	// RestartDatabase); a Check that finds a later one found a restart
	// someone else made (RestartedError).
	StartedAt time.Time `json:"started_at,omitzero"`
}

// DatabaseEndpoint is a provisioned database.
type DatabaseEndpoint struct {
	Kind string `json:"kind"` // "postgres"
	// URL is a DSN reachable from this host (127.0.0.1), for probes.
	URL string `json:"url"`
	// TargetURL is the DSN the target uses (container-to-container for docker).
	TargetURL string  `json:"target_url"`
	Process   Process `json:"process"`
	// Image is the database image used (docker provider).
	Image string `json:"image,omitempty"`
	// BackendURL is the PostgreSQL database a FerretDB (database.kind
	// mongodb on the local provider without mongod) keeps its collections
	// in, reachable from this host: the database probe reads each
	// collection's reads from its statistics. "" for every other server.
	BackendURL string `json:"backend_url,omitempty"`
}

// Provisioner brings environments up and down.
type Provisioner interface {
	// Provision brings up one incarnation. On error, whatever was created is
	// already removed, or described by the returned partial Environment so
	// Teardown can remove it.
	Provision(ctx context.Context, req Request) (Environment, error)
	// Teardown removes everything in env. It is idempotent.
	Teardown(ctx context.Context, env Environment) error
	// Check reports whether env is still up (target answering); a nil error
	// means a resumed drive may reuse it.
	Check(ctx context.Context, env Environment) error
}
