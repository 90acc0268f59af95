package workflows

import (
	"fmt"
	"maps"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/store"
)

// CompareWorkflowName is the registered name of CompareWorkflow.
const CompareWorkflowName = "CompareWorkflow"

// ErrTypeCompareFailed is the type of the application error a failed
// comparison ends with.
const ErrTypeCompareFailed = "CompareFailed"

// Defaults of CompareInput.
const (
	DefaultPairs = 3
	// DefaultDisturbedAbove: a round whose foreign load took more than a
	// quarter of the host (half a core of two) moved its figures more than
	// the effects a comparison looks for.
	DefaultDisturbedAbove = 0.25
	// DefaultEquivalenceRequests is the length of the equivalence sequence.
	DefaultEquivalenceRequests = 200
)

// Orders of a comparison's rounds.
const (
	// OrderABBA alternates which build goes first: A B, B A, A B ... so a
	// first-round effect (a cold page cache) cancels over the pairs.
	OrderABBA = "abba"
	// OrderAB always runs A first.
	OrderAB = "ab"
	// OrderRandom draws each pair's order at random (from the seed).
	OrderRandom = "random"
)

// CompareInput starts a comparison. Its record (store.Comparison, with the
// scenario and both sides) must exist: the command creates it.
type CompareInput struct {
	ComparisonID string
	Name         string
	// Pairs of rounds (0: DefaultPairs); Order of each pair (OrderABBA when empty).
	Pairs int
	Order string
	// Seed derives every pair's seed (the same for both rounds of a pair).
	Seed uint64
	// RoundDuration, Window: each round is a soak this long in windows this long.
	RoundDuration time.Duration
	Window        time.Duration
	// Warmup is left out of each round's values.
	Warmup   time.Duration
	Provider string
	// TargetEnv is added to both sides' target environment (each side's
	// own Build.Env comes on top).
	TargetEnv map[string]string
	// Equivalence is the number of requests of the equivalence check; 0 skips it.
	Equivalence int
	// AllowDiff lets the comparison go on when the responses differ.
	AllowDiff bool
	// RerunDisturbed reruns pairs with a disturbed round, at most MaxReruns
	// pairs in all (0: Pairs).
	RerunDisturbed bool
	MaxReruns      int
	// DisturbedAbove is the foreign-load share above which a round is
	// disturbed (0: DefaultDisturbedAbove; negative: never).
	DisturbedAbove float64
	// Verdict tunes the paired verdicts (floors, the primary metrics).
	Verdict analysis.PairedOptions
	// AutoPairs adds pairs until the primary metrics are decided
	// (analysis.CompareSequential) instead of running Pairs: it starts with
	// analysis.DefaultMinPairs pairs and looks after each pair, at most
	// MaxPairs pairs (0: analysis.DefaultMaxPairs; with RerunDisturbed, a
	// pair with a disturbed round does not count, up to MaxReruns of them)
	// and, when MaxDuration is set, no pair that would end after
	// MaxDuration from the comparison's start (at least the first pairs
	// needed for a look are run).
	AutoPairs   bool
	MaxPairs    int
	MaxDuration time.Duration
}

// Why a sequential comparison stopped (CompareResult.Stopped,
// store.Comparison.Stopped).
const (
	StoppedDecided     = "decided"
	StoppedMaxPairs    = "max_pairs"
	StoppedMaxDuration = "max_duration"
)

// CompareResult is the outcome of a comparison; a failed one returns it as
// the details of an ErrTypeCompareFailed error.
type CompareResult struct {
	ComparisonID string
	Status       store.Status
	Reason       string
	Rounds       int
	Disturbed    int
	Reruns       int
	Equivalence  equivalence.Status
	Verdicts     activities.VerdictsResult
	// Pairs is the number of pairs taken and Stopped why the comparison
	// stopped adding them (AutoPairs only).
	Pairs   int    `json:",omitempty"`
	Stopped string `json:",omitempty"`
}

// PlannedRound is one round of the plan: which pair, which side, which seed.
type PlannedRound struct {
	Pair int
	Side store.Side
	Seed uint64
}

