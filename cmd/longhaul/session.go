package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/charts"
	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/launch"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/soakworker"
)

// session is what run and compare hold while they submit and follow: the
// host (store, data directory, logs) and a Temporal client — of --temporal,
// or of an embedded server on the data directory with a worker here.
type session struct {
	*soakworker.Host
	c        client.Client
	hostPort string
	follow.Session
	stop func()
}

// start is how run and compare begin: the host's pre-flight check, the
// session, and the ID of the record they are about to store. The check
// (provision.Preflight, as scenario validate's) refuses, before anything is
// recorded or started, an environment this host cannot serve: no Docker
// engine or image, no database server binaries, a target command that does
// not exist. Only when this process is the worker: other workers answer for
// their own hosts.
func (a *app) start(ctx context.Context, f submitFlags, env scenarios.Environment, provider string) (*session, string, error) {
	if f.temporal == "" {
		if err := provision.Preflight(ctx, env, provider, provision.Options{Logger: discard, Route: a.getenv(dockerRouteEnv)}); err != nil {
			return nil, "", badInput{err}
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", fmt.Errorf("new id: %w", err)
	}
	s, err := a.openSession(ctx, f)
	return s, id.String(), err
}

func (a *app) openSession(ctx context.Context, f submitFlags) (*session, error) {
	svc, err := a.openHost(ctx, f.storeFlags, f.metricsAddr, f.verbose)
	if err != nil {
		return nil, err
	}
	c, hostPort, stop, err := a.connect(ctx, svc, f.temporal, f.namespace)
	if err != nil {
		svc.Close()
		return nil, err
	}
	return &session{Host: svc, c: c, hostPort: hostPort, Session: follow.Session{Embedded: f.temporal == "", DataDir: svc.DataDir}, stop: stop}, nil
}

func (s *session) Close() {
	s.stop()
	s.Host.Close()
}

// connect returns a Temporal client: of the cluster at temporal, or —
// when temporal is empty — of an embedded server on the data directory,
// with a worker in this process. stop closes everything it started.
func (a *app) connect(ctx context.Context, svc *soakworker.Host, temporal, namespace string) (c client.Client, hostPort string, stop func(), err error) {
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
		srv, err := a.startDevServer(ctx, svc.DataDir, 0, svc.Logs.Temporal)
		if err != nil {
			return nil, "", stop, err
		}
		stops = append(stops, func() { _ = srv.Stop() })
		hostPort = srv.Address()
		namespace = srv.Namespace()
	}
	if c, err = a.dialTemporal(ctx, hostPort, namespace, svc.Logs.Temporal); err != nil {
		return nil, hostPort, stop, err
	}
	stops = append(stops, c.Close)
	if temporal == "" {
		w, err := a.startWorker(ctx, c, svc, soakworker.Config{})
		if err != nil {
			return nil, hostPort, stop, err
		}
		stops = append(stops, w.Stop)
	}
	return c, hostPort, stop, nil
}

// Submit starts a workflow on the general queue (launch.Submitter).
func (s *session) Submit(ctx context.Context, workflowID, workflow string, in any) (follow.Workflow, error) {
	wr, err := s.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflowID, TaskQueue: activities.GeneralQueue}, workflow, in)
	if err != nil {
		return nil, err
	}
	return temporalWorkflow{s.c, wr}, nil
}

// launcher submits and follows in s what run or compare asked for.
func (a *app) launcher(s *session, f submitFlags) launch.Launcher {
	return launch.Launcher{
		Store: s.Store, Where: s.Where, Submitter: s, Temporal: s.hostPort, Terminal: a.terminal(), Session: s.Session,
		Detach: f.detach, Logs: s.Logs.Path, Lines: s.Logs.Lines, Format: f.format, Data: f.data, StoreDSN: f.store,
		LiveUI: func(page func(*charts.Running) string) (func(), error) {
			ui, err := a.startUI(s.Store, f.uiAddr, false, nil)
			if err != nil || ui == nil {
				return func() {}, err
			}
			fmt.Fprintf(a.stderr, "live charts: %s\n", page(ui))
			return func() { ui.Close() }, nil
		},
	}
}

// oneFile is the positional argument of run and compare: one scenario file.
func oneFile(command string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return badInputf("%s takes one scenario file: longhaul %s FILE (scenarios/demo.yaml soaks the demo API; longhaul %s --help)", command, command, command)
		}
		return nil
	}
}

// dockerRouteEnv chooses how a worker reaches docker targets
// (provision.Options.Route): unset or "auto" for inside the container's
// network namespace where possible, "published-port" for docker's published
// port (the route before issue 9; bench/docker compares the two), "netns"
// to fail where the namespace route is impossible.
const dockerRouteEnv = "LONGHAUL_DOCKER_ROUTE"

// hostQueueEnv, when set, is the whole name of the worker's host queue
// (soakworker.Config.HostQueue), overriding --host-id's.
const hostQueueEnv = "LONGHAUL_HOST_QUEUE"

// logger is the commands' slog logger: warnings and errors on stderr.
func (a *app) logger() *slog.Logger {
	level := slog.LevelWarn
	if a.getenv("LONGHAUL_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// startDevServer starts the embedded Temporal server on DATA/temporal.
func (a *app) startDevServer(ctx context.Context, dataDir string, port int, log *slog.Logger) (*devserver.Server, error) {
	s, err := devserver.Start(ctx, devserver.Options{
		DataDir: filepath.Join(dataDir, datadir.TemporalDir), Port: port, Logger: log,
	})
	if err != nil {
		return nil, badInput{err}
	}
	return s, nil
}

// dialTemporal connects to a Temporal frontend; an unreachable one is bad
// input (the address is the user's).
func (a *app) dialTemporal(ctx context.Context, hostPort, namespace string, log *slog.Logger) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort: hostPort, Namespace: namespace, Logger: sdklog.NewStructuredLogger(log),
	})
	if err != nil {
		return nil, badInputf("cannot reach Temporal at %s (namespace %s): %v", hostPort, namespace, err)
	}
	return c, nil
}

// discard is a logger that drops everything.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// temporalWorkflow presents a submitted Temporal workflow to package follow,
// which follows `run` and `compare` on the terminal.
type temporalWorkflow struct {
	c  client.Client
	wr client.WorkflowRun
}

func (w temporalWorkflow) Wait(ctx context.Context) error { return w.wr.Get(ctx, nil) }

func (w temporalWorkflow) Cancel(ctx context.Context) error {
	return w.c.CancelWorkflow(ctx, w.wr.GetID(), w.wr.GetRunID())
}

// terminal is the app's terminal as package follow writes to it.
func (a *app) terminal() follow.Terminal {
	return follow.Terminal{Stdout: a.stdout, Stderr: a.stderr, Interrupts: a.interrupts}
}
