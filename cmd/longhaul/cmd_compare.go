package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// defaultDecideOn is --decide-on's default: analysis.DefaultPrimary.
const defaultDecideOn = "cpu,p50,p99,throughput"

// exitWorse: the comparison completed, --fail-on-worse was given and a
// metric is worse.
const exitWorse = 3

// compareFlags are the flags of longhaul compare.
type compareFlags struct {
	a, b           string
	aImage, bImage string
	aEnv, bEnv     []string
	pairs          string
	maxPairs       int
	maxDuration    time.Duration
	decideOn       string
	order          string
	roundDuration  time.Duration
	window         time.Duration
	warmup         time.Duration
	equivalence    string
	allowDiff      bool
	rerunDisturbed bool
	disturbedAbove string
	provider       string
	failOnWorse    bool
	format         string
	detach         bool
	seed           uint64
	temporal       string
	namespace      string
	metricsAddr    string
	uiAddr         string
	verbose        bool
	storeFlags
}

func (a *app) compareCmd() *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare FILE",
		Short: "Compare two builds in interleaved rounds on one host: is B better or worse than A?",
		Long: `Compare runs the scenario in FILE against two builds, A (the baseline) and B,
in pairs of rounds interleaved on one host (order abba by default: A B, B A,
A B ...), each round a soak with a fresh environment, both rounds of a pair
with the same seed. Before the timed rounds it checks that both builds
answer the same seeded requests alike (--equivalence, default 200
requests). Then it decides every metric from the pairs' ratios B/A:
better, worse, no_difference or inconclusive, with the reason.

A side is a git ref (--a/--b: the docker provider builds target.build's
Dockerfile at that ref; the local provider builds a worktree of that commit
with target.build.command; both cache the build by commit), an image
(--a-image/--b-image), or the scenario's own build; --a-env/--b-env add
target environment variables to one side. With no side flags both sides
are the same build: an A-vs-A comparison, which measures this machine's
noise floor.

Exit code: 0 completed (whatever the verdicts), 1 failed or cancelled, 2 bad
input, 3 completed with --fail-on-worse and a metric worse.`,
		Example: `  longhaul compare scenarios/demo.yaml                                  # A vs A: the noise floor
  longhaul compare scenarios/demo.yaml --b-env DEMO_CPU_BURN_US=20 --pairs 3 --round-duration 30s
  longhaul compare api.yaml --a main --b my-branch --fail-on-worse --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.compare(cmd.Context(), args[0], f, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.a, "a", "", "side A is this git ref of target.build")
	fs.StringVar(&f.b, "b", "", "side B is this git ref of target.build")
	fs.StringVar(&f.aImage, "a-image", "", "side A is this image (docker provider)")
	fs.StringVar(&f.bImage, "b-image", "", "side B is this image (docker provider)")
	fs.StringArrayVar(&f.aEnv, "a-env", nil, "KEY=VALUE added to side A's target environment (repeatable)")
	fs.StringArrayVar(&f.bEnv, "b-env", nil, "KEY=VALUE added to side B's target environment (repeatable)")
	fs.StringVar(&f.pairs, "pairs", "auto", "pairs of rounds, or auto: add pairs until the --decide-on metrics are decided (docs/statistics-sequential.md)")
	fs.IntVar(&f.maxPairs, "max-pairs", analysis.DefaultMaxPairs, "with --pairs auto: the most pairs")
	fs.DurationVar(&f.maxDuration, "max-duration", 0, "with --pairs auto: start no pair that would end later than this after the start (0: no limit)")
	fs.StringVar(&f.decideOn, "decide-on", defaultDecideOn, "the primary metrics: their intervals share the joint coverage and --pairs auto stops when they are decided")
	fs.StringVar(&f.order, "order", workflows.OrderABBA, "order of each pair's rounds: abba, ab or random")
	fs.DurationVar(&f.roundDuration, "round-duration", 0, "length of one round (default: the scenario's load.duration)")
	fs.DurationVar(&f.window, "window", 0, "length of one window (default: the scenario's load.window)")
	fs.DurationVar(&f.warmup, "warmup", 0, "start of each round left out of its values (default: the scenario's load.warmup)")
	fs.StringVar(&f.equivalence, "equivalence", strconv.Itoa(workflows.DefaultEquivalenceRequests), "requests of the response-equivalence check, or off")
	fs.BoolVar(&f.allowDiff, "allow-diff", false, "compare the builds even when their responses differ")
	fs.BoolVar(&f.rerunDisturbed, "rerun-disturbed", false, "rerun pairs with a round disturbed by foreign load on the host (at most --pairs reruns)")
	fs.StringVar(&f.disturbedAbove, "disturbed-above", strconv.FormatFloat(workflows.DefaultDisturbedAbove, 'f', -1, 64),
		"a round whose foreign load (CPU busy with neither the target, its database nor longhaul) is above this share of the host is disturbed, or off")
	fs.StringVar(&f.provider, "provider", "", "environment provider: local, docker or auto (default: the scenario's)")
	fs.BoolVar(&f.failOnWorse, "fail-on-worse", false, "exit 3 when the comparison completes and a metric is worse")
	fs.StringVar(&f.format, "format", "text", "output: text, or json (NDJSON rounds, then one comparison object)")
	fs.BoolVar(&f.detach, "detach", false, "submit the comparison and return without following it")
	fs.Uint64Var(&f.seed, "seed", 0, "base seed of the request sequences (default: random)")
	fs.StringVar(&f.temporal, "temporal", "", "Temporal frontend HOST:PORT (default: an embedded server in this process)")
	fs.StringVar(&f.namespace, "namespace", "default", "Temporal namespace")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve worker and run metrics at http://ADDR/metrics")
	uiAddrFlag(fs, &f.uiAddr, "127.0.0.1:0", "while following the comparison, serve the browser UI on HOST:PORT (default a free port)")
	verboseFlag(fs, &f.verbose)
	f.storeFlags.register(fs)
	return cmd
}

// comparePlan is a validated longhaul compare invocation.
type comparePlan struct {
	rec    store.Comparison
	in     workflows.CompareInput
	format report.Format
}

// planCompare validates the command line and the scenario and returns the
// comparison's record and workflow input (IDs not yet set).
func (a *app) planCompare(file string, f compareFlags, changed func(string) bool) (comparePlan, error) {
	var p comparePlan
	var err error
	if p.format, err = report.ParseFormat(f.format); err != nil {
		return p, badInputf("--format: %v", err)
	}
	switch f.provider {
	case "", "local", "docker", "auto":
	default:
		return p, badInputf("--provider %q: use local, docker or auto (a comparison provisions every round)", f.provider)
	}
	switch f.order {
	case workflows.OrderABBA, workflows.OrderAB, workflows.OrderRandom:
	default:
		return p, badInputf("--order %q: use abba, ab or random", f.order)
	}
	pairs, auto := 0, f.pairs == "auto"
	if !auto {
		if pairs, err = strconv.Atoi(f.pairs); err != nil || pairs < 1 || pairs > 100 {
			return p, badInputf("--pairs %q: auto, or a number of pairs from 1 to 100", f.pairs)
		}
	}
	if auto && (f.maxPairs < analysis.DefaultMinPairs || f.maxPairs > 100) {
		return p, badInputf("--max-pairs must be %d to 100, got %d", analysis.DefaultMinPairs, f.maxPairs)
	}
	if f.maxDuration < 0 {
		return p, badInputf("--max-duration must be ≥ 0, got %s", f.maxDuration)
	}
	primary, err := analysis.ParseMetrics(f.decideOn)
	if err != nil {
		return p, badInputf("--decide-on: %v", err)
	}
	eq := 0
	if f.equivalence != "off" {
		if eq, err = strconv.Atoi(f.equivalence); err != nil || eq < 1 || eq > 100000 {
			return p, badInputf("--equivalence %q: a number of requests (1 to 100000) or off", f.equivalence)
		}
	}
	disturbed := -1.0
	if f.disturbedAbove != "off" {
		if disturbed, err = strconv.ParseFloat(f.disturbedAbove, 64); err != nil || !(disturbed > 0 && disturbed <= 1) {
			return p, badInputf("--disturbed-above %q: a share of the host above 0 and at most 1 (0.25 is a quarter), or off", f.disturbedAbove)
		}
	}
	s, err := scenarios.LoadFile(file)
	if err != nil {
		return p, a.scenarioErrors(err)
	}
	source, err := os.ReadFile(file)
	if err != nil {
		return p, badInputf("read %s: %v", file, err)
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return p, badInputf("%s: %v", file, err)
	}
	t := s.Environment.Target
	if t.URL != "" {
		return p, badInputf("%s: environment.target.url is one running target; a comparison needs a provider to bring up each build fresh (target.image, target.build or target.command)", file)
	}
	if err := checkProviderOverride(s.Environment, f.provider); err != nil {
		return p, badInputf("--provider %s: %s %v", f.provider, file, err)
	}
	provider := f.provider
	if provider == "" {
		provider = s.Environment.Provider
	}
	sideA, err := compareSide("a", f.a, f.aImage, f.aEnv, s.Environment, provider)
	if err != nil {
		return p, err
	}
	sideB, err := compareSide("b", f.b, f.bImage, f.bEnv, s.Environment, provider)
	if err != nil {
		return p, err
	}
	if sideA.Ref != "" || sideB.Ref != "" {
		// Every round must run where the refs were built.
		if provider, err = refProvider(s.Environment, provider); err != nil {
			return p, badInputf("%s: %v", file, err)
		}
	}
	round, win, warm := s.Load.Duration.D(), s.Load.Window.D(), s.Load.Warmup.D()
	if changed("round-duration") {
		round = f.roundDuration
	}
	if changed("window") {
		win = f.window
	}
	if changed("warmup") {
		warm = f.warmup
	}
	switch {
	case round <= 0:
		return p, badInputf("--round-duration must be > 0, got %s", round)
	case win <= 0:
		return p, badInputf("--window must be > 0, got %s", win)
	case win > round:
		return p, badInputf("the window (%s) is longer than a round (%s)", win, round)
	case warm < 0 || warm >= round:
		return p, badInputf("the warm-up (%s) must be at least 0 and shorter than a round (%s)", warm, round)
	}
	if f.temporal == "" {
		if _, err := scenarios.Compile(s, scenarios.CompileOptions{LookupEnv: a.lookupEnv}); err != nil {
			return p, a.scenarioErrors(err)
		}
	}
	seed := f.seed
	if !changed("seed") {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return p, fmt.Errorf("random seed: %w", err)
		}
		seed = binary.LittleEndian.Uint64(b[:]) >> 1 // fits the store's int64
	}
	p.rec = store.Comparison{
		Name: s.Name, Status: store.Pending, Scenario: string(source), ScenarioDir: dir, A: sideA, B: sideB,
		Order: f.order, Pairs: pairs, Provider: provider, RoundDuration: round, Window: win, Warmup: warm,
		Seed: int64(seed),
	}
	if auto {
		p.rec.MaxPairs, p.rec.MaxDuration = f.maxPairs, f.maxDuration
	}
	p.in = workflows.CompareInput{
		Name: s.Name, Pairs: pairs, Order: f.order, Seed: seed, RoundDuration: round, Window: win, Warmup: warm,
		Provider: provider, Equivalence: eq, AllowDiff: f.allowDiff, RerunDisturbed: f.rerunDisturbed,
		DisturbedAbove: disturbed, Verdict: analysis.PairedOptions{Primary: primary},
		AutoPairs: auto, MaxPairs: f.maxPairs, MaxDuration: f.maxDuration,
	}
	return p, nil
}

// compareSide is one side of the comparison from its flags.
func compareSide(name, ref, image string, env []string, spec scenarios.Environment, provider string) (store.Build, error) {
	var b store.Build
	if ref != "" && image != "" {
		return b, badInputf("--%s and --%s-image: give one or the other", name, name)
	}
	if ref != "" {
		if _, err := refProvider(spec, provider); err != nil {
			return b, badInputf("--%s %s: %v", name, ref, err)
		}
		b.Ref = ref
	}
	if image != "" {
		if provider == "local" {
			return b, badInputf("--%s-image: the local provider runs no images", name)
		}
		b.Image = image
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return b, badInputf("--%s-env %q: want KEY=VALUE", name, kv)
		}
		if b.Env == nil {
			b.Env = map[string]string{}
		}
		b.Env[k] = v
	}
	return b, nil
}

// refProvider is the provider that builds a git ref of the scenario's
// target: docker from target.build.repo's Dockerfile, local with
// target.build.command in an exported tree of the commit. With provider
// auto (or the scenario's default) the scenario must leave one choice.
func refProvider(spec scenarios.Environment, provider string) (string, error) {
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

// compare is longhaul compare.
func (a *app) compare(ctx context.Context, file string, f compareFlags, changed func(string) bool) error {
	p, err := a.planCompare(file, f, changed)
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
	c, hostPort, stop, err := a.connect(ctx, svc, f.temporal, f.namespace, lg)
	if err != nil {
		return err
	}
	defer stop()

	id, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("new comparison id: %w", err)
	}
	p.rec.ID, p.rec.WorkflowID, p.rec.CreatedAt = id.String(), "longhaul-compare-"+id.String(), time.Now()
	p.in.ComparisonID = p.rec.ID
	if err := st.PutComparison(ctx, p.rec); err != nil {
		return fmt.Errorf("record the comparison in %s: %w", svc.where, err)
	}
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: p.rec.WorkflowID, TaskQueue: activities.GeneralQueue}, workflows.CompareWorkflowName, p.in)
	if err != nil {
		_ = st.SetComparisonStatus(context.WithoutCancel(ctx), p.rec.ID, store.Failed, "not submitted: "+err.Error(), time.Now())
		return fmt.Errorf("submit the comparison to Temporal at %s: %w", hostPort, err)
	}
	if f.detach {
		fmt.Fprintf(a.stdout, "comparison %s submitted (workflow %s)\n", p.rec.ID, p.rec.WorkflowID)
		if f.temporal == "" {
			fmt.Fprintf(a.stderr, "longhaul: the embedded server stops with this process; the comparison continues when 'longhaul dev --data %s' starts\n", svc.dataDir)
		}
		return nil
	}
	kind := "A vs B"
	if p.rec.SameBuild() {
		kind = "A vs A (the noise floor)"
	}
	fmt.Fprintf(a.stderr, "comparison %s: %s, %s, %s of %s rounds in %s windows, order %s (store %s)\n",
		p.rec.ID, p.rec.Name, kind, report.PairsLine(p.rec), p.rec.RoundDuration, p.rec.Window, p.rec.Order, svc.where)
	ui, err := a.startUI(st, f.uiAddr, false)
	if err != nil {
		return err
	}
	if ui != nil {
		defer ui.Close()
		fmt.Fprintf(a.stderr, "live charts: %s\n", ui.ComparisonURL(p.rec.ID))
	}
	note := fmt.Sprintf("comparison %s goes on (longhaul report %s)", p.rec.ID, p.rec.ID)
	if f.temporal == "" {
		note = fmt.Sprintf("comparison %s is paused with the embedded server; it continues when 'longhaul dev --data %s' starts", p.rec.ID, svc.dataDir)
	}
	err = a.followComparison(ctx, c, st, wr, p, f.failOnWorse, note)
	var silent errSilent
	if errors.As(err, &silent) && silent.code == exitFailed {
		fmt.Fprintf(a.stderr, "longhaul: Temporal's own log lines are in %s\n", lg.path)
	}
	return err
}

// followComparison prints each round as it ends (and the equivalence
// check's outcome once known) until the workflow ends, then the report.
// The first interrupt cancels the comparison; the second stops following.
func (a *app) followComparison(ctx context.Context, c client.Client, st store.Store, wr client.WorkflowRun, p comparePlan, failOnWorse bool, detachNote string) error {
	done := make(chan error, 1)
	go func() { done <- wr.Get(context.WithoutCancel(ctx), nil) }()
	id := p.rec.ID
	var progress *report.Progress
	plannedPairs := max(p.rec.Pairs, p.rec.MaxPairs)
	if p.format == report.Text {
		total := time.Duration(2*plannedPairs) * p.rec.RoundDuration
		progress = report.NewProgress(a.stderr, time.Now(), total)
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go progress.Run(pctx, time.Second)
	}
	printed := map[int]bool{}
	eqPrinted, historyPrinted, looks := false, false, 0
	total := 2 * plannedPairs
	printNew := func() error {
		cmp, err := st.GetComparison(ctx, id)
		if err != nil {
			return fmt.Errorf("read comparison %s: %w", id, err)
		}
		if !eqPrinted && cmp.Equivalence.Status != "" {
			eqPrinted = true
			if p.format == report.JSON {
				if err := report.WriteEquivalenceJSON(a.stdout, cmp.Equivalence); err != nil {
					return err
				}
			} else {
				progress.Around(func() { fmt.Fprintf(a.stdout, "equivalence: %s\n", report.EquivalenceLine(cmp.Equivalence)) })
			}
		}
		for _, r := range cmp.Rounds {
			if printed[r.Index] || !r.Status.Done() {
				continue
			}
			printed[r.Index] = true
			if r.Index+1 > total {
				total = r.Index + 1 // a rerun pair
			}
			if p.format == report.JSON {
				if err := report.WriteRoundJSON(a.stdout, r); err != nil {
					return err
				}
				continue
			}
			progress.Around(func() { fmt.Fprintln(a.stdout, report.RoundLine(r, total)) })
		}
		if !historyPrinted && cmp.History != nil {
			historyPrinted = true
			if p.format == report.Text {
				progress.Around(func() { fmt.Fprintln(a.stdout, report.HistoryLine(*cmp.History)) })
			}
		}
		for ; looks < len(cmp.Looks); looks++ {
			l := cmp.Looks[looks]
			if p.format == report.JSON {
				if err := report.WriteLookJSON(a.stdout, l); err != nil {
					return err
				}
				continue
			}
			progress.Around(func() { fmt.Fprintln(a.stdout, strings.Join(report.LookLines(l), "\n")) })
		}
		return nil
	}
	return followUntilDone(ctx, a, c, done, follower{
		what: "comparison", wr: wr, poll: min(max(p.rec.Window/2, 200*time.Millisecond), time.Second),
		progress: progress, detachNote: detachNote, tick: printNew,
		status: func() (store.Status, string) {
			cmp, err := st.GetComparison(ctx, id)
			if err != nil {
				return "", ""
			}
			return cmp.Status, cmp.Reason
		},
		finish: func() error {
			cmp, err := st.GetComparison(ctx, id)
			if err != nil {
				return fmt.Errorf("read comparison %s: %w", id, err)
			}
			return a.finishComparison(cmp, p.format, failOnWorse)
		},
	})
}

// finishComparison prints the report of an ended comparison and maps its
// outcome to the exit code.
func (a *app) finishComparison(cmp store.Comparison, format report.Format, failOnWorse bool) error {
	var err error
	if format == report.JSON {
		err = report.WriteComparisonJSON(a.stdout, cmp)
	} else {
		fmt.Fprintln(a.stdout)
		err = report.WriteComparisonText(a.stdout, cmp)
	}
	if err != nil {
		return err
	}
	switch {
	case cmp.Status != store.Completed:
		return errSilent{exitFailed}
	case failOnWorse && len(report.WorseMetrics(cmp.Verdicts)) > 0:
		fmt.Fprintf(a.stderr, "longhaul: B is worse on %s (--fail-on-worse)\n", strings.Join(report.WorseMetrics(cmp.Verdicts), ", "))
		return errSilent{exitWorse}
	}
	return nil
}

func (a *app) comparisonsCmd() *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:     "comparisons",
		Short:   "List comparisons, newest first",
		Example: "  longhaul comparisons\n  longhaul comparisons --status completed --format json\n  longhaul comparisons --schedule nightly-ab",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.comparisons(cmd.Context(), f)
		},
	}
	f.register(cmd.Flags(), "comparisons", "one comparison object")
	return cmd
}

func (a *app) comparisons(ctx context.Context, f listFlags) error {
	st, format, opts, err := a.openListing(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	cs, err := st.ListComparisons(ctx, opts)
	if err != nil {
		return fmt.Errorf("list comparisons: %w", err)
	}
	if format == report.JSON {
		return report.WriteComparisonsJSON(a.stdout, cs)
	}
	return report.WriteComparisonsText(a.stdout, cs)
}

// reportComparison prints a stored comparison (longhaul report ID).
func (a *app) reportComparison(ctx context.Context, st store.Store, id string, format report.Format) (bool, error) {
	cmp, err := st.GetComparison(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("read comparison %s: %w", id, err)
	}
	ns, err := st.ComparisonNotifications(ctx, id)
	if err != nil {
		return true, fmt.Errorf("read notifications of comparison %s: %w", id, err)
	}
	if format == report.JSON {
		if err := report.WriteComparisonJSON(a.stdout, cmp); err != nil {
			return true, err
		}
		return true, report.WriteNotificationsJSON(a.stdout, ns)
	}
	if err := report.WriteComparisonText(a.stdout, cmp); err != nil {
		return true, err
	}
	if len(ns) > 0 {
		fmt.Fprintln(a.stdout)
		report.WriteNotifications(a.stdout, ns)
	}
	return true, nil
}
