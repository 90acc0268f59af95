package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
	"github.com/longhaul-dev/longhaul/workflows"
)

// runFlags are the flags of longhaul run.
type runFlags struct {
	duration    time.Duration
	window      time.Duration
	temporal    string
	namespace   string
	detach      bool
	protocol    string
	format      string
	provider    string
	targetEnv   []string
	metricsAddr string
	pushURL     string
	uiAddr      string
	verbose     bool
	failOn      failOnFlag
	hostWait    time.Duration
	storeFlags
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a durable soak: provision, drive for the duration, analyse, tear down",
		Long: `Run submits a soak of the scenario in FILE as a Temporal workflow and follows
it: a progress bar, one line per window as it closes, then the run report
(status, summary, findings).

Without --temporal, longhaul starts an embedded Temporal server (an SQLite file
under the data directory) and a worker in this process. With --temporal
HOST:PORT it is a client of that cluster (or of 'longhaul dev'), whose workers
run the soak; results are read from --store (or $LONGHAUL_STORE), which must be
the store those workers write.

Ctrl-C cancels the run (its environment is torn down, its windows kept); a
second Ctrl-C stops following and leaves the run going. --detach only submits.

The scenario's thresholds are judged when the run ends (and those with
abort: true as each window closes, ending the run early when one fails); the
report lists each with its value, then the gate: passed, or failed because a
threshold failed or a finding was at least as severe as --fail-on.
Exit code: 0 completed and the gate passed, 1 failed or cancelled, 2 bad
input, 3 completed but the gate failed.`,
		Example: `  longhaul run scenarios/hello.yaml --duration 2m --window 10s
  longhaul run soak.yaml --temporal 127.0.0.1:7233 --detach
  longhaul run soak.yaml --fail-on warning    # exit 3 on a warning or critical finding`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runSoak(cmd.Context(), args[0], f, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&f.duration, "duration", 0, "how long to drive load (default: the scenario's load.duration)")
	fs.DurationVar(&f.window, "window", 0, "length of one result window (default: the scenario's load.window)")
	fs.StringVar(&f.temporal, "temporal", "", "Temporal frontend HOST:PORT (default: an embedded server in this process)")
	fs.StringVar(&f.namespace, "namespace", "default", "Temporal namespace")
	fs.BoolVar(&f.detach, "detach", false, "submit the run and return without following it")
	fs.StringVar(&f.format, "format", "text", "output: text, or json (NDJSON windows, then one report object)")
	fs.StringVar(&f.provider, "provider", "", "environment provider: local, docker, auto or url (default: the scenario's)")
	fs.StringArrayVar(&f.targetEnv, "target-env", nil, "KEY=VALUE added to the target's environment (repeatable)")
	fs.StringVar(&f.protocol, "protocol", "", "how the driver speaks HTTP: h1, h2 (over TLS) or h2c (default: the scenario's environment.protocol)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve worker and run metrics at http://ADDR/metrics")
	pushURLFlag(fs, &f.pushURL, "push the run's live metrics after every window to URL")
	fs.DurationVar(&f.hostWait, "host-wait", workflows.DefaultHostWait, "how long the run waits for its host's worker to come back before it is provisioned again on another host")
	uiAddrFlag(fs, &f.uiAddr, "127.0.0.1:0", "while following the run, serve the browser UI on HOST:PORT (default a free port)")
	verboseFlag(fs, &f.verbose)
	f.failOn.register(fs)
	f.storeFlags.register(fs)
	return cmd
}

// soakPlan is a validated longhaul run invocation.
type soakPlan struct {
	// lines renders longhaul's warnings on the terminal; follow keeps its
	// progress bar intact around them.
	lines    *report.WarningLines
	scenario *scenarios.Scenario
	source   []byte
	// dir is the scenario file's absolute directory: the worker resolves the
	// environment's relative paths against it, not against its own cwd.
	dir       string
	duration  time.Duration
	window    time.Duration
	targetEnv map[string]string
	format    report.Format
	failOn    analysis.Severity
	// detachNote is printed when the user detaches (a second Ctrl-C).
	detachNote string
	// logPath is the Temporal log file, named when the run fails.
	logPath string
}

