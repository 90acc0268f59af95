package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/profiles"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// The activities of a comparison (workflows.CompareWorkflow). The
// comparison's record (store.Comparison) holds its scenario and sides; each
// round is an ordinary soak run whose record StartRound creates.

// RecordRequest asks for a seeded sequence of requests and their responses
// (an equivalence check).
type RecordRequest struct {
	TargetURL string
	EnvDir    string // as in DriveRequest
	Scenario  *scenarios.Scenario
	Seed      uint64
	Requests  int
}

// Recorder sends a seeded request sequence and returns the exchanges
// (LoadDriver implements it with driver.Record).
type Recorder interface {
	Record(ctx context.Context, req RecordRequest) ([]equivalence.Exchange, error)
}

// Builder builds one side of a comparison once, before its rounds: a git
// ref checked out and built (and cached by commit). The provision package
// implements it, through the command's adapter.
type Builder interface {
	// Build returns the side with Commit and Artifact set; Provision then
	// uses the artifact instead of building again.
	Build(ctx context.Context, req BuildRequest) (store.Build, error)
}

// BuildRequest is one side to build.
type BuildRequest struct {
	ComparisonID string
	Side         store.Side
	Spec         scenarios.Environment
	Provider     string
	Build        store.Build
}

// CompareBeginInput identifies a comparison's record.
type CompareBeginInput struct {
	ComparisonID string
	WorkflowID   string
}

// CompareBegin checks that the comparison's record exists, records the
// workflow id and sets it running. It is idempotent.
func (a *Activities) CompareBegin(ctx context.Context, in CompareBeginInput) error {
	c, err := a.Store.GetComparison(ctx, in.ComparisonID)
	if errors.Is(err, store.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("comparison %s has no record", in.ComparisonID), ErrTypeBadScenario, err)
	}
	if err != nil {
		return fmt.Errorf("begin comparison %s: %w", in.ComparisonID, err)
	}
	if c.WorkflowID == "" && in.WorkflowID != "" {
		c.WorkflowID = in.WorkflowID
		c.Rounds = nil
		if err := a.Store.PutComparison(ctx, c); err != nil {
			return fmt.Errorf("begin comparison %s: %w", in.ComparisonID, err)
		}
	}
	if err := a.Store.SetComparisonStatus(ctx, in.ComparisonID, store.Running, "", a.now()); err != nil {
		return fmt.Errorf("begin comparison %s: %w", in.ComparisonID, err)
	}
	return nil
}

// ComparisonStatusInput is a comparison's status change.
type ComparisonStatusInput struct {
	ComparisonID string
	Status       store.Status
	Reason       string
}

// SetComparisonStatus records a comparison's status.
func (a *Activities) SetComparisonStatus(ctx context.Context, in ComparisonStatusInput) error {
	if err := a.Store.SetComparisonStatus(ctx, in.ComparisonID, in.Status, in.Reason, a.now()); err != nil {
		return fmt.Errorf("set comparison %s %s: %w", in.ComparisonID, in.Status, err)
	}
	a.logger().Info("comparison status", "comparison", in.ComparisonID, "status", in.Status, "reason", in.Reason)
	return nil
}

// comparison reads the comparison and parses its scenario.
func (a *Activities) comparison(ctx context.Context, id string) (store.Comparison, *scenarios.Scenario, error) {
	c, err := a.Store.GetComparison(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return c, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("comparison %s not found in the store", id), ErrTypeBadScenario, err)
		}
		return c, nil, fmt.Errorf("read comparison %s: %w", id, err)
	}
	s, err := scenarios.Parse([]byte(c.Scenario), c.Name+".yaml")
	if err != nil {
		return c, nil, temporal.NewNonRetryableApplicationError("scenario of comparison "+id+": "+err.Error(), ErrTypeBadScenario, nil)
	}
	s.ResolvePaths(c.ScenarioDir)
	return c, s, nil
}

// PrepareSideInput names the side to build.
type PrepareSideInput struct {
	ComparisonID string
	Side         store.Side
	Provider     string
}

