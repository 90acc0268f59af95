package provision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Sweeper removes the leftovers of runs that are no longer running.
type Sweeper interface {
	// Sweep removes what belongs to runs for which isRunning returns false,
	// and describes each thing removed.
	Sweep(ctx context.Context, isRunning func(runID string) bool) (removed []string, err error)
}

// Kinds of provider accepted by New and in Request/Spec.Provider.
var Kinds = []string{"auto", "docker", "local", "url"}

// New returns a Provisioner that picks the provider per request:
// Request.Provider, else Spec.Provider, else kind, else "auto". A spec with
// only target.url is never provisioned. Teardown and Check dispatch on
// Environment.Provider. The docker engine is asked once, lazily, and the
// answer cached. The result also implements Sweeper (local and, when an
// engine answers, docker leftovers).
func New(kind string, opts Options) (Provisioner, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	if err := checkRoute(opts.Route); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	return &chooser{kind: kind, opts: opts, local: NewLocal(opts)}, nil
}

func checkKind(kind string) error {
	switch kind {
	case "", "auto", "docker", "local", "url":
		return nil
	}
	return fmt.Errorf("%w: provider %q: want one of %s", ErrInvalidSpec, kind, strings.Join(Kinds, ", "))
}

type chooser struct {
	kind  string
	opts  Options
	local *Local

	mu        sync.Mutex
	docker    *Docker
	dockerErr error
	asked     bool
}

var (
	_ Provisioner = (*chooser)(nil)
	_ Sweeper     = (*chooser)(nil)
)

// dockerProvider returns the docker provider, creating it on first use; a
// failure (no engine) is cached too.
func (c *chooser) dockerProvider(ctx context.Context) (*Docker, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.asked {
		c.docker, c.dockerErr = NewDocker(ctx, c.opts)
		c.asked = true
	}
	return c.docker, c.dockerErr
}

func (c *chooser) Provision(ctx context.Context, req Request) (Environment, error) {
	kind := firstNonEmpty(req.Provider, req.Spec.Provider, c.kind, "auto")
	if err := checkKind(kind); err != nil {
		return Environment{}, err
	}
	t := req.Spec.Target
	if t.URL != "" {
		if t.Image != "" || t.Build != nil || len(t.Command) > 0 {
			return Environment{}, fmt.Errorf("%w: target.url is an already running target; it excludes target.image, target.build and target.command", ErrInvalidSpec)
		}
		kind = "url"
	}
	switch kind {
	case "url":
		return provisionURL(req, c.opts)
	case "local":
		return c.local.Provision(ctx, req)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return Environment{}, err
		}
		return d.Provision(ctx, dockerRequest(req))
	}
	// auto
	d, err := c.dockerProvider(ctx)
	if err == nil {
		err = d.Available(ctx, req.Spec)
	}
	if err == nil {
		env, perr := d.Provision(ctx, dockerRequest(req))
		env.Notes = append([]string{"provider auto chose docker"}, env.Notes...)
		return env, perr
	}
	if len(t.Command) == 0 {
		return Environment{}, fmt.Errorf("provider auto: docker is not usable and the spec has no target.command for the local provider: %w", err)
	}
	c.opts.Logger.Info("provider auto chose local", "reason", oneLine(err))
	env, perr := c.local.Provision(ctx, req)
	env.Notes = append([]string{"provider auto chose local: " + oneLine(err)}, env.Notes...)
	return env, perr
}

func (c *chooser) Teardown(ctx context.Context, env Environment) error {
	switch env.Provider {
	case "", "url":
		return nil
	case "local":
		return c.local.Teardown(ctx, env)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return fmt.Errorf("tear down %s: %w", env.ID, err)
		}
		return d.Teardown(ctx, env)
	}
	return fmt.Errorf("tear down %s: unknown provider %q", env.ID, env.Provider)
}

func (c *chooser) Check(ctx context.Context, env Environment) error {
	switch env.Provider {
	case "url":
		return checkURL(ctx, env)
	case "local":
		return c.local.Check(ctx, env)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return fmt.Errorf("check %s: %w", env.ID, err)
		}
		return d.Check(ctx, env)
	}
	return fmt.Errorf("check %s: unknown provider %q", env.ID, env.Provider)
}

// dockerRequest is req as the docker provider must see it. A spec written
// for both providers (provider auto, or local run with --provider docker)
// has target.command for the local provider: the argv of a process on this
// host, which would be wrong as the container's command. Only a spec whose
// own provider is docker makes target.command the container's command.
func dockerRequest(req Request) Request {
	if req.Spec.Provider != "docker" {
		req.Spec.Target.Command = nil
	}
	return req
}

// Sweep sweeps local state and, when an engine answers, docker resources.
func (c *chooser) Sweep(ctx context.Context, isRunning func(string) bool) ([]string, error) {
	removed, err := c.local.Sweep(ctx, isRunning)
	d, derr := c.dockerProvider(ctx)
	if derr != nil {
		c.opts.Logger.Debug("sweep: docker skipped", "reason", oneLine(derr))
		return removed, err
	}
	more, err2 := d.Sweep(ctx, isRunning)
	return append(removed, more...), errors.Join(err, err2)
}

// Sweep removes the leftovers of runs for which isRunning returns false: the
// local provider's environments under opts.DataDir and, when a Docker engine
// answers, every labelled container, network and volume.
func Sweep(ctx context.Context, opts Options, isRunning func(runID string) bool) ([]string, error) {
	p, _ := New("auto", opts)
	return p.(Sweeper).Sweep(ctx, isRunning)
}

// provisionURL describes an already running target: nothing is created.
func provisionURL(req Request, opts Options) (Environment, error) {
	u, err := url.Parse(req.Spec.Target.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Environment{}, fmt.Errorf("%w: target.url %q: want http://host:port", ErrInvalidSpec, req.Spec.Target.URL)
	}
	return Environment{
		ID:          EnvironmentID(req.RunID, req.Incarnation),
		RunID:       req.RunID,
		Incarnation: req.Incarnation,
		Provider:    "url",
		Host:        opts.Hostname,
		CreatedAt:   time.Now().UTC(),
		TargetURL:   strings.TrimRight(req.Spec.Target.URL, "/"),
	}, nil
}

func checkURL(ctx context.Context, env Environment) error {
	if err := dialURL(ctx, env.TargetURL); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrGone, env.TargetURL, err)
	}
	return nil
}

// dialURL opens (and closes) a TCP connection to rawURL's host and port.
func dialURL(ctx context.Context, rawURL string) error {
	var d net.Dialer
	return dialURLWith(ctx, rawURL, d.DialContext)
}

// dialURLWith is dialURL through dial.
func dialURLWith(ctx context.Context, rawURL string, dial func(ctx context.Context, network, address string) (net.Conn, error)) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", host)
	if err != nil {
		return err
	}
	return conn.Close()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
