package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/longhaul-dev/longhaul/internal/mysqlserver"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// ErrNoTarget is wrapped by Preflight's error for an environment that names
// no target at all: nothing to start and no URL to drive.
var ErrNoTarget = errors.New("no target")

// Preflight reports, before anything is created, why the provider kind
// (else spec.Provider, else "auto") cannot serve spec on this host: no
// target at all, no Docker engine, an image that is neither present nor
// pullable, no PostgreSQL server binaries, a target command or build
// directory that does not exist. It returns nil when Provision would get as
// far as starting things. Paths in spec must be absolute
// (scenarios.LoadFile and Scenario.ResolvePaths make them so).
//
// The error is one line that names the provider and the fix; for "auto"
// it says why each provider was ruled out. A target.url is never
// provisioned: Preflight accepts it (whether something answers there is
// driver.CheckTarget's question).
func Preflight(ctx context.Context, spec scenarios.Environment, kind string, opts Options) error {
	kind = firstNonEmpty(kind, spec.Provider, "auto")
	if err := checkKind(kind); err != nil {
		return err
	}
	t := spec.Target
	if t.URL != "" {
		return nil
	}
	docker := t.Image != "" || (t.Build != nil && t.Build.Repo != "")
	local := len(t.Command) > 0
	if !docker && !local {
		return fmt.Errorf("%w: add environment.target.url: http://127.0.0.1:PORT to drive an API that is already running, or target.command (provider local) or target.image (provider docker) to start one", ErrNoTarget)
	}
	switch kind {
	case "url":
		return fmt.Errorf("%w: provider url needs environment.target.url", ErrInvalidSpec)
	case "local":
		if !local {
			return fmt.Errorf("%w: the local provider needs target.command (the argv of the target process)", ErrInvalidSpec)
		}
		return preflightLocal(spec)
	case "docker":
		if !docker {
			return fmt.Errorf("%w: the docker provider needs target.image or target.build.repo", ErrInvalidSpec)
		}
		return preflightDocker(ctx, spec, opts)
	}
	// auto: docker when it can, else local; say why neither can.
	var derr error
	if docker {
		if derr = preflightDocker(ctx, spec, opts); derr == nil {
			return nil
		}
	}
	if !local {
		return fmt.Errorf("provider auto: docker cannot run it (%s) and there is no target.command for the local provider", oneLine(derr))
	}
	lerr := preflightLocal(spec)
	if lerr == nil {
		return nil
	}
	if derr == nil {
		return fmt.Errorf("provider auto: %w", lerr)
	}
	return fmt.Errorf("provider auto: neither provider can run it here — docker: %s; local: %s", oneLine(derr), oneLine(lerr))
}

// preflightDocker asks the engine and checks the images spec needs.
func preflightDocker(ctx context.Context, spec scenarios.Environment, opts Options) error {
	d, err := NewDocker(ctx, opts)
	if err != nil {
		return err
	}
	return d.Available(ctx, spec)
}

// preflightLocal checks what the local provider needs from this host.
func preflightLocal(spec scenarios.Environment) error {
	t := spec.Target
	switch kind := dbKind(spec.Database); {
	case kind == "postgres":
		if _, err := PostgresBinDir(); err != nil {
			return err
		}
	case scenarios.IsMySQL(kind):
		if _, err := mysqlserver.Find(); err != nil {
			return fmt.Errorf("%w: database.kind %s on the local provider: %v, or use provider: docker", ErrInvalidSpec, kind, err)
		}
	}
	if t.Dir != "" {
		if fi, err := os.Stat(t.Dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: target.dir %s is not a directory", ErrInvalidSpec, t.Dir)
		}
	}
	built := false
	if b := t.Build; b != nil && b.Command != "" {
		built = true
		if b.Dir != "" {
			if fi, err := os.Stat(b.Dir); err != nil || !fi.IsDir() {
				return fmt.Errorf("%w: target.build.dir %s is not a directory", ErrInvalidSpec, b.Dir)
			}
		}
	}
	argv0 := t.Command[0]
	switch {
	case strings.Contains(argv0, "{{") || strings.Contains(argv0, "$"):
		// Rendered at provision time ({{.EnvDir}}/app, built by build.command).
		return nil
	case strings.Contains(argv0, "/"):
		path := argv0
		if !filepath.IsAbs(path) && t.Dir != "" {
			path = filepath.Join(t.Dir, path)
		}
		if _, err := os.Stat(path); err != nil && !built {
			return fmt.Errorf("%w: target.command %s does not exist", ErrInvalidSpec, path)
		}
	default:
		if _, err := exec.LookPath(argv0); err != nil && !built {
			return fmt.Errorf("%w: target.command %q is not on PATH: install it or give its path", ErrInvalidSpec, argv0)
		}
	}
	return nil
}
