// Package activities holds the Temporal activities of a soak: thin adapters
// that call the provisioner, the driver, the probes, the analyser and the
// store. Each dependency is a small interface declared here, so the
// activities are tested with fakes and wired to the real packages by the
// longhaul command.
//
// Recipe:
//
//  1. Fill an Activities with the dependencies (Store, Provisioner, Driver
//     are required; Probes and Analyzer are optional) and the host task
//     queue of this worker (HostQueueName(hostname)).
//  2. Register it on two workers: the general queue (GeneralQueue), where any
//     worker may run Begin, HostQueue, SetStatus and Analyze, and this
//     host's queue, where Provision, Drive and Teardown run next to the
//     processes or containers they manage (workflows.NewWorker does both).
//  3. The soak workflow calls the methods through a nil *Activities.
//
// Payloads carry ids and small summaries only: the scenario is read from the
// run record in the store, windows and histograms go straight to the store.
package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/netns"
	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/profiles"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// GeneralQueue is the task queue every longhaul worker polls.
const GeneralQueue = "longhaul"

// Error types of the application errors the activities return; the workflow
// branches on them. All but ErrTypeHandedOver are non-retryable.
const (
	// ErrTypeTargetFailed: the target stopped answering while it was driven
	// (its windows hold the errors). The soak fails with this reason.
	ErrTypeTargetFailed = "TargetFailed"
	// ErrTypeEnvironmentLost: a resumed drive found its environment gone
	// (it went down while no worker watched it). The workflow provisions a
	// new incarnation; the details are a LostDetails.
	ErrTypeEnvironmentLost = "EnvironmentLost"
	// ErrTypeHandedOver: the worker was stopping; the drive closed its
	// window in progress and is retried on the next worker (retryable).
	ErrTypeHandedOver = "HandedOver"
	// ErrTypeBadScenario: the scenario cannot be parsed or compiled on this
	// worker (for example an ${env:NAME} that is not set here).
	ErrTypeBadScenario = "BadScenario"
	// ErrTypeProvision: the environment could not be brought up.
	ErrTypeProvision = "ProvisionFailed"
)

// Defaults for the zero fields of Activities.
const (
	DefaultCheckTimeout = 2 * time.Second
	// DefaultCheckFailures is how many consecutive failed environment checks
	// (one after each window) make a drive give up with ErrTypeTargetFailed.
	// Two, so that one slow accept under load is not taken for a dead target.
	DefaultCheckFailures = 2
)

// HostQueueName is the task queue of the workers on host: environment-bound
// activities run there, where the target processes or containers are. A
// worker restarted on the same host polls the same queue and takes over.
func HostQueueName(host string) string {
	return hostQueuePrefix + sanitizeHost(host)
}

// hostQueuePrefix starts every host queue name; the rest is the host id.
const hostQueuePrefix = "longhaul-host-"

var unsafeQueueChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitizeHost(h string) string {
	h = unsafeQueueChars.ReplaceAllString(h, "-")
	if h == "" {
		return "localhost"
	}
	return h
}

// DefaultHostQueue is HostQueueName of this machine's hostname.
func DefaultHostQueue() string {
	h, _ := os.Hostname()
	return HostQueueName(h)
}

// Store is what the activities need from the result store (store.Store
// satisfies it).
type Store interface {
	PutRun(ctx context.Context, r store.Run) error
	GetRun(ctx context.Context, id string) (store.Run, error)
	SetStatus(ctx context.Context, id string, s store.Status, reason string, at time.Time) error
	PutWindow(ctx context.Context, w window.Window) error
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
	PutFindings(ctx context.Context, runID string, fs []analysis.Finding) error
	PutThresholds(ctx context.Context, runID string, rs []thresholds.Result) error
	// The notifications' part (ScheduledSoakWorkflow's activities).
	ListRuns(ctx context.Context, opts store.ListOptions) ([]store.Run, error)
	Counts(ctx context.Context, runIDs []string) (map[string]store.RunCounts, error)
	Findings(ctx context.Context, runID string) ([]analysis.Finding, error)
	Thresholds(ctx context.Context, runID string) ([]thresholds.Result, error)
	PutNotification(ctx context.Context, n store.Notification) error
	// The comparisons' part (CompareWorkflow's activities).
	store.Comparisons
	// The measurement slots of the worker hosts.
	store.Slots
	// The target's profiles, taken during drives.
	store.Profiles
	// What the target and its database printed, kept at teardown.
	store.Logs
}