// PrepareSide builds one side once (Builder), on the comparison's host, and
// records the commit and artifact in the comparison. A side without a git
// ref needs no build and is returned as it is.
func (a *Activities) PrepareSide(ctx context.Context, in PrepareSideInput) (store.Build, error) {
	c, s, err := a.comparison(ctx, in.ComparisonID)
	if err != nil {
		return store.Build{}, err
	}
	b := c.A
	if in.Side == store.SideB {
		b = c.B
	}
	if b.Ref == "" || b.Artifact != "" || a.Builder == nil {
		return b, nil
	}
	stop := keepAlive(ctx, "building side "+string(in.Side))
	defer stop()
	built, err := a.Builder.Build(ctx, BuildRequest{ComparisonID: c.ID, Side: in.Side, Spec: s.Environment, Provider: in.Provider, Build: b})
	if err != nil {
		if ctx.Err() != nil {
			return b, ctx.Err()
		}
		return b, temporal.NewNonRetryableApplicationError(fmt.Sprintf("build side %s (%s): %v", in.Side, b.Ref, err), ErrTypeProvision, nil)
	}
	// Re-read: the other side may have been recorded meanwhile.
	if c, err = a.Store.GetComparison(ctx, in.ComparisonID); err != nil {
		return built, fmt.Errorf("record build of side %s: %w", in.Side, err)
	}
	if in.Side == store.SideB {
		c.B = built
	} else {
		c.A = built
	}
	c.Rounds = nil
	if err := a.Store.PutComparison(ctx, c); err != nil {
		return built, fmt.Errorf("record build of side %s: %w", in.Side, err)
	}
	a.logger().Info("side built", "comparison", c.ID, "side", in.Side, "ref", b.Ref, "commit", built.Commit, "artifact", built.Artifact)
	return built, nil
}

// RoundRunID is the run id of round index of a comparison.
func RoundRunID(comparisonID string, index int) string {
	return fmt.Sprintf("%s-r%d", comparisonID, index)
}

// StartRoundInput is a round about to run; Supersede lists the indexes of
// rounds it replaces (a rerun pair's disturbed rounds).
type StartRoundInput struct {
	ComparisonID string
	Round        store.Round
	Supersede    []int
}

// StartRound creates the round's run record (a soak of the comparison's
// scenario) and records the round as pending. It is idempotent.
func (a *Activities) StartRound(ctx context.Context, in StartRoundInput) error {
	c, err := a.Store.GetComparison(ctx, in.ComparisonID)
	if err != nil {
		return fmt.Errorf("start round %d of comparison %s: %w", in.Round.Index, in.ComparisonID, err)
	}
	r := in.Round
	if _, err := a.Store.GetRun(ctx, r.RunID); errors.Is(err, store.ErrNotFound) {
		err := a.Store.PutRun(ctx, store.Run{
			ID: r.RunID, Name: c.Name, Kind: "soak", Status: store.Pending, Scenario: c.Scenario,
			ScenarioDir: c.ScenarioDir, WorkflowID: RoundWorkflowID(c.ID, r.Index), CreatedAt: a.now(),
		})
		if err != nil {
			return fmt.Errorf("start round %d: create run: %w", r.Index, err)
		}
	} else if err != nil {
		return fmt.Errorf("start round %d: %w", r.Index, err)
	}
	r.Status = store.Pending
	if r.StartedAt.IsZero() {
		r.StartedAt = a.now()
	}
	if err := a.Store.PutRound(ctx, c.ID, r); err != nil {
		return fmt.Errorf("start round %d: %w", r.Index, err)
	}
	for _, old := range c.Rounds {
		for _, idx := range in.Supersede {
			if old.Index == idx && !old.Superseded {
				old.Superseded = true
				if err := a.Store.PutRound(ctx, c.ID, old); err != nil {
					return fmt.Errorf("supersede round %d: %w", idx, err)
				}
			}
		}
	}
	return nil
}

// RoundWorkflowID is the workflow id of round index's child soak.
func RoundWorkflowID(comparisonID string, index int) string {
	return fmt.Sprintf("longhaul-compare-%s-round-%d", comparisonID, index)
}

// FinishRoundInput is a round that ended, with its run's outcome.
type FinishRoundInput struct {
	ComparisonID string
	Round        store.Round
	Status       store.Status
	Reason       string
	// DisturbedAbove: a round whose foreign load is above this share of
	// the host is disturbed.
	DisturbedAbove float64
	Warmup         time.Duration
}

