package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"text/template"

	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// LoadDriver is the real Driver: it compiles the scenario on this worker
// (resolving ${env:NAME} here, so secrets never travel) and runs package
// driver.
type LoadDriver struct {
	// Metrics receives the driver's live metrics (nil: none).
	Metrics *metrics.Set
	// LookupEnv resolves ${env:NAME}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

var (
	_ Driver   = LoadDriver{}
	_ Recorder = LoadDriver{}
)

// Record implements Recorder with driver.Record: the scenario compiled
// with req.Seed, one VU, req.Requests requests.
func (d LoadDriver) Record(ctx context.Context, req RecordRequest) ([]equivalence.Exchange, error) {
	plan, err := scenarios.Compile(req.Scenario, scenarios.CompileOptions{LookupEnv: d.LookupEnv, Seed: req.Seed})
	if err != nil {
		return nil, fmt.Errorf("%w: compile scenario: %v", ErrBadInput, err)
	}
	u, err := url.Parse(req.TargetURL)
	if err != nil {
		return nil, fmt.Errorf("%w: target URL %q: %v", ErrBadInput, req.TargetURL, err)
	}
	xs, err := driver.Record(ctx, driver.RecordOptions{Target: u, Plan: plan, Seed: req.Seed, Requests: req.Requests,
		Protocol: req.Scenario.Environment.Protocol, TLS: req.Scenario.Environment.DriverTLS(req.EnvDir)})
	if errors.Is(err, driver.ErrInvalid) {
		return xs, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return xs, err
}

// Drive implements Driver.
func (d LoadDriver) Drive(ctx context.Context, req DriveRequest, sink func(window.Window) error) error {
	plan, err := scenarios.Compile(req.Scenario, scenarios.CompileOptions{LookupEnv: d.LookupEnv, Seed: req.Seed})
	if err != nil {
		return fmt.Errorf("%w: compile scenario: %v", ErrBadInput, err)
	}
	u, err := url.Parse(req.TargetURL)
	if err != nil {
		return fmt.Errorf("%w: target URL %q: %v", ErrBadInput, req.TargetURL, err)
	}
	opts := driver.Options{
		Target: u, Plan: plan, Load: req.Scenario.Load,
		Protocol: req.Scenario.Environment.Protocol, TLS: req.Scenario.Environment.DriverTLS(req.EnvDir),
		RunID: req.RunID, Incarnation: req.Incarnation, FirstIndex: req.FirstIndex,
		Metrics: d.Metrics, Logger: req.Logger, Seed: req.Seed,
	}
	if req.Metrics != nil {
		opts.Metrics = req.Metrics
	}
	if req.Dial != nil {
		opts.Dialer = driver.DialerFunc(req.Dial)
	}
	_, err = driver.Run(ctx, opts, sink)
	if errors.Is(err, driver.ErrInvalid) {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return err
}

// ServerProbes is the real ProberFactory: package probes on the
// environment's target process or container and database, plus the host's
// foreign load (probes.HostLoad) in every window. After each
// window's readings it records the probes that are failing in
// window.Window.ProbeFailures, so the run report can say why a reading is
// missing; the sampler itself logs each failing probe once.
//
// The probes that talk to the target (heap metric, GC hook, inspector) take
// the driver's route: inside a container's network namespace on the netns
// route (Environment.NetNS), where the inspector is reached at its port in
// the container. Otherwise, for a container's Node.js inspector,
// Activities.Provision asks the provider to publish its port on 127.0.0.1
// (PublishedPorts) and the probe talks to the published port
// (Environment.Ports); if it was not published the inspector probe is left
// out and every window says so.
func ServerProbes(logger *slog.Logger) ProberFactory {
	if logger == nil {
		logger = slog.Default()
	}
	return func(ctx context.Context, env Environment, spec scenarios.Probes) (Prober, error) {
		var static []window.ProbeFailure
		route := openRoute(env, logger, "probes")
		var unpublished *window.ProbeFailure
		if !route.inNamespace() {
			spec, unpublished = inspectorOnHost(env, spec)
		}
		if unpublished != nil {
			static = append(static, *unpublished)
		}
		sqlitePath, err := sqliteProbePath(spec.SQLitePath(), env)
		if err != nil {
			spec.Database = nil // the PostgreSQL probe keeps its default
			static = append(static, window.ProbeFailure{Probe: probes.ProbeSQLite, Error: err.Error()})
		}
		for _, f := range static {
			logger.Warn("probe unavailable", "probe", f.Probe, "err", f.Error)
		}
		s, err := probes.New(probes.Config{
			Spec: spec, TargetURL: route.URL, Dial: route.Dial, PID: env.PID, ContainerID: env.ContainerID,
			TCPTables:   route.tcpTables(env.PID),
			DatabaseURL: env.DatabaseURL, DatabaseBackendURL: env.DatabaseBackendURL, SQLitePath: sqlitePath, Logger: logger,
		})
		if err != nil {
			route.Close()
			return nil, fmt.Errorf("start probes: %w", err)
		}
		var prof *probes.Profiler
		if spec.Profile != nil {
			cfg := probes.ProfilerConfig{Spec: *spec.Profile, TargetURL: route.URL, Dial: route.Dial, Logger: logger}
			if spec.Profile.Inspector {
				cfg.InspectorAddr, err = profileInspectorAddr(env, spec, !route.inNamespace())
			}
			if err == nil {
				prof, err = probes.NewProfiler(cfg)
			}
			if err != nil {
				logger.Warn("profiles unavailable", "probe", probes.ProbeProfile, "err", err)
				static = append(static, window.ProbeFailure{Probe: probes.ProbeProfile, Error: err.Error()})
			}
		}
		s.Start(ctx)
		p := &serverProber{s: s, prof: prof, route: route, static: static, host: probes.NewHostLoad(probes.HostLoadConfig{
			PIDs:       []int{env.PID, env.DatabasePID},
			Containers: []string{env.ContainerID, env.DatabaseContainerID},
		})}
		p.host.Sample() // prime: the first window's reading covers the first window
		if (spec.Process == nil || *spec.Process) && (env.PID > 0 || env.ContainerID != "") {
			p.threads = probes.NewThreadCPU(probes.ThreadCPUConfig{PID: env.PID, ContainerID: env.ContainerID,
				DatabasePID: env.DatabasePID, DatabaseContainerID: env.DatabaseContainerID})
			p.threads.Sample() // prime, like the host load
		}
		return p, nil
	}
}

// PublishedPorts lists the target ports the probes in spec reach from the
// worker's host: the Node.js inspector's, when spec reads the heap through
// it. Activities.Provision passes them to the provider (ProvisionRequest.Publish).
func PublishedPorts(spec scenarios.Probes) []int {
	if spec.Heap != nil && spec.Heap.Inspector != nil {
		return []int{inspectorPort(spec.Heap.Inspector)}
	}
	if spec.Profile != nil && spec.Profile.Inspector {
		return []int{probes.DefaultInspectorPort}
	}
	return nil
}

// profileInspectorAddr is where the profiler reaches a Node.js target's
// inspector (probes.profile.inspector): at probes.heap.inspector's address
// when the scenario sets one (as inspectorOnHost left it), else at the
// default 127.0.0.1:9229 — for a container reached from this host, at the
// port that one is published on.
func profileInspectorAddr(env Environment, spec scenarios.Probes, onHost bool) (string, error) {
	host, port := probes.DefaultInspectorHost, probes.DefaultInspectorPort
	switch {
	case spec.Heap != nil && spec.Heap.Inspector != nil:
		in := spec.Heap.Inspector
		host, port = cmp.Or(in.Host, host), cmp.Or(in.Port, port)
	case env.ContainerID != "" && onHost:
		hostPort, ok := env.Ports[port]
		if !ok {
			return "", fmt.Errorf("port %d of container %s is not published on this host (the provider ignored the request to publish it)", port, shortContainerID(env.ContainerID))
		}
		port = hostPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

func inspectorPort(in *scenarios.Inspector) int {
	if in.Port == 0 {
		return probes.DefaultInspectorPort
	}
	return in.Port
}

// inspectorOnHost points a container target's inspector probe at the port
// it is published on. When the environment did not publish it, the probe is
// dropped and the failure to record in every window is returned.
func inspectorOnHost(env Environment, spec scenarios.Probes) (scenarios.Probes, *window.ProbeFailure) {
	if env.ContainerID == "" || spec.Heap == nil || spec.Heap.Inspector == nil {
		return spec, nil
	}
	heap := *spec.Heap // the scenario's own values stay as they are
	in := *heap.Inspector
	port := inspectorPort(&in)
	hostPort, ok := env.Ports[port]
	if ok {
		in.Host, in.Port = "127.0.0.1", hostPort
		heap.Inspector = &in
		spec.Heap = &heap
		return spec, nil
	}
	heap.Inspector = nil
	spec.Heap = &heap
	if heap.Metric == nil && heap.GCHook == nil {
		spec.Heap = nil
	}
	return spec, &window.ProbeFailure{
		Probe: probes.ProbeInspector,
		Error: fmt.Sprintf("port %d of container %s is not published on this host (the provider ignored the request to publish it)", port, shortContainerID(env.ContainerID)),
	}
}

// renderProbePath renders probes.database.sqlite for env: {{.EnvDir}} (the
// local provider's environment directory), {{.RunID}}, {{.Incarnation}}. A
// container has no EnvDir: its path is one inside the container.
func renderProbePath(tmpl string, env Environment) (string, error) {
	if tmpl == "" || !strings.Contains(tmpl, "{{") {
		return tmpl, nil
	}
	data := map[string]any{"RunID": env.RunID, "Incarnation": env.Incarnation}
	if env.EnvDir != "" {
		data["EnvDir"] = env.EnvDir
	}
	t, err := template.New("probes.database.sqlite").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("probes.database.sqlite: %v", err)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		if env.EnvDir == "" && strings.Contains(tmpl, ".EnvDir") {
			return "", fmt.Errorf("probes.database.sqlite %q: the %s environment has no directory of its own ({{.EnvDir}})", tmpl, env.Provider)
		}
		return "", fmt.Errorf("probes.database.sqlite: %v", err)
	}
	return b.String(), nil
}

// sqliteProbePath renders probes.database.sqlite for env (renderProbePath)
// and checks that a container's file is where this host can read it: under
// its environment volume.
func sqliteProbePath(tmpl string, env Environment) (string, error) {
	path, err := renderProbePath(tmpl, env)
	if err != nil || path == "" || env.ContainerID == "" {
		return path, err
	}
	if env.EnvDir == "" || !strings.HasPrefix(path, strings.TrimSuffix(env.EnvDir, "/")+"/") {
		return "", fmt.Errorf("probes.database.sqlite %q: a container's SQLite file is read from this host in its environment volume: keep it under {{.EnvDir}} (mounted at /longhaul/env in the container) and point the target there", tmpl)
	}
	return path, nil
}

func shortContainerID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// serverProber is a probes.Sampler that also records failing probes in
// each window.
type serverProber struct {
	s    *probes.Sampler
	prof *probes.Profiler // nil: no profiles
	host *probes.HostLoad
	// threads reads where the target's, its database's and longhaul's CPU
	// went, thread by thread; nil for a target longhaul does not run.
	threads *probes.ThreadCPU
	static  []window.ProbeFailure // failures known at start that last the whole drive
	route   targetRoute
}

var (
	_ Prober       = (*serverProber)(nil)
	_ ProfileTaker = (*serverProber)(nil)
)

func (p *serverProber) Profiles(w window.Window) []probes.TakenProfile {
	if p.prof == nil {
		return nil
	}
	return p.prof.Window(w)
}

func (p *serverProber) FinishProfiles() []probes.TakenProfile {
	if p.prof == nil {
		return nil
	}
	return p.prof.Finish()
}

func (p *serverProber) Sample(ctx context.Context, w *window.Window) {
	p.s.Sample(ctx, w)
	if f, ok := p.host.Sample(); ok {
		w.Probes.HostForeignCPU = &f
	}
	if p.threads != nil {
		if r, ok, err := p.threads.Sample(); ok {
			r.Fill(&w.Probes)
		} else if err != nil {
			w.ProbeFailures = append(w.ProbeFailures, window.ProbeFailure{Probe: probes.ProbeThreads, Error: err.Error()})
		}
	}
	for _, pr := range p.s.Problems() {
		w.ProbeFailures = append(w.ProbeFailures, window.ProbeFailure{Probe: pr.Probe, Error: pr.Message})
	}
	w.ProbeFailures = append(w.ProbeFailures, p.static...)
}

func (p *serverProber) Close() error {
	if p.prof != nil {
		p.prof.Close()
	}
	err := p.s.Close()
	p.route.Close()
	return err
}

// Findings is the real Analyzer: analysis.Analyze with its default options
// and what the scenario says.
var Findings Analyzer = AnalyzerFunc(func(ws []window.Window, opts analysis.Options) []analysis.Finding {
	return analysis.Analyze(ws, opts).Findings
})
