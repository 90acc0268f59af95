// Package scenarios defines longhaul's scenario format: a YAML file that says
// what load to drive (load), what each virtual user does once (setup) and over
// and over (ops, weighted), where the target comes from (environment) and what
// to measure on the server side (probes), and which limits the run must stay
// within to pass (thresholds).
//
// Recipe:
//
//  1. Parse a file with LoadFile (or bytes with Parse): strict YAML, every problem
//     reported with file:line, defaults filled in.
//  2. Compile the scenario into a Plan: templates, captures and pools made ready
//     for the hot path; ${env:NAME} references resolved here, at run time.
//  3. The driver asks the Plan for one VU state per virtual user (NewVU) and,
//     per request, renders an Action into a reusable Rendered request
//     (Render, allocation-free), sends it, and classifies the response
//     (Check, which also applies the captures).
//
// A Plan and its Pools are safe for concurrent use; a VU belongs to one
// goroutine. The format is documented in README.md next to this file;
// `longhaul scenario validate FILE...` checks files from the command line.
package scenarios

import "time"

// Scenario is a parsed, validated scenario file with defaults filled in.
// It holds references such as ${env:NAME} unresolved, so it can be stored and
// sent to workers without leaking secrets.
type Scenario struct {
	Name        string      `yaml:"name" json:"name"`
	Load        Load        `yaml:"load" json:"load"`
	Setup       []Step      `yaml:"setup" json:"setup,omitempty"`
	Ops         []Op        `yaml:"ops" json:"ops"`
	Environment Environment `yaml:"environment" json:"environment"`
	Probes      Probes      `yaml:"probes" json:"probes"`
	// Thresholds are the run's pass/fail limits (see Threshold).
	Thresholds []Threshold `yaml:"thresholds" json:"thresholds,omitempty"`
	// Compare tunes comparisons of two builds on this scenario (optional).
	Compare *Compare `yaml:"compare" json:"compare,omitempty"`

	// Source is the file the scenario came from ("" for bytes); not part of the format.
	Source string `yaml:"-" json:"-"`
}

// Compare tunes `longhaul compare` on the scenario: Ignore lists JSON paths
// of response bodies the equivalence check does not compare ("$.meta.took",
// "$.items[*].rank", "$..etag"), beyond the generated ids, UUIDs, tokens and
// timestamps it always replaces.
type Compare struct {
	Ignore []string `yaml:"ignore" json:"ignore,omitempty"`
}

// Load says how much load to drive and how to cut it into windows.
// Closed model: VUs virtual users, each sends its next request when the last
// returns. Open model: Rate iterations per second with at most MaxVUs in
// flight. Stages ramp the VU count (closed) or the rate (open) linearly from
// the previous target to each stage's target over the stage's duration.
type Load struct {
	VUs      int      `yaml:"vus" json:"vus,omitempty"`
	Rate     float64  `yaml:"rate" json:"rate,omitempty"`
	MaxVUs   int      `yaml:"max_vus" json:"max_vus,omitempty"`
	Stages   []Stage  `yaml:"stages" json:"stages,omitempty"`
	Duration Duration `yaml:"duration" json:"duration"`
	Window   Duration `yaml:"window" json:"window"`
	Warmup   Duration `yaml:"warmup" json:"warmup,omitempty"`
	Timeout  Duration `yaml:"timeout" json:"timeout"`
}

// Open reports whether the load is the open (arrival-rate) model.
func (l Load) Open() bool { return l.Rate > 0 || l.MaxVUs > 0 }

// Stage is one step of a ramp: reach Target (VUs or iterations/s) over Duration.
type Stage struct {
	Duration Duration `yaml:"duration" json:"duration"`
	Target   float64  `yaml:"target" json:"target"`
}

// Step is one HTTP exchange: a setup step or (with a weight) an op.
type Step struct {
	Name    string  `yaml:"name" json:"name"`
	Request Request `yaml:"request" json:"request"`
	// WebSocket makes an op a WebSocket session instead of a request
	// (websocket.go); such an op has no request, capture or expect of its own.
	WebSocket *WebSocket `yaml:"websocket" json:"websocket,omitempty"`
	Capture   []Capture  `yaml:"capture" json:"capture,omitempty"`
	Expect    Expect     `yaml:"expect" json:"expect,omitempty"`
	Think     Think      `yaml:"think" json:"think,omitempty"`

	// Line is the step's line in Source, for error messages; not part of the format.
	Line int `yaml:"-" json:"-"`
}