// FinishRound measures the round's foreign load from its windows (the
// mean of HostForeignCPU over the windows after warm-up), marks it
// disturbed above the threshold, and records it.
func (a *Activities) FinishRound(ctx context.Context, in FinishRoundInput) (store.Round, error) {
	r := in.Round
	ws, err := a.Store.Windows(ctx, r.RunID, store.AllWindows)
	if err != nil {
		return r, fmt.Errorf("finish round %d: read windows: %w", r.Index, err)
	}
	if c, err := a.Store.GetComparison(ctx, in.ComparisonID); err == nil {
		for _, old := range c.Rounds {
			if old.Index == r.Index && r.StartedAt.IsZero() {
				r.StartedAt = old.StartedAt // set by StartRound
			}
		}
	}
	r.ForeignCPU = foreignCPU(ws, in.Warmup)
	r.Disturbed = in.DisturbedAbove > 0 && r.ForeignCPU > in.DisturbedAbove
	r.Status, r.Reason, r.EndedAt = in.Status, in.Reason, a.now()
	if err := a.Store.PutRound(ctx, in.ComparisonID, r); err != nil {
		return r, fmt.Errorf("finish round %d: %w", r.Index, err)
	}
	return r, nil
}

// foreignCPU is the mean foreign load of the windows that start after
// warmup (all of them when none does).
func foreignCPU(ws []window.Window, warmup time.Duration) float64 {
	var start time.Time
	for _, w := range ws {
		if !w.Gap && (start.IsZero() || w.Start.Before(start)) {
			start = w.Start
		}
	}
	var sum, n, sumAll, nAll float64
	for _, w := range ws {
		f := w.Probes.HostForeignCPU
		if w.Gap || f == nil {
			continue
		}
		sumAll += *f
		nAll++
		if !w.Start.Before(start.Add(warmup)) {
			sum += *f
			n++
		}
	}
	switch {
	case n > 0:
		return sum / n
	case nAll > 0:
		return sumAll / nAll
	}
	return 0
}

// EquivalenceInput asks for the response-equivalence check of a comparison.
type EquivalenceInput struct {
	ComparisonID string
	Requests     int
	Seed         uint64
	Provider     string
	// TargetEnv is added on both sides (before each side's own env).
	TargetEnv map[string]string
	A, B      store.Build
}

// EquivalenceRunID is the run id of a side's equivalence environment.
func EquivalenceRunID(comparisonID string, side store.Side) string {
	return fmt.Sprintf("%s-eq-%s", comparisonID, side)
}

// CheckEquivalence brings up a fresh environment of each side in turn, sends
// both the same seeded sequence of requests, tears them down, compares the
// responses (package equivalence) and records the result in the comparison.
// Each side's environment is a run of kind "equivalence" so the sweeper
// leaves it alone while it is up.
func (a *Activities) CheckEquivalence(ctx context.Context, in EquivalenceInput) (equivalence.Result, error) {
	if a.Recorder == nil {
		return equivalence.Result{Status: equivalence.Skipped, Reason: "this worker has no recorder"}, nil
	}
	c, s, err := a.comparison(ctx, in.ComparisonID)
	if err != nil {
		return equivalence.Result{}, err
	}
	stop := keepAlive(ctx, "checking equivalence")
	defer stop()
	var sides [2][]equivalence.Exchange
	for i, side := range []store.Side{store.SideA, store.SideB} {
		b := in.A
		if side == store.SideB {
			b = in.B
		}
		xs, err := a.recordSide(ctx, c, s, side, b, in)
		if err != nil {
			return equivalence.Result{}, err
		}
		sides[i] = xs
	}
	var ignore []string
	if s.Compare != nil {
		ignore = s.Compare.Ignore
	}
	res, err := equivalence.Compare(sides[0], sides[1], equivalence.Options{Ignore: ignore})
	if err != nil {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadScenario, nil)
	}
	if c, err = a.Store.GetComparison(ctx, in.ComparisonID); err != nil {
		return res, fmt.Errorf("record equivalence: %w", err)
	}
	c.Equivalence, c.Rounds = res, nil
	if err := a.Store.PutComparison(ctx, c); err != nil {
		return res, fmt.Errorf("record equivalence: %w", err)
	}
	return res, nil
}