// ProvisionRequest asks for one incarnation of a run's environment.
type ProvisionRequest struct {
	RunID       string
	Incarnation int
	Spec        scenarios.Environment
	// Provider overrides Spec.Provider when set.
	Provider string
	// ExtraEnv is added to (and overrides) Spec.Target.Env.
	ExtraEnv map[string]string
	// Publish lists more target ports the probes reach from this host (a
	// Node.js inspector's); a container provider publishes them on
	// 127.0.0.1 and reports where in Environment.Ports.
	Publish []int
	// Prebuilt is a directory holding the target already built (a
	// comparison side built once by a Builder); the local provider copies
	// it into the environment's directory instead of running build.command.
	Prebuilt string
}

// Environment is a provisioned environment as the workflow carries it: the
// few fields longhaul acts on, plus the provisioner's own description (Raw),
// handed back to it unchanged for Check and Teardown. It is small data.
type Environment struct {
	ID          string `json:"id"`
	RunID       string `json:"run_id"`
	Incarnation int    `json:"incarnation"`
	Provider    string `json:"provider"`
	Host        string `json:"host"`
	// TargetURL is the target's base URL on this host's loopback (a
	// container's published port).
	TargetURL string `json:"target_url"`
	// Route is how the driver and the probes reach the target: "netns"
	// (inside the target container's network namespace, at NetNS.URL),
	// "published-port" (at TargetURL), "" for a target whose TargetURL is
	// the process itself. A worker that cannot enter NetNS falls back to
	// TargetURL and says so in its log.
	Route       string        `json:"route,omitempty"`
	NetNS       *netns.Target `json:"netns,omitempty"`
	PID         int           `json:"pid,omitempty"`
	ContainerID string        `json:"container_id,omitempty"`
	DatabaseURL string        `json:"database_url,omitempty"`
	// DatabaseBackendURL is the PostgreSQL database a FerretDB the local
	// provider runs keeps its collections in (probes.Config's).
	DatabaseBackendURL string `json:"database_backend_url,omitempty"`
	// DatabasePID and DatabaseContainerID identify the database's process
	// or container, so host-load accounting counts it as measured work.
	DatabasePID         int    `json:"database_pid,omitempty"`
	DatabaseContainerID string `json:"database_container_id,omitempty"`
	// EnvDir is the environment's own directory on this host (the local
	// provider's; a container's environment volume), for {{.EnvDir}} in
	// probe paths.
	EnvDir string `json:"env_dir,omitempty"`
	// Ports maps each published target port (ProvisionRequest.Publish) to
	// its 127.0.0.1 port on this host; nil when the target's ports are this
	// host's (a local process).
	Ports map[int]int `json:"ports,omitempty"`
	// Raw is the provisioner's full description, as JSON.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Provisioner brings environments up and down (the provision package,
// through an adapter that converts its Environment to this one).
type Provisioner interface {
	// Provision brings up one incarnation. On error, the returned partial
	// Environment (if it has an ID) describes what Teardown must remove.
	Provision(ctx context.Context, req ProvisionRequest) (Environment, error)
	// Teardown removes everything in env; it is idempotent.
	Teardown(ctx context.Context, env Environment) error
	// Check reports whether env is still up (nil: reuse it).
	Check(ctx context.Context, env Environment) error
}

// DriveRequest is one call of the load driver.
type DriveRequest struct {
	RunID       string
	Incarnation int
	// FirstIndex is the index of the first window to emit.
	FirstIndex int
	TargetURL  string
	// EnvDir is the environment's own directory on this host, where a
	// provisioned https target's certificate is (scenarios.DriverTLS).
	EnvDir string
	// Dial, when set, opens the driver's connections (inside the target
	// container's network namespace, where TargetURL is its loopback).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Scenario is parsed, with the run's overrides applied to Load; its
	// ${env:...} references are still unresolved.
	Scenario *scenarios.Scenario
	Logger   *slog.Logger
	// Seed makes the request sequence reproducible (op picks, template
	// randomness); 0 picks a random one. Both rounds of a comparison's pair
	// share it.
	Seed uint64
	// Metrics, when set, receives the driver's live metrics instead of the
	// Driver's own set (a run whose metrics are pushed has a set of its own).
	Metrics *metrics.Set
}

// ErrBadInput is wrapped by a Driver's error when retrying cannot help (the
// scenario does not compile on this worker, the target URL is refused by the
// driver); the drive then fails with ErrTypeBadScenario instead of retrying.
var ErrBadInput = errors.New("bad drive input")

// Driver drives load and hands each closed window to sink, in index order.
// A sink error stops it and is returned; ctx cancellation stops it early.
type Driver interface {
	Drive(ctx context.Context, req DriveRequest, sink func(window.Window) error) error
}

// DriverFunc adapts a function to Driver.
type DriverFunc func(ctx context.Context, req DriveRequest, sink func(window.Window) error) error

// Drive calls f.
func (f DriverFunc) Drive(ctx context.Context, req DriveRequest, sink func(window.Window) error) error {
	return f(ctx, req, sink)
}

var _ Driver = DriverFunc(nil)

// Prober fills each window's server-side readings (probes.Sampler).
type Prober interface {
	// Sample fills w.Probes for the window that just closed; it never fails.
	Sample(ctx context.Context, w *window.Window)
	Close() error
}

// ProfileTaker is a Prober that also takes profiles of the target
// (probes.Profiler): Profiles is called after each window is committed and
// returns the profiles finished since; FinishProfiles when the drive ends,
// before Close.
type ProfileTaker interface {
	Profiles(w window.Window) []probes.TakenProfile
	FinishProfiles() []probes.TakenProfile
}

// ProberFactory starts the probes of one drive on env.
type ProberFactory func(ctx context.Context, env Environment, spec scenarios.Probes) (Prober, error)

// Analyzer turns a run's windows into findings. opts carries what the
// scenario says of them: its load.warmup (windows that start within it of
// an incarnation's start are not representative) and whether longhaul
// started the target.
type Analyzer interface {
	Analyze(ws []window.Window, opts analysis.Options) []analysis.Finding
}

// AnalyzerFunc adapts a function to Analyzer.
type AnalyzerFunc func(ws []window.Window, opts analysis.Options) []analysis.Finding

// Analyze calls f.
func (f AnalyzerFunc) Analyze(ws []window.Window, opts analysis.Options) []analysis.Finding {
	return f(ws, opts)
}

// NoFindings is the placeholder analyser: it finds nothing.
var NoFindings Analyzer = AnalyzerFunc(func([]window.Window, analysis.Options) []analysis.Finding { return nil })

// Activities are the soak's activities. Store, Provisioner and Driver are
// required; the other fields have defaults. An Activities is safe for
// concurrent use once filled; do not change its fields after registering it.
type Activities struct {
	Store       Store
	Provisioner Provisioner
	Driver      Driver
	// Probes starts the server-side probes of a drive; nil means none.
	Probes ProberFactory
	// Analyzer is NoFindings when nil.
	Analyzer Analyzer
	// Recorder sends the equivalence check's request sequences (nil: the
	// check is skipped).
	Recorder Recorder
	// Builder builds a comparison side's git ref once (nil: the provider
	// builds at each provision, as for a soak).
	Builder Builder
	// Refs resolves a scheduled run's git ref when it starts (nil: the
	// ref is built as it stands at provision and no commit is recorded).
	Refs Refs
	// Firings reads a schedule's firings, to record the ones it skipped
	// (nil: they are only counted, by Temporal).
	Firings Firings
	// HTTPClient posts notifications (nil: http.DefaultClient).
	HTTPClient *http.Client
	// HostTaskQueue is this worker's host task queue (DefaultHostQueue() when empty).
	HostTaskQueue string
	// Slots is how many soaks (or comparisons) this host drives at once
	// (DefaultSlots when 0).
	Slots int
	// WorkflowRunning reports whether a workflow still runs, for taking
	// back the slots of terminated workflows (nil: ask Temporal through the
	// worker's client).
	WorkflowRunning func(ctx context.Context, workflowID string) (bool, error)
	// Metrics receives worker metrics (nil: none).
	Metrics *metrics.Set
	// PushURL is where drives push their run's live metrics after each
	// window when the run names none (Overrides.PushURL); empty: no push.
	PushURL string
	// Logger gets a few lines per activity (nil: slog.Default()).
	Logger *slog.Logger
	// CheckTimeout bounds each environment check after a window.
	CheckTimeout time.Duration
	// CheckFailures consecutive failed checks end the drive (TargetFailed).
	CheckFailures int
	// StoreBehindLimit is how long a drive keeps closed windows in memory
	// while the store does not take them (DefaultStoreBehindLimit when 0).
	StoreBehindLimit time.Duration
	// Now is the clock (time.Now when nil); tests fix it.
	Now func() time.Time
}

// Register registers every activity method of a on r. (It is a function,
// not a method: every exported method of Activities is an activity.)
func Register(r worker.ActivityRegistry, a *Activities) {
	r.RegisterActivity(a)
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Activities) analyzer() Analyzer {
	if a.Analyzer != nil {
		return a.Analyzer
	}
	return NoFindings
}

func (a *Activities) hostQueue() string {
	if a.HostTaskQueue != "" {
		return a.HostTaskQueue
	}
	return DefaultHostQueue()
}

func (a *Activities) counter(name string) *metrics.Counter {
	if a.Metrics == nil {
		return nil
	}
	return a.Metrics.GetOrCreateCounter(name)
}

func inc(c *metrics.Counter) {
	if c != nil {
		c.Inc()
	}
}

// BeginInput identifies a soak's run record.
type BeginInput struct {
	RunID      string
	Name       string
	Scenario   string // YAML as given, ${env:...} unresolved
	WorkflowID string
}

// Begin makes sure the run record exists (a run started by `longhaul run`
// has one already; a workflow started another way gets one here). It is
// idempotent.
func (a *Activities) Begin(ctx context.Context, in BeginInput) error {
	r, err := a.Store.GetRun(ctx, in.RunID)
	switch {
	case err == nil:
		if r.WorkflowID == "" && in.WorkflowID != "" {
			r.WorkflowID = in.WorkflowID
			if err := a.Store.PutRun(ctx, r); err != nil {
				return fmt.Errorf("begin run %s: record workflow id: %w", in.RunID, err)
			}
		}
		return nil
	case errors.Is(err, store.ErrNotFound):
		if in.Scenario == "" {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("run %s has no record and no scenario was given", in.RunID), ErrTypeBadScenario, nil)
		}
		err := a.Store.PutRun(ctx, store.Run{
			ID: in.RunID, Name: in.Name, Kind: "soak", Status: store.Pending,
			Scenario: in.Scenario, WorkflowID: in.WorkflowID, CreatedAt: a.now(),
		})
		if err != nil {
			return fmt.Errorf("begin run %s: create record: %w", in.RunID, err)
		}
		return nil
	default:
		return fmt.Errorf("begin run %s: %w", in.RunID, err)
	}
}