// planSoak validates the command line and the scenario.
func (a *app) planSoak(ctx context.Context, file string, f runFlags, changed func(string) bool) (soakPlan, error) {
	var p soakPlan
	var err error
	if p.format, err = report.ParseFormat(f.format); err != nil {
		return p, badInputf("--format: %v", err)
	}
	if err := checkPushURL(f.pushURL); err != nil {
		return p, err
	}
	if f.hostWait < time.Second {
		return p, badInputf("--host-wait must be at least 1s, got %s", f.hostWait)
	}
	if p.failOn, err = f.failOn.severity(); err != nil {
		return p, err
	}
	switch f.provider {
	case "", "local", "docker", "auto", "url":
	default:
		return p, badInputf("--provider %q: use local, docker, auto or url", f.provider)
	}
	if p.scenario, err = scenarios.LoadFile(file); err != nil {
		return p, a.scenarioErrors(err)
	}
	if p.source, err = os.ReadFile(file); err != nil {
		return p, badInputf("read %s: %v", file, err)
	}
	if p.dir, err = filepath.Abs(filepath.Dir(file)); err != nil {
		return p, badInputf("%s: %v", file, err)
	}
	if err := checkProviderOverride(p.scenario.Environment, f.provider); err != nil {
		return p, badInputf("--provider %s: %s %v", f.provider, file, err)
	}
	p.duration, p.window = p.scenario.Load.Duration.D(), p.scenario.Load.Window.D()
	if changed("duration") {
		if f.duration <= 0 {
			return p, badInputf("--duration must be > 0 for a soak, got %s", f.duration)
		}
		p.duration = f.duration
	}
	if changed("window") {
		if f.window <= 0 {
			return p, badInputf("--window must be > 0, got %s", f.window)
		}
		p.window = f.window
	}
	if f.protocol != "" {
		if err := p.scenario.Environment.CheckProtocol(f.protocol); err != nil {
			return p, badInputf("--protocol %s: %s: %v", f.protocol, file, err)
		}
	}
	if p.duration <= 0 {
		return p, badInputf("%s: a soak needs a duration > 0 (load.duration or --duration)", file)
	}
	if p.window > p.duration {
		if changed("window") {
			return p, badInputf("--window %s is longer than the run (%s)", p.window, p.duration)
		}
		p.window = p.duration
	}
	p.targetEnv = map[string]string{}
	for _, kv := range f.targetEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return p, badInputf("--target-env %q: want KEY=VALUE", kv)
		}
		p.targetEnv[k] = v
	}
	// ${env:NAME} references must resolve here too when the worker is this
	// process; compile now so a missing one is a file:line message.
	if f.temporal == "" {
		if _, err := scenarios.Compile(p.scenario, scenarios.CompileOptions{LookupEnv: a.lookupEnv}); err != nil {
			return p, a.scenarioErrors(err)
		}
	}
	if t := p.scenario.Environment.Target.URL; t != "" && (f.provider == "" || f.provider == "url") {
		u, err := url.Parse(t)
		if err != nil {
			return p, badInputf("environment.target.url %q: %v", t, err)
		}
		if err := driver.CheckTarget(ctx, u); err != nil {
			if errors.Is(err, driver.ErrUnreachable) {
				return p, badInputf("%v (is the target running?)", err)
			}
			return p, badInput{err}
		}
	}
	return p, nil
}

// checkProviderOverride reports what env lacks for the provider --provider
// names (the scenario was validated for its own provider). A target.url is
// never provisioned, whatever the provider.
func checkProviderOverride(env scenarios.Environment, provider string) error {
	t := env.Target
	docker := t.Image != "" || (t.Build != nil && t.Build.Repo != "")
	local := len(t.Command) > 0
	switch {
	case provider == "" || t.URL != "":
		return nil
	case provider == "url":
		return errors.New("has no environment.target.url")
	case provider == "docker" && !docker:
		return errors.New("has no target.image or target.build.repo for the docker provider")
	case provider == "local" && !local:
		return errors.New("has no target.command for the local provider")
	case provider == "auto" && !docker && !local:
		return errors.New("has no target.image, target.build.repo or target.command to run")
	}
	return nil
}