func (a *Activities) recordSide(ctx context.Context, c store.Comparison, s *scenarios.Scenario, side store.Side, b store.Build, in EquivalenceInput) ([]equivalence.Exchange, error) {
	runID := EquivalenceRunID(c.ID, side)
	run := store.Run{ID: runID, Name: c.Name, Kind: "equivalence", Status: store.Running, Scenario: c.Scenario,
		ScenarioDir: c.ScenarioDir, CreatedAt: a.now(), StartedAt: a.now()}
	if err := a.Store.PutRun(ctx, run); err != nil {
		return nil, fmt.Errorf("equivalence side %s: create run: %w", side, err)
	}
	extra := maps.Clone(in.TargetEnv)
	if extra == nil {
		extra = map[string]string{}
	}
	maps.Copy(extra, b.Env)
	spec, prebuilt := ApplyBuild(s.Environment, b)
	env, err := a.Provisioner.Provision(ctx, ProvisionRequest{
		RunID: runID, Incarnation: 1, Spec: spec, Provider: in.Provider, ExtraEnv: extra, Prebuilt: prebuilt,
	})
	finish := func(st store.Status, reason string) {
		_ = a.Store.SetStatus(context.WithoutCancel(ctx), runID, st, reason, a.now())
	}
	if env.ID != "" {
		defer func() {
			if err := a.Provisioner.Teardown(context.WithoutCancel(ctx), env); err != nil {
				a.logger().Warn("teardown of an equivalence environment failed", "env", env.ID, "err", err)
			}
		}()
	}
	if err != nil {
		finish(store.Failed, err.Error())
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("equivalence side %s: provision: %v", side, err), ErrTypeProvision, nil)
	}
	if _, err := url.Parse(env.TargetURL); err != nil {
		finish(store.Failed, err.Error())
		return nil, fmt.Errorf("equivalence side %s: target URL %q: %w", side, env.TargetURL, err)
	}
	xs, err := a.Recorder.Record(ctx, RecordRequest{TargetURL: env.TargetURL, EnvDir: env.EnvDir, Scenario: s, Seed: in.Seed, Requests: in.Requests})
	if err != nil {
		finish(store.Failed, err.Error())
		if errors.Is(err, ErrBadInput) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadScenario, nil)
		}
		return nil, fmt.Errorf("equivalence side %s: %w", side, err)
	}
	finish(store.Completed, "")
	return xs, nil
}

// ApplyBuild returns the environment spec of one side and the prebuilt
// artifact directory the local provider copies instead of building: an
// image replaces the target's image (and any Dockerfile build); a ref
// built by the docker provider (an image artifact) likewise; a ref not
// built yet is set as target.build.ref, which the docker provider builds
// (cached by commit).
func ApplyBuild(spec scenarios.Environment, b store.Build) (scenarios.Environment, string) {
	t := spec.Target
	if t.Build != nil {
		bb := *t.Build
		t.Build = &bb
	}
	image := b.Image
	prebuilt := ""
	if b.Artifact != "" {
		if isImageRef(b.Artifact) {
			image = b.Artifact
		} else {
			prebuilt = b.Artifact
		}
	}
	switch {
	case image != "":
		t.Image = image
		if t.Build != nil {
			t.Build.Repo, t.Build.Ref = "", ""
		}
	case b.Ref != "" && t.Build != nil:
		t.Build.Ref = b.Ref
	}
	spec.Target = t
	return spec, prebuilt
}

// isImageRef tells an image artifact ("longhaul-target/api:0123…") from a
// directory (an absolute path).
func isImageRef(s string) bool { return len(s) > 0 && s[0] != '/' }

// VerdictsInput asks for a comparison's verdicts.
type VerdictsInput struct {
	ComparisonID string
	Warmup       time.Duration
	Options      analysis.PairedOptions
	// Host is the host queue the rounds ran on, recorded with the verdicts:
	// later comparisons pool the noise of earlier ones on the same host.
	Host string
	// Sequential, when set, decides by the sequential rule
	// (analysis.CompareSequential) and records the look; Final marks the
	// last call, after the comparison stopped for the reason Stopped.
	Sequential *analysis.SequentialOptions
	Final      bool
	Stopped    string
}

// VerdictsResult counts the outcomes. In a sequential comparison Decided
// is set when every primary metric is decided, and Undecided names those
// that are not.
type VerdictsResult struct {
	Pairs        int
	Better       int
	Worse        int
	NoDifference int
	Inconclusive int
	Decided      bool     `json:",omitempty"`
	Undecided    []string `json:",omitempty"`
}

