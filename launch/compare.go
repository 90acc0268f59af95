package launch

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// CompareRequest is a comparison as asked for: the scenario file and the
// flags of longhaul compare (or of a schedule's comparison).
type CompareRequest struct {
	File string
	// Each side: a git ref or an image, and environment variables.
	A, B           string
	AImage, BImage string
	AEnv, BEnv     []string
	Pairs          string // a number, or auto
	MaxPairs       int
	MaxDuration    time.Duration
	DecideOn       string
	Order          string
	// RoundDuration, Window and Warmup override the scenario's when
	// Changed says the flag was given.
	RoundDuration, Window, Warmup time.Duration
	Equivalence                   string // requests, or off
	AllowDiff, RerunDisturbed     bool
	DisturbedAbove                string // a share of the host, or off
	Provider                      string
	Format                        string
	Seed                          uint64 // when Changed("seed"); else random
	Remote                        bool   // see SoakRequest.Remote
	Changed                       func(flag string) bool
	LookupEnv                     func(string) (string, bool)
}

// Compare is a checked comparison: its record and its workflow's input
// (IDs not yet set).
type Compare struct {
	// Environment is the scenario's, for the host's pre-flight check.
	Environment scenarios.Environment
	Record      store.Comparison
	Input       workflows.CompareInput
	Format      report.Format
}

// compareOptions are a request's values that need no scenario.
type compareOptions struct {
	pairs       int
	auto        bool
	primary     []string
	equivalence int
	disturbed   float64
}

func parseCompareOptions(r CompareRequest) (compareOptions, error) {
	var o compareOptions
	var err error
	switch r.Provider {
	case "", "local", "docker", "auto":
	default:
		return o, fmt.Errorf("--provider %q: use local, docker or auto (a comparison provisions every round)", r.Provider)
	}
	switch r.Order {
	case workflows.OrderABBA, workflows.OrderAB, workflows.OrderRandom:
	default:
		return o, fmt.Errorf("--order %q: use abba, ab or random", r.Order)
	}
	o.auto = r.Pairs == "auto"
	if !o.auto {
		if o.pairs, err = strconv.Atoi(r.Pairs); err != nil || o.pairs < 1 || o.pairs > 100 {
			return o, fmt.Errorf("--pairs %q: auto, or a number of pairs from 1 to 100", r.Pairs)
		}
	}
	if o.auto && (r.MaxPairs < analysis.DefaultMinPairs || r.MaxPairs > 100) {
		return o, fmt.Errorf("--max-pairs must be %d to 100, got %d", analysis.DefaultMinPairs, r.MaxPairs)
	}
	if r.MaxDuration < 0 {
		return o, fmt.Errorf("--max-duration must be ≥ 0, got %s", r.MaxDuration)
	}
	if o.primary, err = analysis.ParseMetrics(r.DecideOn); err != nil {
		return o, fmt.Errorf("--decide-on: %v", err)
	}
	if r.Equivalence != "off" {
		if o.equivalence, err = strconv.Atoi(r.Equivalence); err != nil || o.equivalence < 1 || o.equivalence > 100000 {
			return o, fmt.Errorf("--equivalence %q: a number of requests (1 to 100000) or off", r.Equivalence)
		}
	}
	o.disturbed = -1
	if r.DisturbedAbove != "off" {
		if o.disturbed, err = strconv.ParseFloat(r.DisturbedAbove, 64); err != nil || !(o.disturbed > 0 && o.disturbed <= 1) {
			return o, fmt.Errorf("--disturbed-above %q: a share of the host above 0 and at most 1 (0.25 is a quarter), or off", r.DisturbedAbove)
		}
	}
	return o, nil
}

// randomSeed is a base seed for a comparison without --seed: random, and
// below 2^63 so that it fits the store's int64.
func randomSeed() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("random seed: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]) >> 1, nil
}