// runSoak is longhaul run.
func (a *app) runSoak(ctx context.Context, file string, f runFlags, changed func(string) bool) error {
	p, err := a.planSoak(ctx, file, f, changed)
	if err != nil {
		return err
	}
	svc, err := a.openServices(ctx, f.storeFlags, f.metricsAddr)
	if err != nil {
		return err
	}
	defer svc.Close()
	st := svc.store
	lg, err := a.openLogs(svc.dataDir, f.verbose)
	if err != nil {
		return err
	}
	defer lg.Close()
	p.logPath = lg.path
	p.lines = lg.lines

	c, hostPort, stop, err := a.connect(ctx, svc, f.temporal, f.namespace, lg)
	if err != nil {
		return err
	}
	defer stop()

	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("new run id: %w", err)
	}
	run := store.Run{
		ID: id.String(), Name: p.scenario.Name, Kind: "soak", Status: store.Pending,
		Scenario: string(p.source), ScenarioDir: p.dir, WorkflowID: "longhaul-soak-" + id.String(),
		TargetURL: p.scenario.Environment.Target.URL, FailOn: string(p.failOn), CreatedAt: time.Now(),
	}
	if err := st.PutRun(ctx, run); err != nil {
		return fmt.Errorf("record the run in %s: %w", svc.where, err)
	}
	in := workflows.SoakInput{
		RunID: run.ID, Name: run.Name, Duration: p.duration, Window: p.window,
		Provider: f.provider, TargetEnv: p.targetEnv, PushURL: f.pushURL, HostWait: f.hostWait,
		Protocol: f.protocol,
	}
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: run.WorkflowID, TaskQueue: activities.GeneralQueue}, workflows.WorkflowName, in)
	if err != nil {
		_ = st.SetStatus(context.WithoutCancel(ctx), run.ID, store.Failed, "not submitted: "+err.Error(), time.Now())
		return fmt.Errorf("submit the soak to Temporal at %s: %w", hostPort, err)
	}
	if f.detach {
		fmt.Fprintf(a.stdout, "run %s submitted (workflow %s)\n", run.ID, run.WorkflowID)
		if f.temporal == "" {
			fmt.Fprintf(a.stderr, "longhaul: the embedded server stops with this process; the run continues when 'longhaul dev --data %s' starts\n", svc.dataDir)
		}
		return nil
	}
	p.detachNote = fmt.Sprintf("run %s goes on (longhaul report %s)", run.ID, run.ID)
	if f.temporal == "" {
		p.detachNote = fmt.Sprintf("run %s is paused with the embedded server; it continues when 'longhaul dev --data %s' starts", run.ID, svc.dataDir)
	}
	fmt.Fprintf(a.stderr, "run %s: %s, %s in %s windows (store %s)\n", run.ID, run.Name, p.duration, p.window, svc.where)
	ui, err := a.startUI(st, f.uiAddr, false)
	if err != nil {
		return err
	}
	if ui != nil {
		defer ui.Close()
		fmt.Fprintf(a.stderr, "live charts: %s\n", ui.RunURL(run.ID))
	}
	return a.follow(ctx, c, st, wr, run.ID, p)
}

// connect returns a Temporal client: of the cluster at temporal, or —
// when temporal is empty — of an embedded server on the data directory,
// with a worker in this process. stop closes everything it started.
func (a *app) connect(ctx context.Context, svc *services, temporal, namespace string, lg *logs) (c client.Client, hostPort string, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	hostPort = temporal
	if hostPort == "" {
		srv, err := a.startDevServer(ctx, svc.dataDir, 0, lg.temporal)
		if err != nil {
			return nil, "", stop, err
		}
		stops = append(stops, func() { _ = srv.Stop() })
		hostPort = srv.Address()
		namespace = srv.Namespace()
	}
	if c, err = a.dialTemporal(ctx, hostPort, namespace, lg.temporal); err != nil {
		return nil, hostPort, stop, err
	}
	stops = append(stops, c.Close)
	if temporal == "" {
		w, err := a.newSoakWorker(ctx, c, svc.store, svc.dataDir, soakWorkerConfig{metrics: svc.metrics}, lg.own)
		if err != nil {
			return nil, hostPort, stop, err
		}
		if err := w.Start(); err != nil {
			return nil, hostPort, stop, err
		}
		stops = append(stops, w.Stop)
	}
	return c, hostPort, stop, nil
}

// follow prints the run's windows as they reach the store until the
// workflow ends, then the run report. The first interrupt cancels the
// workflow; the second stops following.
func (a *app) follow(ctx context.Context, c client.Client, st store.Store, wr client.WorkflowRun, runID string, p soakPlan) error {
	done := make(chan error, 1)
	go func() { done <- wr.Get(context.WithoutCancel(ctx), nil) }()

	var progress *report.Progress
	if p.format == report.Text {
		progress = report.NewProgress(a.stderr, time.Now(), p.duration)
	}
	if p.lines != nil {
		p.lines.SetProgress(progress)
		defer p.lines.SetProgress(nil)
	}
	out, err := report.NewWindowWriter(p.format, a.stdout, report.TextOptions{Progress: progress})
	if err != nil {
		return badInput{err}
	}
	var totals report.Totals
	var failures []window.Window // probe failures only, for the report's probe problems
	next := 0
	printNew := func() error {
		ws, err := st.Windows(ctx, runID, store.WindowQuery{Incarnation: -1, FromIndex: next})
		if err != nil {
			return fmt.Errorf("read windows of run %s: %w", runID, err)
		}
		for _, w := range ws {
			if err := out.Window(w); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			_ = totals.Add(w)
			failures = append(failures, window.Window{Index: w.Index, Gap: w.Gap, ProbeFailures: w.ProbeFailures})
			next = max(next, w.Index+1)
		}
		return nil
	}

	return followUntilDone(ctx, a, c, done, follower{
		what: "run", wr: wr, poll: min(max(p.window/4, 100*time.Millisecond), time.Second),
		progress: progress, detachNote: p.detachNote, tick: printNew,
		status: func() (store.Status, string) {
			if next > 0 {
				return store.Running, "" // windows are coming: it got its slot long ago
			}
			r, err := st.GetRun(ctx, runID)
			if err != nil {
				return "", ""
			}
			return r.Status, r.Reason
		},
		finish: func() error {
			return a.finishReport(ctx, st, runID, p, out, totals.Summary(), report.ProbeProblems(failures))
		},
	})
}

