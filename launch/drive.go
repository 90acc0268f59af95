package launch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/longhaul-dev/longhaul/follow"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// DriveRequest is a drive as asked for: longhaul drive's flags.
type DriveRequest struct {
	File   string
	Target string // base URL; "" for the scenario's environment.target.url
	// Duration, Window, VUs, Rate and MaxVUs override the scenario's load
	// when Changed says the flag was given.
	Duration, Window time.Duration
	VUs, MaxVUs      int
	Rate             float64
	Format           string
	Changed          func(flag string) bool
	LookupEnv        func(string) (string, bool)
}

// PlanDrive checks r, its scenario and its target, and returns the drive
// for follow.FollowDrive (its Metrics and Where are the caller's to set).
func PlanDrive(ctx context.Context, r DriveRequest) (follow.Drive, error) {
	var d follow.Drive
	var err error
	if d.Format, err = report.ParseFormat(r.Format); err != nil {
		return d, fmt.Errorf("--format: %v", err)
	}
	if r.File == "" {
		return d, errors.New("--scenario FILE is required")
	}
	if d.Scenario, d.Source, _, err = load(r.File); err != nil {
		return d, err
	}
	if d.Load, err = applyLoadFlags(d.Scenario.Load, r); err != nil {
		return d, err
	}
	target := r.Target
	if target == "" {
		target = d.Scenario.Environment.Target.URL
	}
	if target == "" {
		return d, errors.New("--target URL is required (the scenario has no environment.target.url)")
	}
	if d.Target, err = url.Parse(target); err != nil {
		return d, fmt.Errorf("--target %q: %v", target, err)
	}
	if d.Plan, err = scenarios.Compile(d.Scenario, scenarios.CompileOptions{LookupEnv: r.LookupEnv}); err != nil {
		return d, err
	}
	return d, checkTarget(ctx, d.Target)
}

// applyLoadFlags returns l with the flags that were given applied, checking
// them against each other and the scenario.
func applyLoadFlags(l scenarios.Load, r DriveRequest) (scenarios.Load, error) {
	changed := r.Changed
	if changed("vus") && (changed("rate") || changed("max-vus")) {
		return l, errors.New("--vus (closed model) and --rate/--max-vus (open model) exclude each other; give one")
	}
	if changed("duration") {
		if r.Duration < 0 {
			return l, fmt.Errorf("--duration must be ≥ 0 (0: until interrupted), got %s", r.Duration)
		}
		l.Duration = scenarios.Duration(r.Duration)
	}
	if changed("window") {
		if r.Window <= 0 {
			return l, fmt.Errorf("--window must be > 0, got %s", r.Window)
		}
		l.Window = scenarios.Duration(r.Window)
	}
	if changed("vus") {
		if r.VUs < 1 {
			return l, fmt.Errorf("--vus must be ≥ 1, got %d", r.VUs)
		}
		l.VUs, l.Rate, l.MaxVUs, l.Stages = r.VUs, 0, 0, nil
	}
	if changed("rate") {
		if !(r.Rate > 0) || math.IsInf(r.Rate, 0) {
			return l, fmt.Errorf("--rate must be a positive number of iterations per second, got %v", r.Rate)
		}
		l.Rate, l.VUs, l.Stages = r.Rate, 0, nil
		if l.MaxVUs == 0 {
			l.MaxVUs = scenarios.DefaultMaxVUs
		}
	}
	if changed("max-vus") {
		if r.MaxVUs < 1 {
			return l, fmt.Errorf("--max-vus must be ≥ 1, got %d", r.MaxVUs)
		}
		if !l.Open() {
			return l, errors.New("--max-vus belongs to the open model: give --rate too (the scenario uses vus)")
		}
		l.MaxVUs = r.MaxVUs
	}
	return fitWindow(l, changed)
}

// fitWindow cuts a window longer than a shortened run to the run, and
// refuses a --duration shorter than the scenario's stages.
func fitWindow(l scenarios.Load, changed func(string) bool) (scenarios.Load, error) {
	d := l.Duration.D()
	if d > 0 && l.Window.D() > d {
		if changed("window") {
			return l, fmt.Errorf("--window %s is longer than the run (%s)", l.Window.D(), d)
		}
		l.Window = l.Duration // a shortened run is one window
	}
	var staged time.Duration
	for _, s := range l.Stages {
		staged += s.Duration.D()
	}
	if d > 0 && staged > d && changed("duration") {
		return l, fmt.Errorf("--duration %s is shorter than the scenario's stages (%s); give --vus or --rate to replace them", d, staged)
	}
	return l, nil
}