// PlanCompare checks r and its scenario.
func PlanCompare(r CompareRequest) (Compare, error) {
	var p Compare
	var err error
	if p.Format, err = report.ParseFormat(r.Format); err != nil {
		return p, fmt.Errorf("--format: %v", err)
	}
	if !r.Changed("seed") {
		if r.Seed, err = randomSeed(); err != nil {
			return p, err
		}
	}
	o, err := parseCompareOptions(r)
	if err != nil {
		return p, err
	}
	s, source, dir, err := load(r.File)
	if err != nil {
		return p, err
	}
	if s.Environment.Target.URL != "" {
		return p, fmt.Errorf("%s: environment.target.url is one running target; a comparison needs a provider to bring up each build fresh (target.image, target.build or target.command)", r.File)
	}
	if err := CheckProviderOverride(s.Environment, r.Provider); err != nil {
		return p, fmt.Errorf("--provider %s: %s %v", r.Provider, r.File, err)
	}
	provider := r.Provider
	if provider == "" {
		provider = s.Environment.Provider
	}
	sideA, err := compareSide("a", r.A, r.AImage, r.AEnv, s.Environment, provider)
	if err != nil {
		return p, err
	}
	sideB, err := compareSide("b", r.B, r.BImage, r.BEnv, s.Environment, provider)
	if err != nil {
		return p, err
	}
	if sideA.Ref != "" || sideB.Ref != "" {
		// Every round must run where the refs were built.
		if provider, err = RefProvider(s.Environment, provider); err != nil {
			return p, fmt.Errorf("%s: %v", r.File, err)
		}
	}
	round, win, warm, err := roundTimes(s.Load, r)
	if err != nil {
		return p, err
	}
	if !r.Remote {
		if _, err := scenarios.Compile(s, scenarios.CompileOptions{LookupEnv: r.LookupEnv}); err != nil {
			return p, err
		}
	}
	p.Environment = s.Environment
	p.Record = store.Comparison{
		Name: s.Name, Status: store.Pending, Scenario: string(source), ScenarioDir: dir, A: sideA, B: sideB,
		Order: r.Order, Pairs: o.pairs, Provider: provider, RoundDuration: round, Window: win, Warmup: warm,
		Seed: int64(r.Seed),
	}
	if o.auto {
		p.Record.MaxPairs, p.Record.MaxDuration = r.MaxPairs, r.MaxDuration
	}
	p.Input = workflows.CompareInput{
		Name: s.Name, Pairs: o.pairs, Order: r.Order, Seed: r.Seed, RoundDuration: round, Window: win, Warmup: warm,
		Provider: provider, Equivalence: o.equivalence, AllowDiff: r.AllowDiff, RerunDisturbed: r.RerunDisturbed,
		DisturbedAbove: o.disturbed, Verdict: analysis.PairedOptions{Primary: o.primary},
		AutoPairs: o.auto, MaxPairs: r.MaxPairs, MaxDuration: r.MaxDuration,
	}
	return p, nil
}

// roundTimes is a round's duration, window and warm-up: the scenario's,
// or the flags' where given.
func roundTimes(l scenarios.Load, r CompareRequest) (round, win, warm time.Duration, err error) {
	round, win, warm = l.Duration.D(), l.Window.D(), l.Warmup.D()
	if r.Changed("round-duration") {
		round = r.RoundDuration
	}
	if r.Changed("window") {
		win = r.Window
	}
	if r.Changed("warmup") {
		warm = r.Warmup
	}
	switch {
	case round <= 0:
		err = fmt.Errorf("--round-duration must be > 0, got %s", round)
	case win <= 0:
		err = fmt.Errorf("--window must be > 0, got %s", win)
	case win > round:
		err = fmt.Errorf("the window (%s) is longer than a round (%s)", win, round)
	case warm < 0 || warm >= round:
		err = fmt.Errorf("the warm-up (%s) must be at least 0 and shorter than a round (%s)", warm, round)
	}
	return round, win, warm, err
}

// compareSide is one side of the comparison from its flags.
func compareSide(name, ref, image string, env []string, spec scenarios.Environment, provider string) (store.Build, error) {
	var b store.Build
	if ref != "" && image != "" {
		return b, fmt.Errorf("--%s and --%s-image: give one or the other", name, name)
	}
	if ref != "" {
		if _, err := RefProvider(spec, provider); err != nil {
			return b, fmt.Errorf("--%s %s: %v", name, ref, err)
		}
		b.Ref = ref
	}
	if image != "" {
		if provider == "local" {
			return b, fmt.Errorf("--%s-image: the local provider runs no images", name)
		}
		b.Image = image
	}
	var err error
	b.Env, err = KeyValues("--"+name+"-env", env)
	return b, err
}

// RefProvider is the provider that builds a git ref of the scenario's
// target: docker from target.build.repo's Dockerfile, local with
// target.build.command in an exported tree of the commit. With provider
// auto (or the scenario's default) the scenario must leave one choice.
func RefProvider(spec scenarios.Environment, provider string) (string, error) {
	t := spec.Target
	docker := t.Build != nil && t.Build.Repo != ""
	local := t.Build != nil && t.Build.Command != "" && len(t.Command) > 0
	switch {
	case provider == "docker" && !docker:
		return "", errors.New("the docker provider builds a ref from target.build.repo, which the scenario lacks")
	case provider == "local" && !local:
		return "", errors.New("the local provider builds a ref with target.build.command, which the scenario lacks")
	case provider == "docker" || provider == "local":
		return provider, nil
	case !docker && !local:
		return "", errors.New("the scenario has no target.build (repo for docker, command for local) to build a ref with")
	case docker && local:
		return "", errors.New("the scenario builds both ways (target.build.repo and .command): choose with --provider docker or local")
	case docker:
		return "docker", nil
	case t.Image != "":
		return "", errors.New("with provider auto the target.image would run instead of the ref: use --provider local")
	}
	return "local", nil
}
