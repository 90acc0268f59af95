// Package launch checks what a user asked for before anything is submitted:
// the command line's values and the scenario file of `longhaul run`,
// `longhaul compare` and a schedule's action, turned into what the workflow
// is given. Every error it returns is the user's to fix (the command exits
// 2); a scenario's own problems come back as scenarios.Errors, one per line.
package launch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/workflows"
)

// SoakRequest is a soak as asked for: the scenario file and the flags of
// longhaul run (or of a schedule's soak).
type SoakRequest struct {
	File string
	// Duration and Window override the scenario's when Changed says the
	// flag was given.
	Duration, Window time.Duration
	Provider         string   // "", local, docker, auto or url
	Protocol         string   // "", h1, h2 or h2c
	TargetEnv        []string // KEY=VALUE
	PushURL          string
	HostWait         time.Duration
	FailOn           string // "", warning or critical
	Format           string // text or json
	// Remote: the soak runs on other workers, which resolve ${env:NAME}
	// themselves; otherwise they must resolve here.
	Remote    bool
	Changed   func(flag string) bool
	LookupEnv func(string) (string, bool)
}

// Soak is a checked soak request.
type Soak struct {
	Scenario *scenarios.Scenario
	Source   []byte
	// Dir is the scenario file's absolute directory: the worker resolves the
	// environment's relative paths against it, not against its own cwd.
	Dir              string
	Duration, Window time.Duration
	TargetEnv        map[string]string
	Format           report.Format
	FailOn           analysis.Severity
	// Input is the soak workflow's input (RunID not yet set).
	Input workflows.SoakInput
}

// PlanSoak checks r and its scenario. A scenario with a target.url (and no
// other provider asked for) must answer now: an unreachable target is the
// user's to fix before a run is recorded.
func PlanSoak(ctx context.Context, r SoakRequest) (Soak, error) {
	var p Soak
	var err error
	if p.Format, err = report.ParseFormat(r.Format); err != nil {
		return p, fmt.Errorf("--format: %v", err)
	}
	if err := CheckPushURL(r.PushURL); err != nil {
		return p, err
	}
	if r.HostWait < time.Second {
		return p, fmt.Errorf("--host-wait must be at least 1s, got %s", r.HostWait)
	}
	if p.FailOn, err = thresholds.ParseFailOn(r.FailOn); err != nil {
		return p, err
	}
	switch r.Provider {
	case "", "local", "docker", "auto", "url":
	default:
		return p, fmt.Errorf("--provider %q: use local, docker, auto or url", r.Provider)
	}
	if p.Scenario, p.Source, p.Dir, err = load(r.File); err != nil {
		return p, err
	}
	if err := CheckProviderOverride(p.Scenario.Environment, r.Provider); err != nil {
		return p, fmt.Errorf("--provider %s: %s %v", r.Provider, r.File, err)
	}
	if p.Duration, p.Window, err = soakTimes(p.Scenario.Load, r); err != nil {
		return p, err
	}
	if r.Protocol != "" {
		if err := p.Scenario.Environment.CheckProtocol(r.Protocol); err != nil {
			return p, fmt.Errorf("--protocol %s: %s: %v", r.Protocol, r.File, err)
		}
	}
	if p.TargetEnv, err = KeyValues("--target-env", r.TargetEnv); err != nil {
		return p, err
	}
	if p.TargetEnv == nil {
		p.TargetEnv = map[string]string{}
	}
	// ${env:NAME} references must resolve here too when the worker is this
	// process; compile now so a missing one is a file:line message.
	if !r.Remote {
		if _, err := scenarios.Compile(p.Scenario, scenarios.CompileOptions{LookupEnv: r.LookupEnv}); err != nil {
			return p, err
		}
	}
	if t := p.Scenario.Environment.Target.URL; t != "" && (r.Provider == "" || r.Provider == "url") {
		if err := checkTargetURL(ctx, t); err != nil {
			return p, err
		}
	}
	p.Input = workflows.SoakInput{
		Name: p.Scenario.Name, Duration: p.Duration, Window: p.Window, Provider: r.Provider, TargetEnv: p.TargetEnv,
		PushURL: r.PushURL, HostWait: r.HostWait, Protocol: r.Protocol,
	}
	return p, nil
}

// load reads a scenario file: the scenario, its source and its absolute
// directory.
func load(file string) (*scenarios.Scenario, []byte, string, error) {
	s, err := scenarios.LoadFile(file)
	if err != nil {
		return nil, nil, "", err
	}
	source, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, "", fmt.Errorf("read %s: %v", file, err)
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %v", file, err)
	}
	return s, source, dir, nil
}

// soakTimes is the soak's duration and window: the scenario's, or the
// flags' where given.
func soakTimes(l scenarios.Load, r SoakRequest) (duration, win time.Duration, err error) {
	duration, win = l.Duration.D(), l.Window.D()
	if r.Changed("duration") {
		if r.Duration <= 0 {
			return 0, 0, fmt.Errorf("--duration must be > 0 for a soak, got %s", r.Duration)
		}
		duration = r.Duration
	}
	if r.Changed("window") {
		if r.Window <= 0 {
			return 0, 0, fmt.Errorf("--window must be > 0, got %s", r.Window)
		}
		win = r.Window
	}
	if duration <= 0 {
		return 0, 0, fmt.Errorf("%s: a soak needs a duration > 0 (load.duration or --duration)", r.File)
	}
	if win > duration {
		if r.Changed("window") {
			return 0, 0, fmt.Errorf("--window %s is longer than the run (%s)", win, duration)
		}
		win = duration
	}
	return duration, win, nil
}

// checkTargetURL checks that the scenario's running target answers.
func checkTargetURL(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("environment.target.url %q: %v", target, err)
	}
	return checkTarget(ctx, u)
}

// checkTarget checks that an already running target answers.
func checkTarget(ctx context.Context, u *url.URL) error {
	if err := driver.CheckTarget(ctx, u); err != nil {
		if errors.Is(err, driver.ErrUnreachable) {
			return fmt.Errorf("%w (is the target running?)", err)
		}
		return err
	}
	return nil
}

// KeyValues parses repeated KEY=VALUE flags (nil for none).
func KeyValues(flag string, kvs []string) (map[string]string, error) {
	var m map[string]string
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, kv)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m, nil
}

// CheckProviderOverride reports what env lacks for the provider --provider
// names (the scenario was validated for its own provider). A target.url is
// never provisioned, whatever the provider.
func CheckProviderOverride(env scenarios.Environment, provider string) error {
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

// CheckPushURL checks --push-url: empty, or an http(s) URL.
func CheckPushURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--push-url %q: want http://HOST:PORT/api/v1/import/prometheus", s)
	}
	return nil
}