// PlanRounds lays out the rounds of pairs pairs in order: abba alternates
// the side that goes first, ab always starts with A, random draws each
// pair's order from the seed. Both rounds of a pair get the pair's seed.
// It is a pure function of its inputs, so workflow code may call it.
func PlanRounds(pairs int, order string, seed uint64) []PlannedRound {
	out := make([]PlannedRound, 0, 2*pairs)
	rng := seed ^ 0x5851f42d4c957f2d
	for p := range pairs {
		s := PairSeed(seed, p)
		bFirst := false
		switch order {
		case OrderAB:
		case OrderRandom:
			rng = splitmix(rng)
			bFirst = rng&1 == 1
		default:
			bFirst = p%2 == 1
		}
		first, second := store.SideA, store.SideB
		if bFirst {
			first, second = second, first
		}
		out = append(out, PlannedRound{p, first, s}, PlannedRound{p, second, s})
	}
	return out
}

// PairSeed is pair p's seed (never 0, which means "random").
func PairSeed(seed uint64, p int) uint64 {
	s := splitmix(seed + uint64(p+1)*0x9e3779b97f4a7c15)
	if s == 0 {
		s = 1
	}
	return s
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// compareHeartbeatChange: version 1 gives the host activities of a
// comparison (PrepareSide, CheckEquivalence) a heartbeat timeout and a
// third attempt, so a task lost on its way to a worker, or with a worker
// killed, is retried within ProvisionHeartbeatTimeout instead of waiting
// out the 30-minute start-to-close timeout.
const compareHeartbeatChange = "compare-heartbeat"

// comparison is one CompareWorkflow execution's state.
type comparison struct {
	heartbeat bool // compareHeartbeatChange ≥ 1
	in        CompareInput
	host      string
	holdsSlot bool // the host was claimed as a measurement slot (slotsChange ≥ 1)
	builds    map[store.Side]store.Build
	rounds    []store.Round // as they finished, superseded ones marked
	res       CompareResult
}

// CompareWorkflow runs an interleaved comparison of two builds on one host:
// build each side once, check that both answer the same seeded requests
// alike, then run the planned rounds one after another, each a child
// SoakWorkflow with a fresh environment on the same host; optionally rerun
// disturbed pairs; then decide every metric (analysis.ComparePairs).
//
// Durable: a worker killed mid-comparison resumes at the round in progress
// (the child soak resumes its drive), and finished rounds are in the
// history and the store.
func CompareWorkflow(ctx workflow.Context, in CompareInput) (res CompareResult, err error) {
	c := &comparison{in: in, builds: map[store.Side]store.Build{}}
	c.res.ComparisonID = in.ComparisonID
	defer func() { res, err = c.finish(ctx, err) }()
	return c.run(ctx)
}

func (c *comparison) general(ctx workflow.Context) workflow.Context {
	return storeBound(ctx, generalTimeout)
}

func (c *comparison) onHost(ctx workflow.Context, timeout time.Duration) workflow.Context {
	opts := workflow.ActivityOptions{
		TaskQueue:           c.host,
		StartToCloseTimeout: timeout,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 2,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadScenario, activities.ErrTypeProvision}},
	}
	if c.heartbeat {
		opts.HeartbeatTimeout = ProvisionHeartbeatTimeout
		opts.RetryPolicy.MaximumAttempts = 3
	}
	return workflow.WithActivityOptions(ctx, opts)
}