// CompareVerdicts pairs the comparison's completed rounds (superseded ones
// left out), reduces each pair's two rounds to one value per metric each
// over their common stretch of requests (analysis.PairValuesOf), decides every metric (analysis.ComparePairs)
// and records the verdicts.
func (a *Activities) CompareVerdicts(ctx context.Context, in VerdictsInput) (VerdictsResult, error) {
	c, err := a.Store.GetComparison(ctx, in.ComparisonID)
	if err != nil {
		return VerdictsResult{}, fmt.Errorf("verdicts of comparison %s: %w", in.ComparisonID, err)
	}
	type half struct {
		ws        []window.Window
		disturbed bool
		runID     string
	}
	byPair := map[int]map[store.Side]half{}
	var order []int
	for _, r := range c.Rounds {
		if r.Superseded || r.Status != store.Completed {
			continue
		}
		ws, err := a.Store.Windows(ctx, r.RunID, store.AllWindows)
		if err != nil {
			return VerdictsResult{}, fmt.Errorf("verdicts: windows of round %d: %w", r.Index, err)
		}
		if byPair[r.Pair] == nil {
			byPair[r.Pair] = map[store.Side]half{}
			order = append(order, r.Pair)
		}
		byPair[r.Pair][r.Side] = half{ws, r.Disturbed, r.RunID}
	}
	var pairs []analysis.Pair
	var used [][2]half // the rounds of the pairs counted: A, B
	for _, p := range order {
		sa, okA := byPair[p][store.SideA]
		sb, okB := byPair[p][store.SideB]
		if !okA || !okB {
			continue
		}
		used = append(used, [2]half{sa, sb})
		// Both rounds over the same stretch of their request sequence, so a
		// target whose cost grows with its data is compared on equal data.
		va, vb, err := analysis.PairValuesOf(sa.ws, sb.ws, in.Warmup)
		if err != nil {
			return VerdictsResult{}, fmt.Errorf("verdicts: pair %d: %w", p+1, err)
		}
		pairs = append(pairs, analysis.Pair{A: va, B: vb, Disturbed: sa.disturbed || sb.disturbed})
	}
	if in.Host != "" {
		c.Host = in.Host
	}
	opts := in.Options
	if opts.Prior == nil {
		if opts.Prior, _, err = a.priorNoise(ctx, c); err != nil {
			return VerdictsResult{}, err
		}
	}
	res := VerdictsResult{Pairs: len(pairs)}
	var vs []analysis.Verdict
	if in.Sequential != nil {
		s := analysis.CompareSequential(pairs, opts, *in.Sequential, in.Final)
		vs, res.Decided, res.Undecided = s.Verdicts, s.Decided, s.Undecided
		c.Looks = recordLook(c.Looks, s)
		c.Pairs, c.MaxPairs = len(pairs), cmp.Or(in.Sequential.MaxPairs, analysis.DefaultMaxPairs)
		if in.Final {
			c.Stopped = in.Stopped
		}
	} else {
		vs = analysis.ComparePairs(pairs, opts)
	}
	roundsB := make([][]window.Window, len(used))
	for i, h := range used {
		roundsB[i] = h[1].ws
	}
	analysis.ExplainWalls(vs, roundsB, in.Warmup)
	if cpuDecided(vs) {
		var profA, profB []store.Profile
		for _, h := range used {
			profA = append(profA, a.roundProfiles(ctx, h[0].runID, h[0].ws, in.Warmup)...)
			profB = append(profB, a.roundProfiles(ctx, h[1].runID, h[1].ws, in.Warmup)...)
		}
		if err := profiles.ExplainVerdicts(vs, profA, profB); err != nil {
			a.logger().Warn("the rounds' CPU profiles could not be compared", "comparison", in.ComparisonID, "err", err)
		}
	}
	if slices.ContainsFunc(vs, profiles.ExplainsAlloc) {
		var heapA, heapB []profiles.Round
		for _, h := range used {
			heapA = append(heapA, profiles.Round{Heap: a.roundHeapProfiles(ctx, h[0].runID), Windows: h[0].ws})
			heapB = append(heapB, profiles.Round{Heap: a.roundHeapProfiles(ctx, h[1].runID), Windows: h[1].ws})
		}
		if err := profiles.ExplainAllocVerdicts(vs, heapA, heapB); err != nil {
			a.logger().Warn("the rounds' heap profiles could not be compared", "comparison", in.ComparisonID, "err", err)
		}
	}
	c.Verdicts, c.Rounds = vs, nil
	if err := a.Store.PutComparison(ctx, c); err != nil {
		return VerdictsResult{}, fmt.Errorf("record verdicts: %w", err)
	}
	for _, v := range vs {
		switch v.Outcome {
		case analysis.Better:
			res.Better++
		case analysis.Worse:
			res.Worse++
		case analysis.NoDifference:
			res.NoDifference++
		default:
			res.Inconclusive++
		}
	}
	return res, nil
}