// HostQueue returns the task queue of this worker's host. It runs on the
// general queue, so whichever worker picks it up becomes the host of the
// soak's environment (the worker-specific task queue pattern).
func (a *Activities) HostQueue(ctx context.Context) (string, error) {
	return a.hostQueue(), nil
}

// StatusInput is a run status change.
type StatusInput struct {
	RunID  string
	Status store.Status
	Reason string
}

// SetStatus records a status change of the run.
func (a *Activities) SetStatus(ctx context.Context, in StatusInput) error {
	if err := a.Store.SetStatus(ctx, in.RunID, in.Status, in.Reason, a.now()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// No retry brings it back (a store that is down is retried).
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("set run %s %s: %v", in.RunID, in.Status, err), ErrTypeBadScenario, err)
		}
		return fmt.Errorf("set run %s %s: %w", in.RunID, in.Status, err)
	}
	a.logger().Info("run status", "run", in.RunID, "status", in.Status, "reason", in.Reason)
	return nil
}

// ProvisionInput asks for one incarnation of the run's environment. The
// environment spec comes from the scenario in the run record.
type ProvisionInput struct {
	RunID       string
	Incarnation int
	Provider    string
	TargetEnv   map[string]string
	// Build is a comparison side's build (nil for a plain soak): it changes
	// the target's image or git ref (ApplyBuild).
	Build *store.Build
}