func (c *comparison) run(ctx workflow.Context) (CompareResult, error) {
	_ = workflow.GetVersion(ctx, "compare-steps", workflow.DefaultVersion, 1)
	c.heartbeat = workflow.GetVersion(ctx, compareHeartbeatChange, workflow.DefaultVersion, 1) >= 1
	var a *activities.Activities
	in := &c.in
	if in.Pairs <= 0 {
		in.Pairs = DefaultPairs
	}
	if in.RoundDuration <= 0 || in.Window <= 0 || Slots(in.RoundDuration, in.Window) == 0 {
		return c.res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round duration %s and window %s give no window to drive", in.RoundDuration, in.Window), ErrTypeCompareFailed, nil)
	}
	begin := activities.CompareBeginInput{ComparisonID: in.ComparisonID, WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID}
	if err := workflow.ExecuteActivity(c.general(ctx), a.CompareBegin, begin).Get(ctx, nil); err != nil {
		return c.res, err
	}
	if err := c.claimHost(ctx); err != nil {
		return c.res, err
	}

	for _, side := range []store.Side{store.SideA, store.SideB} {
		var b store.Build
		prep := activities.PrepareSideInput{ComparisonID: in.ComparisonID, Side: side, Provider: in.Provider}
		if err := workflow.ExecuteActivity(c.onHost(ctx, provisionTimeout), a.PrepareSide, prep).Get(ctx, &b); err != nil {
			return c.res, err
		}
		c.builds[side] = b
	}

	c.res.Equivalence = equivalence.Skipped
	if in.Equivalence > 0 {
		var eq equivalence.Result
		ein := activities.EquivalenceInput{
			ComparisonID: in.ComparisonID, Requests: in.Equivalence, Seed: PairSeed(in.Seed, -1),
			Provider: in.Provider, TargetEnv: in.TargetEnv, A: c.builds[store.SideA], B: c.builds[store.SideB],
		}
		if err := workflow.ExecuteActivity(c.onHost(ctx, 2*provisionTimeout), a.CheckEquivalence, ein).Get(ctx, &eq); err != nil {
			return c.res, err
		}
		c.res.Equivalence = eq.Status
		if eq.Status == equivalence.Different && !in.AllowDiff {
			return c.res, temporal.NewNonRetryableApplicationError(
				"the builds answer differently: "+describeDifference(eq.FirstDifference)+" (--allow-diff compares them anyway)", ErrTypeCompareFailed, nil)
		}
	}

	vin := activities.VerdictsInput{ComparisonID: in.ComparisonID, Warmup: in.Warmup, Options: in.Verdict, Host: c.host}
	if in.AutoPairs && workflow.GetVersion(ctx, compareSequentialChange, workflow.DefaultVersion, 1) >= 1 {
		seq, err := c.runSequential(ctx)
		if err != nil {
			return c.res, err
		}
		// A time limit is not a look at the data: the last look may spend
		// the α the looks after it would have.
		seq.SpendRest = c.res.Stopped == StoppedMaxDuration
		vin.Sequential, vin.Final, vin.Stopped = &seq, true, c.res.Stopped
	} else {
		plan := PlanRounds(in.Pairs, in.Order, in.Seed)
		for _, p := range plan {
			if err := c.runRound(ctx, p, nil); err != nil {
				return c.res, err
			}
		}
		if in.RerunDisturbed {
			if err := c.rerunDisturbed(ctx, plan); err != nil {
				return c.res, err
			}
		}
	}

	vr, err := c.verdicts(ctx, vin)
	if err != nil {
		return c.res, err
	}
	c.res.Verdicts = vr
	c.res.Status = store.Completed
	return c.res, nil
}

// verdicts runs CompareVerdicts.
func (c *comparison) verdicts(ctx workflow.Context, vin activities.VerdictsInput) (activities.VerdictsResult, error) {
	var a *activities.Activities
	var vr activities.VerdictsResult
	vctx := storeBound(ctx, 10*time.Minute)
	err := workflow.ExecuteActivity(vctx, a.CompareVerdicts, vin).Get(ctx, &vr)
	return vr, err
}

// compareSequentialChange: version 1 adds pairs until decided when
// CompareInput.AutoPairs is set (runSequential); comparisons started before
// it ran their fixed pairs.
const compareSequentialChange = "compare-sequential"