// Op is a weighted step; ops are picked at random in proportion to Weight (> 0).
type Op struct {
	Step   `yaml:",inline" json:",inline"`
	Weight int `yaml:"weight" json:"weight"`
}

// Request is a templated HTTP request. Path, query values, header values, Body
// and every string leaf of JSON are templates (see README.md). At most one of
// JSON and Body is set; JSON sets Content-Type: application/json unless a
// header says otherwise.
type Request struct {
	Method  string            `yaml:"method" json:"method"`
	Path    string            `yaml:"path" json:"path"`
	Query   map[string]string `yaml:"query" json:"query,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	JSON    any               `yaml:"json" json:"json,omitempty"`
	Body    string            `yaml:"body" json:"body,omitempty"`
}

// Capture copies one field of a JSON response into a VU variable (Var) or
// appends it to a shared pool (Pool) that other ops pick from. JSON is a dotted
// path into the response ("id", "data.token", "ids.0").
type Capture struct {
	JSON string `yaml:"json" json:"json"`
	Var  string `yaml:"var" json:"var,omitempty"`
	Pool string `yaml:"pool" json:"pool,omitempty"`
	// Each, for an array at JSON, adds every element to Pool.
	Each bool `yaml:"each" json:"each,omitempty"`
}

// Expect lists the acceptable status codes; empty means any 2xx or 3xx.
type Expect struct {
	Status []int `yaml:"status" json:"status,omitempty"`
}

// Think is a pause after a step, uniform in [Min, Max]. In YAML it is either a
// duration ("100ms") or {min: 50ms, max: 150ms}.
type Think struct {
	Min Duration `yaml:"min" json:"min,omitempty"`
	Max Duration `yaml:"max" json:"max,omitempty"`
}

// Environment says where the target comes from. With only Target.URL nothing
// is provisioned. Provider "local" runs processes on the worker's host,
// "docker" runs containers, "auto" picks docker when an engine answers and
// the images are available, else local.
type Environment struct {
	Provider string   `yaml:"provider" json:"provider,omitempty"`
	Target   Target   `yaml:"target" json:"target"`
	Database Database `yaml:"database" json:"database"`
	// Protocol is how the driver speaks HTTP to the target: "h1" (the
	// default: HTTP/1.1, over TLS when the target is https), "h2" (HTTP/2
	// over TLS, negotiated by ALPN) or "h2c" (HTTP/2 over cleartext, prior
	// knowledge). See docs/protocols.md.
	Protocol string `yaml:"protocol" json:"protocol,omitempty"`
	// TLS makes the target https. A provisioned target (local or docker)
	// gets a self-signed certificate for 127.0.0.1 and localhost made at
	// provision time ({{.TLS.CertFile}} and {{.TLS.KeyFile}} in target.env
	// and target.command), which the driver trusts; with target.url the URL
	// says https and CAFile names the certificate to trust.
	TLS *TLS `yaml:"tls" json:"tls,omitempty"`
}

// Protocols the driver speaks (Environment.Protocol).
const (
	ProtocolH1  = "h1"
	ProtocolH2  = "h2"
	ProtocolH2C = "h2c"
)

// TLS configures the driver's TLS client. Every field is optional.
type TLS struct {
	// CAFile is a PEM file of the certificates to trust, instead of the
	// system's roots (and of the provisioned self-signed certificate).
	CAFile string `yaml:"ca_file" json:"ca_file,omitempty"`
	// ServerName is sent in SNI and checked against the certificate;
	// default: the target URL's host.
	ServerName string `yaml:"server_name" json:"server_name,omitempty"`
	// InsecureSkipVerify accepts any certificate (the handshake is still
	// measured): for a target whose certificate nobody can name.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// Target is the system under test.
type Target struct {
	// URL of an already running target: nothing is provisioned.
	URL string `yaml:"url" json:"url,omitempty"`
	// Image to run (docker provider).
	Image string `yaml:"image" json:"image,omitempty"`
	// Build: a command run in a directory (local provider) or a Dockerfile at a
	// git ref (docker provider).
	Build *Build `yaml:"build" json:"build,omitempty"`
	// Command is the argv of the target process (local provider). With
	// provider docker it overrides the image's command; in an auto spec it is
	// the local provider's only. Arguments are templates like Env's, plus
	// {{.EnvDir}}, the environment's own directory (local provider; a docker
	// target has its environment volume there, /longhaul/env).
	Command []string `yaml:"command" json:"command,omitempty"`
	// Dir is the working directory of Command (local provider).
	Dir string `yaml:"dir" json:"dir,omitempty"`
	// Env is added to the target's environment. Values are templates rendered
	// at provision time: {{.Database.URL}}, {{.Port}}, ${env:NAME}.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Port the target listens on. Local: fixed host port, or 0 to pick a free
	// one and pass it in $PORT. Docker: the container port (default 8080),
	// published on a random 127.0.0.1 port.
	Port int `yaml:"port" json:"port,omitempty"`
	// Health is a path polled until it answers 2xx before load starts.
	Health string `yaml:"health" json:"health,omitempty"`
	// HealthTimeout bounds the wait for Health (default 60s).
	HealthTimeout Duration `yaml:"health_timeout" json:"health_timeout,omitempty"`
	// Resources limit the target container (docker provider).
	Resources Resources `yaml:"resources" json:"resources"`
	// Restart says whether a target that crashes mid-soak is started again
	// (nil: never, the run ends failed).
	Restart *Restart `yaml:"restart" json:"restart,omitempty"`
}

// Restart policies of target.restart.policy.
const (
	// RestartNever: a crash ends the run (the default).
	RestartNever = "no"
	// RestartOnFailure: a target that stops mid-soak is started again, at
	// most Max times, as a new incarnation of the same environment (its
	// database and data kept).
	RestartOnFailure = "on-failure"
)

// DefaultRestartMax is target.restart.max when the policy is on-failure and
// max is not given.
const DefaultRestartMax = 3

// Restart is target.restart: {policy: on-failure, max: N}.
type Restart struct {
	Policy string `yaml:"policy" json:"policy,omitempty"`
	// Max is how many times the target is restarted in one run; the crash
	// after the last allowed restart ends the run.
	Max int `yaml:"max" json:"max,omitempty"`
}

// Restarts is how many times a crashed target may be restarted in one run
// (0 when the policy is not on-failure).
func (t Target) Restarts() int {
	if t.Restart == nil || t.Restart.Policy != RestartOnFailure {
		return 0
	}
	return t.Restart.Max
}

// Build says how to build the target.
type Build struct {
	// Command is a shell command run in Dir (local provider), with
	// $LONGHAUL_ENV_DIR naming the environment's own directory: build output
	// written there is removed at teardown.
	Command string `yaml:"command" json:"command,omitempty"`
	Dir     string `yaml:"dir" json:"dir,omitempty"`
	// Repo, Ref, Dockerfile, Context: build a Dockerfile from a git ref
	// (docker provider). Repo is a path or URL; Context is relative to the
	// repository root (default "."), Dockerfile relative to Context
	// (default "Dockerfile").
	Repo       string `yaml:"repo" json:"repo,omitempty"`
	Ref        string `yaml:"ref" json:"ref,omitempty"`
	Dockerfile string `yaml:"dockerfile" json:"dockerfile,omitempty"`
	Context    string `yaml:"context" json:"context,omitempty"`
}

// Resources limit a container. Memory is a size ("512m", "1g"), CPUs a
// fraction of cores, PIDs a process count. Zero means the provider's default.
type Resources struct {
	Memory string  `yaml:"memory" json:"memory,omitempty"`
	CPUs   float64 `yaml:"cpus" json:"cpus,omitempty"`
	PIDs   int64   `yaml:"pids" json:"pids,omitempty"`
}

// Database is the target's database. Kind "none" (the default) means the
// target brings its own; the other DatabaseKinds provision a fresh one per
// incarnation: "postgres" (PostgreSQL), "mysql" and "mariadb" (the docker
// provider runs mysql:8.4 or mariadb:11; the local provider runs Debian's
// MariaDB server for both, which speaks MySQL's protocol), "mongodb" (the
// docker provider runs mongo:7; the local provider a mongod on PATH, else
// FerretDB, a MongoDB-protocol server, over a private PostgreSQL).
type Database struct {
	Kind     string `yaml:"kind" json:"kind,omitempty"`
	Image    string `yaml:"image" json:"image,omitempty"` // docker; default per kind (postgres:16, mysql:8.4, mariadb:11, mongo:7)
	Name     string `yaml:"name" json:"name,omitempty"`   // default "longhaul"
	User     string `yaml:"user" json:"user,omitempty"`   // default "longhaul"
	Password string `yaml:"password" json:"password,omitempty"`
}

// DatabaseKinds are the database.kind values that provision a database.
var DatabaseKinds = []string{"postgres", "mysql", "mariadb", "mongodb"}

// IsMySQL reports whether kind is served by a MySQL-protocol server
// (mysql or mariadb).
func IsMySQL(kind string) bool { return kind == "mysql" || kind == "mariadb" }

// IsMongoDB reports whether kind is served by a MongoDB-protocol server.
func IsMongoDB(kind string) bool { return kind == "mongodb" }

// Probes configure the server-side measurements taken each window.
type Probes struct {
	// Process samples the target's CPU time and RSS (default on when longhaul
	// runs the target; off for a bare URL).
	Process *bool `yaml:"process" json:"process,omitempty"`
	Heap    *Heap `yaml:"heap" json:"heap,omitempty"`
	// Database samples the target's database: `database: true|false`
	// turns PostgreSQL's statistics (pg_stat_*) on or off (default on when
	// database.kind is postgres); `database: {sqlite: PATH}` reads the
	// target's SQLite file instead (see DatabaseProbe).
	Database *DatabaseProbe `yaml:"database" json:"database,omitempty"`
	// Profile samples CPU profiles (and heap profiles) of the target every
	// few windows; they are stored with the run in pprof format.
	Profile *Profile `yaml:"profile" json:"profile,omitempty"`
}

// Profile is the probes.profile setting: a CPU profile of Seconds every
// Every windows and a heap profile every HeapEvery windows, from a Go
// target's net/http/pprof (Pprof, the path of its index, e.g. /debug/pprof)
// or, with Inspector, from a Node.js target's inspector (its Profiler and
// sampling heap profiler) at probes.heap.inspector's address, or
// 127.0.0.1:9229 when that is not set. One of the two.
type Profile struct {
	Pprof     string `yaml:"pprof" json:"pprof,omitempty"`
	Inspector bool   `yaml:"inspector" json:"inspector,omitempty"`
	Seconds   int    `yaml:"seconds" json:"seconds,omitempty"`
	Every     int    `yaml:"every" json:"every,omitempty"`
	HeapEvery int    `yaml:"heap_every" json:"heap_every,omitempty"`
}

// DatabaseProbe is the probes.database setting.
type DatabaseProbe struct {
	// Postgres is `database: true` or `false`; nil in the SQLite form.
	Postgres *bool
	// SQLite is the path of the target's SQLite database file, read
	// read-only each window (table rows, file size). It is a template like
	// target.env, rendered when the environment is up: {{.EnvDir}},
	// {{.RunID}}, {{.Incarnation}}. {{.EnvDir}} is the environment's own
	// directory: the local provider's, or a docker target's environment
	// volume (mounted at /longhaul/env in the container, read from this
	// host by the probe), so a container's file must be under it: point the
	// target there too, e.g. env DEMO_SQLITE: "{{.EnvDir}}/demo.db" and
	// sqlite: "{{.EnvDir}}/demo.db".
	SQLite string
}

// PostgresOn reports whether the scenario turns the PostgreSQL probe on
// (true), off (false), or leaves it to the default (set is false).
func (p Probes) PostgresOn() (on, set bool) {
	if p.Database == nil || p.Database.Postgres == nil {
		return false, false
	}
	return *p.Database.Postgres, true
}

// SQLitePath is the probes.database.sqlite template, "" when unset.
func (p Probes) SQLitePath() string {
	if p.Database == nil {
		return ""
	}
	return p.Database.SQLite
}

// Heap configures the post-GC heap probe; any combination of sources may be set.
type Heap struct {
	// Metric reads a Prometheus-format gauge from the target.
	Metric *HeapMetric `yaml:"metric" json:"metric,omitempty"`
	// GCHook forces a GC through an HTTP POST that answers with the post-GC
	// heap, every Every windows (a checkpoint).
	GCHook *GCHook `yaml:"gc_hook" json:"gc_hook,omitempty"`
	// Inspector talks to a Node.js target's --inspect port.
	Inspector *Inspector `yaml:"inspector" json:"inspector,omitempty"`
}

// HeapMetric names a Prometheus gauge on the target (default path /metrics,
// default name go_gc_heap_live_bytes: the live heap after the last GC).
type HeapMetric struct {
	Path string `yaml:"path" json:"path,omitempty"`
	Name string `yaml:"name" json:"name,omitempty"`
}

// GCHook is an HTTP endpoint that forces a GC (default POST /debug/gc, every 5 windows).
type GCHook struct {
	Path  string `yaml:"path" json:"path,omitempty"`
	Every int    `yaml:"every" json:"every,omitempty"`
}

// Inspector is a Node.js inspector endpoint (default 127.0.0.1:9229, every window).
type Inspector struct {
	Host  string `yaml:"host" json:"host,omitempty"`
	Port  int    `yaml:"port" json:"port,omitempty"`
	Every int    `yaml:"every" json:"every,omitempty"`
}

// Duration is a time.Duration written in YAML as "30s", "1h30m".
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