// Provision brings up one incarnation of the run's environment and records
// it in the run (target URL, environment, incarnation count).
func (a *Activities) Provision(ctx context.Context, in ProvisionInput) (Environment, error) {
	s, run, err := a.scenario(ctx, in.RunID, Overrides{})
	if err != nil {
		return Environment{}, err
	}
	spec, prebuilt := s.Environment, ""
	if in.Build != nil {
		spec, prebuilt = ApplyBuild(spec, *in.Build)
	}
	a.retried(ctx, "provision", in.RunID, in.Incarnation)
	stop := keepAlive(ctx, "provisioning")
	defer stop()
	env, err := a.Provisioner.Provision(ctx, ProvisionRequest{
		RunID: in.RunID, Incarnation: in.Incarnation, Spec: spec,
		Provider: in.Provider, ExtraEnv: in.TargetEnv, Publish: PublishedPorts(s.Probes), Prebuilt: prebuilt,
	})
	if err != nil {
		if env.ID != "" {
			if terr := a.Provisioner.Teardown(context.WithoutCancel(ctx), env); terr != nil {
				a.logger().Warn("teardown of a partial environment failed", "run", in.RunID, "env", env.ID, "err", terr)
			}
		}
		if ctx.Err() != nil {
			return Environment{}, ctx.Err()
		}
		return Environment{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("provision run %s incarnation %d: %v", in.RunID, in.Incarnation, err), ErrTypeProvision, nil)
	}
	if err := a.recordEnvironment(ctx, run, env); err != nil {
		// The environment is up but unrecorded: remove it, let the retry redo both.
		_ = a.Provisioner.Teardown(context.WithoutCancel(ctx), env)
		return Environment{}, fmt.Errorf("provision run %s: record environment: %w", in.RunID, err)
	}
	a.logger().Info("environment up", "run", in.RunID, "incarnation", in.Incarnation, "env", env.ID, "target", env.TargetURL, "route", env.Route)
	return env, nil
}