// finishReport prints the end of a followed run — the summary, probe
// problems, findings, thresholds and gate — and maps the outcome to the exit
// code.
func (a *app) finishReport(ctx context.Context, st store.Store, runID string, p soakPlan, out report.WindowWriter, sum window.Summary, problems []report.ProbeProblem) error {
	run, err := st.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("read run %s: %w", runID, err)
	}
	fs, err := st.Findings(ctx, runID)
	if err != nil {
		return fmt.Errorf("read findings of run %s: %w", runID, err)
	}
	v, err := readVerdict(ctx, st, run, fs)
	if err != nil {
		return err
	}
	if p.format == report.JSON {
		if err := writeReportObject(a.stdout, run, sum, fs, problems, v); err != nil {
			return err
		}
	} else {
		// A run that ended before its first window (a missing image, a
		// failed build) has no summary to show: its reason is the report.
		if sum.Windows > 0 || sum.Gaps > 0 {
			if err := out.Summary(sum); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			fmt.Fprintln(a.stdout)
		}
		status := string(run.Status)
		if run.Reason != "" {
			status += ": " + run.Reason
		}
		fmt.Fprintf(a.stdout, "run %s %s\n", run.ID, status)
		report.WriteProbeProblems(a.stdout, problems)
		report.WriteFindings(a.stdout, fs)
		if v.gated() {
			fmt.Fprintln(a.stdout)
			report.WriteThresholds(a.stdout, v.thresholds)
			report.WriteGate(a.stdout, v.gate)
		}
	}
	if run.Status == store.Failed && p.logPath != "" {
		fmt.Fprintf(a.stderr, "longhaul: Temporal's own log lines are in %s\n", p.logPath)
	}
	return v.err()
}

// reportObject is the last NDJSON line of longhaul run --format json.
type reportObject struct {
	Type    string          `json:"type"`
	RunID   string          `json:"run_id"`
	Status  store.Status    `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	Windows int             `json:"windows"`
	Gaps    int             `json:"gaps,omitempty"`
	Summary json.RawMessage `json:"summary"`
	// ProbeProblems: the probes that failed during the run (report.ProbeProblems).
	ProbeProblems []report.ProbeProblem `json:"probe_problems,omitempty"`
	Findings      []analysis.Finding    `json:"findings"`
	// Thresholds (never null) and Gate ("passed" or "failed"), with the
	// reasons a gate failed.
	Thresholds  []thresholds.Result `json:"thresholds"`
	Gate        string              `json:"gate"`
	FailOn      string              `json:"fail_on,omitempty"`
	GateReasons []string            `json:"gate_reasons,omitempty"`
}

func writeReportObject(out io.Writer, run store.Run, sum window.Summary, fs []analysis.Finding, problems []report.ProbeProblem, v runVerdict) error {
	// The summary has the shape of the drive's summary line, without its "type".
	b, err := json.Marshal(report.SummaryJSON(sum))
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	delete(m, "type")
	if b, err = json.Marshal(m); err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	if fs == nil {
		fs = []analysis.Finding{}
	}
	g := report.GateJSON(v.gate, v.thresholds)
	line, err := json.Marshal(reportObject{
		Type: "report", RunID: run.ID, Status: run.Status, Reason: run.Reason,
		Windows: sum.Windows, Gaps: sum.Gaps, Summary: b, ProbeProblems: problems, Findings: fs,
		Thresholds: g.Thresholds, Gate: g.Gate, FailOn: g.FailOn, GateReasons: g.Reasons,
	})
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if _, err := fmt.Fprintf(out, "%s\n", line); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
