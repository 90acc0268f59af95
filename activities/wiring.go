package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/driver"
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

var _ Driver = LoadDriver{}

// Drive implements Driver.
func (d LoadDriver) Drive(ctx context.Context, req DriveRequest, sink func(window.Window) error) error {
	plan, err := scenarios.Compile(req.Scenario, scenarios.CompileOptions{LookupEnv: d.LookupEnv})
	if err != nil {
		return fmt.Errorf("%w: compile scenario: %v", ErrBadInput, err)
	}
	u, err := url.Parse(req.TargetURL)
	if err != nil {
		return fmt.Errorf("%w: target URL %q: %v", ErrBadInput, req.TargetURL, err)
	}
	_, err = driver.Run(ctx, driver.Options{
		Target: u, Plan: plan, Load: req.Scenario.Load,
		RunID: req.RunID, Incarnation: req.Incarnation, FirstIndex: req.FirstIndex,
		Metrics: d.Metrics, Logger: req.Logger,
	}, sink)
	if errors.Is(err, driver.ErrInvalid) {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return err
}

// ServerProbes is the real ProberFactory: package probes on the
// environment's target process or container and database.
func ServerProbes(logger *slog.Logger) ProberFactory {
	return func(ctx context.Context, env Environment, spec scenarios.Probes) (Prober, error) {
		s, err := probes.New(probes.Config{
			Spec: spec, TargetURL: env.TargetURL, PID: env.PID, ContainerID: env.ContainerID,
			DatabaseURL: env.DatabaseURL, Logger: logger,
		})
		if err != nil {
			return nil, fmt.Errorf("start probes: %w", err)
		}
		s.Start(ctx)
		return s, nil
	}
}

// Findings is the real Analyzer: analysis.Analyze with its default options
// and the scenario's warm-up.
var Findings Analyzer = AnalyzerFunc(func(ws []window.Window, warmup time.Duration) []analysis.Finding {
	return analysis.Analyze(ws, analysis.Options{Warmup: warmup}).Findings
})