// recordEnvironment records env, an incarnation of run's environment just
// brought up, in the run: its target URL, its description, the count of
// incarnations.
func (a *Activities) recordEnvironment(ctx context.Context, run store.Run, env Environment) error {
	run.TargetURL = env.TargetURL
	if len(env.Raw) > 0 {
		run.Environment = env.Raw
	} else if b, err := json.Marshal(env); err == nil {
		run.Environment = b
	}
	run.Incarnations = max(run.Incarnations, env.Incarnation)
	return a.Store.PutRun(ctx, run)
}

// Teardown removes an environment. It is idempotent.
func (a *Activities) Teardown(ctx context.Context, env Environment) error {
	a.retried(ctx, "teardown", env.RunID, env.Incarnation)
	stop := keepAlive(ctx, "tearing down")
	defer stop()
	a.logger().Info("tearing down", "run", env.RunID, "incarnation", env.Incarnation, "env", env.ID)
	a.keepLogs(ctx, env)
	if err := a.Provisioner.Teardown(ctx, env); err != nil {
		return fmt.Errorf("tear down %s: %w", env.ID, err)
	}
	a.logger().Info("environment down", "run", env.RunID, "incarnation", env.Incarnation, "env", env.ID)
	return nil
}

// AnalyzeInput names the run to analyse.
type AnalyzeInput struct{ RunID string }