// recordLook replaces or appends the look of s's pair count (an activity
// retried records it once), keeping the primary metrics' verdicts.
func recordLook(looks []store.Look, s analysis.Sequential) []store.Look {
	l := store.Look{Pairs: s.Pairs, Undecided: s.Undecided}
	for _, v := range s.Verdicts {
		if v.Primary {
			l.Verdicts = append(l.Verdicts, v)
		}
	}
	for i := range looks {
		if looks[i].Pairs == l.Pairs {
			looks[i] = l
			return looks
		}
	}
	return append(looks, l)
}

// HistoryInput asks how many earlier comparisons a comparison's verdicts
// will pool noise with, once its host is known.
type HistoryInput struct {
	ComparisonID string
	Host         string
}

// CompareHistory counts the earlier comparisons whose noise the verdicts
// of this one will pool (priorNoise) and records the count with it, so the
// terminal can say at the start that there is none.
func (a *Activities) CompareHistory(ctx context.Context, in HistoryInput) (int, error) {
	c, err := a.Store.GetComparison(ctx, in.ComparisonID)
	if err != nil {
		return 0, fmt.Errorf("history of comparison %s: %w", in.ComparisonID, err)
	}
	c.Host = in.Host
	_, used, err := a.priorNoise(ctx, c)
	if err != nil {
		return 0, err
	}
	c.History, c.Rounds = &used, nil
	if err := a.Store.PutComparison(ctx, c); err != nil {
		return 0, fmt.Errorf("record history of comparison %s: %w", in.ComparisonID, err)
	}
	return used, nil
}

// cpuDecided reports whether a CPU-per-request verdict of vs takes a
// profile diff (profiles.Explains): only then are the rounds' profiles read
// and diffed.
func cpuDecided(vs []analysis.Verdict) bool {
	return slices.ContainsFunc(vs, profiles.Explains)
}

// roundProfiles reads a round's CPU profiles taken after its warm-up (as
// its verdict values are); a failure to read them only costs the verdicts
// their profile diff.
func (a *Activities) roundProfiles(ctx context.Context, runID string, ws []window.Window, warmup time.Duration) []store.Profile {
	ps, err := a.Store.Profiles(ctx, runID, store.ProfileQuery{Kind: store.ProfileCPU, WithData: true})
	if err != nil {
		a.logger().Warn("read a round's CPU profiles", "run", runID, "err", err)
		return nil
	}
	return profiles.AfterWarmup(ps, ws, warmup)
}

// roundHeapProfiles reads a round's heap profiles (the first and the
// latest of each incarnation); a failure to read them only costs the
// verdicts their allocation diff.
func (a *Activities) roundHeapProfiles(ctx context.Context, runID string) []store.Profile {
	ps, err := a.Store.Profiles(ctx, runID, store.ProfileQuery{Kind: store.ProfileHeap, WithData: true})
	if err != nil {
		a.logger().Warn("read a round's heap profiles", "run", runID, "err", err)
		return nil
	}
	return ps
}

// priorComparisons is how many earlier comparisons' noise a comparison
// pools: enough for a t with 10–20 degrees of freedom from 3-pair
// comparisons, recent enough to be this host as it is now.
const priorComparisons = 10

// priorNoise gathers the pair-to-pair noise of the newest completed
// comparisons like c — the same scenario (name and text: an edited mix or
// load is another measurement), host, provider, round duration, window and
// warm-up, so their rounds are the same measurement — per
// metric (analysis.PriorNoise). Their builds may differ: a build's change
// shifts its log-ratios, not their spread around the mean.
func (a *Activities) priorNoise(ctx context.Context, c store.Comparison) (map[string]analysis.PriorNoise, int, error) {
	cs, err := a.Store.ListComparisons(ctx, store.ListOptions{Name: c.Name, Status: store.Completed, Limit: 200})
	if err != nil {
		return nil, 0, fmt.Errorf("verdicts: earlier comparisons of %s: %w", c.Name, err)
	}
	prior := map[string]analysis.PriorNoise{}
	used := 0
	for _, e := range cs { // newest first
		if used == priorComparisons {
			break
		}
		if e.ID == c.ID || !e.CreatedAt.Before(c.CreatedAt) || e.Scenario != c.Scenario || e.Host != c.Host || e.Provider != c.Provider ||
			e.RoundDuration != c.RoundDuration || e.Window != c.Window || e.Warmup != c.Warmup {
			continue
		}
		used++
		for _, v := range e.Verdicts {
			p := prior[v.Metric]
			p.Add(v)
			prior[v.Metric] = p
		}
	}
	return prior, used, nil
}