// runSequential runs pairs one at a time, looks at the verdicts after each
// from the first that can decide (CompareVerdicts with the sequential
// rule, which records the look), and stops when every primary metric is
// decided, at the pair limit, or before a pair that would overrun
// MaxDuration. It sets the result's Pairs and Stopped and returns the rule's
// options for the final verdicts.
func (c *comparison) runSequential(ctx workflow.Context) (analysis.SequentialOptions, error) {
	var a *activities.Activities
	in := &c.in
	seq := analysis.SequentialOptions{MaxPairs: in.MaxPairs}
	if seq.MaxPairs <= 0 {
		seq.MaxPairs = analysis.DefaultMaxPairs
	}
	reruns := 0
	if in.RerunDisturbed {
		reruns = in.MaxReruns
		if reruns <= 0 {
			reruns = seq.MaxPairs
		}
	}
	var history int
	hin := activities.HistoryInput{ComparisonID: in.ComparisonID, Host: c.host}
	if err := workflow.ExecuteActivity(c.general(ctx), a.CompareHistory, hin).Get(ctx, &history); err != nil {
		return seq, err
	}
	if history == 0 {
		workflow.GetLogger(ctx).Info("no earlier comparison of this scenario on this host to pool noise with; this one's noise is kept for the next")
	}
	start := workflow.GetInfo(ctx).WorkflowStartTime
	look := activities.VerdictsInput{ComparisonID: in.ComparisonID, Warmup: in.Warmup, Options: in.Verdict, Host: c.host, Sequential: &seq}
	var pairTime time.Duration
	for pair := 0; ; pair++ {
		begun := workflow.Now(ctx)
		// The plan of pair p does not depend on how many follow it.
		for _, p := range PlanRounds(pair+1, in.Order, in.Seed)[2*pair:] {
			if err := c.runRound(ctx, p, nil); err != nil {
				return seq, err
			}
		}
		pairTime = workflow.Now(ctx).Sub(begun)
		var rounds time.Duration // as the activities timed them
		for _, r := range c.rounds[max(len(c.rounds)-2, 0):] {
			if !r.StartedAt.IsZero() && r.EndedAt.After(r.StartedAt) {
				rounds += r.EndedAt.Sub(r.StartedAt)
			}
		}
		pairTime = max(pairTime, rounds)
		taken := pair + 1
		c.res.Pairs = taken
		if taken >= analysis.DefaultMinPairs {
			vr, err := c.verdicts(ctx, look)
			if err != nil {
				return seq, err
			}
			if vr.Decided {
				c.res.Stopped = StoppedDecided
				return seq, nil
			}
		}
		if taken >= seq.MaxPairs+min(c.disturbedPairs(), reruns) {
			c.res.Stopped = StoppedMaxPairs
			return seq, nil
		}
		if in.MaxDuration > 0 && taken >= analysis.DefaultMinPairs && workflow.Now(ctx).Add(pairTime).Sub(start) > in.MaxDuration {
			c.res.Stopped = StoppedMaxDuration
			return seq, nil
		}
	}
}

// disturbedPairs counts the pairs with a disturbed round.
func (c *comparison) disturbedPairs() int {
	pairs := map[int]bool{}
	for _, r := range c.rounds {
		if r.Disturbed {
			pairs[r.Pair] = true
		}
	}
	return len(pairs)
}

// claimHost picks the host every round runs on: a measurement slot the
// comparison holds for all its rounds (version 0: whichever worker took the
// HostQueue activity from the general queue). The rounds, child soaks given
// the host, claim none of their own.
func (c *comparison) claimHost(ctx workflow.Context) error {
	var a *activities.Activities
	if workflow.GetVersion(ctx, slotsChange, workflow.DefaultVersion, 1) >= 1 {
		g, err := claimSlot(ctx, c.in.ComparisonID, store.Running, c.setStatus)
		if err != nil {
			return err
		}
		c.host, c.holdsSlot = g.HostQueue, true
		return nil
	}
	return workflow.ExecuteActivity(c.general(ctx), a.HostQueue).Get(ctx, &c.host)
}

func (c *comparison) setStatus(ctx workflow.Context, st store.Status, reason string) error {
	var a *activities.Activities
	in := activities.ComparisonStatusInput{ComparisonID: c.in.ComparisonID, Status: st, Reason: reason}
	return workflow.ExecuteActivity(c.general(ctx), a.SetComparisonStatus, in).Get(ctx, nil)
}

// runRound runs one round as a child soak and records how it went.
func (c *comparison) runRound(ctx workflow.Context, p PlannedRound, supersede []int) error {
	var a *activities.Activities
	in := &c.in
	idx := len(c.rounds)
	r := store.Round{Index: idx, Pair: p.Pair, Side: p.Side, RunID: activities.RoundRunID(in.ComparisonID, idx), Seed: int64(p.Seed)}
	start := activities.StartRoundInput{ComparisonID: in.ComparisonID, Round: r, Supersede: supersede}
	if err := workflow.ExecuteActivity(c.general(ctx), a.StartRound, start).Get(ctx, nil); err != nil {
		return err
	}
	b := c.builds[p.Side]
	env := maps.Clone(in.TargetEnv)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, b.Env)
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:          activities.RoundWorkflowID(in.ComparisonID, idx),
		TaskQueue:           activities.GeneralQueue,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
	})
	soak := SoakInput{
		RunID: r.RunID, Name: in.Name, Duration: in.RoundDuration, Window: in.Window,
		Provider: in.Provider, TargetEnv: env, HostQueue: c.host, Seed: p.Seed, Build: &b,
	}
	var sr SoakResult
	runErr := workflow.ExecuteChildWorkflow(child, WorkflowName, soak).Get(ctx, &sr)
	status, reason := store.Completed, ""
	switch {
	case runErr != nil && (temporal.IsCanceledError(runErr) || ctx.Err() != nil):
		status, reason = store.Cancelled, "cancelled"
	case runErr != nil:
		status, reason = store.Failed, failureReason(runErr)
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	fin := activities.FinishRoundInput{
		ComparisonID: in.ComparisonID, Round: r, Status: status, Reason: reason,
		DisturbedAbove: c.disturbedAbove(), Warmup: in.Warmup,
	}
	if err := workflow.ExecuteActivity(c.general(dctx), a.FinishRound, fin).Get(dctx, &r); err != nil {
		workflow.GetLogger(ctx).Error("recording a round failed", "round", idx, "error", err)
		r.Status, r.Reason = status, reason
	}
	c.rounds = append(c.rounds, r)
	c.res.Rounds++
	if r.Disturbed {
		c.res.Disturbed++
	}
	if runErr != nil {
		if status == store.Cancelled {
			return runErr
		}
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d (pair %d, %s) failed: %s", idx+1, p.Pair+1, p.Side, reason), ErrTypeCompareFailed, nil)
	}
	return nil
}