// AnalyzeResult is how many findings were stored, by severity, and how
// many of the scenario's thresholds failed.
type AnalyzeResult struct {
	Findings int
	Critical int
	Warnings int
	// ThresholdsFailed counts the thresholds that failed (Thresholds were judged).
	ThresholdsFailed int
	Thresholds       int
}

// Analyze reads the run's windows, runs the analyser and stores its
// findings, then judges the scenario's thresholds and stores the results.
func (a *Activities) Analyze(ctx context.Context, in AnalyzeInput) (AnalyzeResult, error) {
	s, _, err := a.scenario(ctx, in.RunID, Overrides{})
	if err != nil {
		return AnalyzeResult{}, err
	}
	ws, err := a.Store.Windows(ctx, in.RunID, store.AllWindows)
	if err != nil {
		return AnalyzeResult{}, fmt.Errorf("analyze run %s: read windows: %w", in.RunID, err)
	}
	fs := a.analyzer().Analyze(ws, analysis.Options{Warmup: s.Load.Warmup.D(), ExternalTarget: s.Environment.Target.URL != ""})
	a.explainFindings(ctx, in.RunID, fs)
	if err := a.Store.PutFindings(ctx, in.RunID, fs); err != nil {
		return AnalyzeResult{}, fmt.Errorf("analyze run %s: store findings: %w", in.RunID, err)
	}
	res := AnalyzeResult{Findings: len(fs)}
	for _, f := range fs {
		switch f.Severity {
		case analysis.Critical:
			res.Critical++
		case analysis.Warning:
			res.Warnings++
		}
	}
	rs, err := thresholds.Evaluate(s.Thresholds, ws, s.Load.Warmup.D())
	if err != nil {
		return res, fmt.Errorf("analyze run %s: %w", in.RunID, err)
	}
	if err := a.Store.PutThresholds(ctx, in.RunID, rs); err != nil {
		return res, fmt.Errorf("analyze run %s: store thresholds: %w", in.RunID, err)
	}
	res.Thresholds, res.ThresholdsFailed = len(rs), len(thresholds.Breaches(rs))
	return res, nil
}

// explainFindings adds what the run's profiles say to its leak and collapse
// findings (profiles.ExplainRun). Profiles are extra evidence: a failure to
// read them is logged and the findings stay as they are.
func (a *Activities) explainFindings(ctx context.Context, runID string, fs []analysis.Finding) {
	if err := profiles.ExplainRun(ctx, a.Store, runID, fs); err != nil {
		a.logger().Warn("the run's profiles could not be read into its findings", "run", runID, "err", err)
	}
}

// Overrides replace parts of the scenario's load for one run.
type Overrides struct {
	Duration time.Duration
	Window   time.Duration
	// PushURL is where the drive pushes the run's live metrics after each
	// window (VictoriaMetrics' /api/v1/import/prometheus); empty means
	// Activities.PushURL.
	PushURL string `json:",omitempty"`
	// Protocol replaces the scenario's environment.protocol when set.
	Protocol string `json:",omitempty"`
}

// scenario reads the run and parses its scenario, with overrides applied and
// the environment's relative paths resolved against the scenario file's
// directory recorded with the run (not this worker's working directory).
func (a *Activities) scenario(ctx context.Context, runID string, o Overrides) (*scenarios.Scenario, store.Run, error) {
	run, err := a.Store.GetRun(ctx, runID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, run, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s not found in the store", runID), ErrTypeBadScenario, err)
		}
		return nil, run, fmt.Errorf("read run %s: %w", runID, err)
	}
	s, err := scenarios.Parse([]byte(run.Scenario), run.Name+".yaml")
	if err != nil {
		return nil, run, temporal.NewNonRetryableApplicationError(
			"scenario of run "+runID+": "+strings.ReplaceAll(err.Error(), "\n", "; "), ErrTypeBadScenario, nil)
	}
	s.ResolvePaths(run.ScenarioDir)
	if o.Duration > 0 {
		s.Load.Duration = scenarios.Duration(o.Duration)
	}
	if o.Window > 0 {
		s.Load.Window = scenarios.Duration(o.Window)
	}
	if o.Protocol != "" {
		s.Environment.Protocol = o.Protocol
	}
	return s, run, nil
}
