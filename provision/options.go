package provision

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Defaults used when Options or the spec leave a value zero.
const (
	// DefaultPostgresImage is the database image when database.image is empty.
	DefaultPostgresImage = "postgres:16"
	// OfflinePostgresImage is built by scripts/offline-images.sh from Debian
	// packages; it is used when the requested image is absent and cannot be pulled.
	OfflinePostgresImage = "longhaul/postgres:15-offline"
	// DefaultMySQLImage and DefaultMariaDBImage are the database images of
	// database.kind mysql and mariadb when database.image is empty.
	DefaultMySQLImage   = "mysql:8.4"
	DefaultMariaDBImage = "mariadb:11"
	// OfflineMySQLImage is MariaDB from Debian packages, built by
	// scripts/offline-images.sh: the fallback of both kinds (MariaDB speaks
	// MySQL's protocol) when their image is absent and cannot be pulled.
	OfflineMySQLImage = "longhaul/mariadb:offline"
	// DefaultMongoImage is the database image of database.kind mongodb. It
	// has no offline fallback: MongoDB has no Debian package to build one
	// from, so a docker engine without a registry needs it loaded by hand.
	DefaultMongoImage = "mongo:7"
	// DefaultHealthTimeout bounds the wait for target.health (and the
	// database) when the spec gives none.
	DefaultHealthTimeout = 60 * time.Second
	// DefaultStopGrace is how long a target gets between SIGTERM (docker
	// stop) and SIGKILL at teardown.
	DefaultStopGrace = 10 * time.Second
	// DefaultContainerPort is the target's port inside its container.
	DefaultContainerPort = 8080
	// DefaultPullTimeout bounds one attempt to pull a missing image.
	DefaultPullTimeout = 5 * time.Minute
)

// Default container limits for the target when target.resources leaves them
// zero. The target shares the host with the driver and the database: one CPU
// leaves the driver a core of its own on a 2-core machine (a starved driver
// measures itself, not the target); 1 GiB with no swap makes a leaking build
// end in an OOM kill, recorded as the target's fault, instead of thrashing the
// host; 512 processes/threads stop a runaway fork or thread leak before it
// exhausts the host's PID space, while no sane server needs that many.
const (
	DefaultMemoryBytes int64   = 1 << 30
	DefaultCPUs        float64 = 1
	DefaultPIDs        int64   = 512
)

// Labels put on every docker container, network and volume longhaul creates.
const (
	LabelManaged     = "dev.longhaul" // always "1"
	LabelRun         = "dev.longhaul.run"
	LabelIncarnation = "dev.longhaul.incarnation"
	LabelEnv         = "dev.longhaul.env" // Environment.ID
)

// Errors callers branch on. Messages built on them say what to do.
var (
	// ErrInvalidSpec: the environment spec cannot be provisioned as written
	// (the user's to fix; the CLI exits 2).
	ErrInvalidSpec = errors.New("invalid environment")
	// ErrNoEngine: no Docker engine answers.
	ErrNoEngine = errors.New("no Docker engine answers")
	// ErrImageMissing: an image is absent and cannot be pulled.
	ErrImageMissing = errors.New("image not available")
	// ErrBuild: building the target failed.
	ErrBuild = errors.New("build failed")
	// ErrNotReady: the target or database did not become ready.
	ErrNotReady = errors.New("not ready")
	// ErrGone: Check found the environment (or part of it) gone.
	ErrGone = errors.New("environment gone")
)

// Options configure the providers. The zero value works.
type Options struct {
	// DataDir holds the local provider's state: DataDir/provision/<env id>/.
	// Default: $XDG_DATA_HOME/longhaul or ~/.local/share/longhaul.
	DataDir string
	// TempDir is where local PostgreSQL clusters are created (it must be
	// traversable by the postgres user when running as root). Default os.TempDir().
	TempDir string
	// Logger receives progress and testcontainers' logs (at debug level).
	// Default slog.Default().
	Logger *slog.Logger
	// StopGrace is the time between SIGTERM and SIGKILL at teardown.
	// Default DefaultStopGrace.
	StopGrace time.Duration
	// PostgresBinDir holds initdb and postgres for the local provider.
	// Default: the newest /usr/lib/postgresql/*/bin.
	PostgresBinDir string
	// PostgresImage replaces DefaultPostgresImage; OfflineImage replaces
	// OfflinePostgresImage (docker provider).
	PostgresImage string
	OfflineImage  string
	// PullTimeout bounds one pull attempt. Default DefaultPullTimeout.
	PullTimeout time.Duration
	// Hostname is recorded in Environment.Host. Default os.Hostname().
	Hostname string
	// Route chooses how docker targets are reached (Environment.Route): ""
	// or "auto" for RouteNetNS wherever it is possible (else the published
	// port, noted); RouteNetNS to fail a provision where it is not;
	// RoutePublishedPort to always use the published port (to compare the
	// two, or to rule the namespace route out when diagnosing).
	Route string
}

func (o Options) withDefaults() Options {
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir()
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.PostgresImage == "" {
		o.PostgresImage = DefaultPostgresImage
	}
	if o.OfflineImage == "" {
		o.OfflineImage = OfflinePostgresImage
	}
	if o.PullTimeout <= 0 {
		o.PullTimeout = DefaultPullTimeout
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
	return o
}

// DefaultDataDir is longhaul's data directory: $XDG_DATA_HOME/longhaul, else
// ~/.local/share/longhaul, else a directory under os.TempDir().
func DefaultDataDir() string {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "longhaul")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "share", "longhaul")
	}
	return filepath.Join(os.TempDir(), "longhaul")
}

// EnvironmentID is the id of a run incarnation's environment: the run id made
// safe for docker names and paths, then the incarnation.
func EnvironmentID(runID string, incarnation int) string {
	return safeName(runID) + "-" + strconv.Itoa(incarnation)
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// safeName maps s onto [a-zA-Z0-9_.-], starting with an alphanumeric, at
// most 48 characters (a hash of s keeps long names distinct).
func safeName(s string) string {
	n := unsafeChars.ReplaceAllString(s, "-")
	n = strings.TrimLeft(n, "-_.")
	if n == "" {
		n = "run"
	}
	if len(n) > 48 || n != s {
		h := fnv32(s)
		if len(n) > 39 {
			n = n[:39]
		}
		n = fmt.Sprintf("%s-%08x", n, h)
	}
	return n
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// ParseBytes parses a memory size: a number with an optional unit b, k, m, g,
// t (binary multiples, as docker does; "kb", "kib", "mb", "mib"... are
// accepted). "512m" is 512 MiB. A bare number is bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: size %q: want a number with an optional unit, like 512m or 1g", ErrInvalidSpec, s)
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "ki": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "mi": 1 << 20,
		"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "gi": 1 << 30,
		"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40, "ti": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%w: size %q: unknown unit %q (use b, k, m, g or t)", ErrInvalidSpec, s, unit)
	}
	return int64(v * mult), nil
}

// oneLine collapses err's message onto one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