func (c *comparison) disturbedAbove() float64 {
	switch {
	case c.in.DisturbedAbove < 0:
		return 0 // never
	case c.in.DisturbedAbove == 0:
		return DefaultDisturbedAbove
	}
	return c.in.DisturbedAbove
}

// rerunDisturbed reruns, in pair order, every pair whose current rounds
// include a disturbed one, at most MaxReruns pairs in all (a rerun that is
// disturbed again may be rerun again while the budget lasts).
func (c *comparison) rerunDisturbed(ctx workflow.Context, plan []PlannedRound) error {
	budget := c.in.MaxReruns
	if budget <= 0 {
		budget = c.in.Pairs
	}
	for budget > 0 {
		pair, ok := c.firstDisturbedPair()
		if !ok {
			return nil
		}
		var old []int
		for i := range c.rounds {
			if c.rounds[i].Pair == pair && !c.rounds[i].Superseded {
				old = append(old, c.rounds[i].Index)
				c.rounds[i].Superseded = true
			}
		}
		budget--
		c.res.Reruns++
		workflow.GetLogger(ctx).Info("rerunning a disturbed pair", "pair", pair+1)
		first := true
		for _, p := range plan {
			if p.Pair != pair {
				continue
			}
			var sup []int
			if first {
				sup, first = old, false
			}
			if err := c.runRound(ctx, p, sup); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *comparison) firstDisturbedPair() (int, bool) {
	best := -1
	for _, r := range c.rounds {
		if r.Disturbed && !r.Superseded && (best < 0 || r.Pair < best) {
			best = r.Pair
		}
	}
	return best, best >= 0
}

// finish records the final status (in a disconnected context, so a
// cancelled comparison is recorded too) and maps the outcome to the result.
func (c *comparison) finish(ctx workflow.Context, runErr error) (CompareResult, error) {
	var a *activities.Activities
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	res := c.res
	switch {
	case ctx.Err() != nil || (runErr != nil && temporal.IsCanceledError(runErr)):
		res.Status, res.Reason = store.Cancelled, "cancelled by request"
	case runErr != nil:
		res.Status, res.Reason = store.Failed, failureReason(runErr)
	default:
		res.Status = store.Completed
	}
	sctx := storeBound(dctx, generalTimeout)
	st := activities.ComparisonStatusInput{ComparisonID: c.in.ComparisonID, Status: res.Status, Reason: res.Reason}
	if err := workflow.ExecuteActivity(sctx, a.SetComparisonStatus, st).Get(sctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("recording the comparison's status failed", "status", res.Status, "error", err)
	}
	if c.holdsSlot {
		releaseSlot(dctx, c.in.ComparisonID)
	}
	switch res.Status {
	case store.Cancelled:
		return res, temporal.NewCanceledError(res)
	case store.Failed:
		return res, temporal.NewNonRetryableApplicationError(res.Reason, ErrTypeCompareFailed, nil, res)
	}
	return res, nil
}

// describeDifference is a difference in one line: request 17 (list GET
// /items?bucket=3): $.cursor: A (absent), B null.
func describeDifference(d *equivalence.Difference) string {
	if d == nil {
		return "no details"
	}
	where := d.JSONPath
	if where == "" {
		where = d.What
	}
	return fmt.Sprintf("request %d (%s %s %s): %s: A %s, B %s", d.Request, d.Op, d.Method, d.Path, where, d.A, d.B)
}
