package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/devserver"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/workflows"
)

// The flags that run, compare and schedule share are defined once, a set
// per concern, registered by every command the set applies to: a flag
// added to a set appears wherever the set is. A flag's help says what it
// does on its command (a schedule's act at each firing), so register takes
// the command.
//
//	clusterFlags  --temporal --namespace         run, compare, schedule *
//	outputFlags   --format, following the work   run, compare; schedule *: --format
//	loadFlags     --duration --window            run, schedule create/update; compare: --window
//	envFlags      --provider --target-env        run, schedule create/update; compare: --provider
//	sideFlags     --a --b --a-image ...          compare, schedule create --compare
//	roundFlags    --pairs --order --warmup ...   compare, schedule create --compare
//	storeFlags    --data --store                 every command that reads or writes results
//	failOnFlag    --fail-on                      run, report, schedule create/update

// command is the command a flag set is registered on.
type command int

const (
	onRun command = iota
	onCompare
	onSchedule        // schedule create and update (and the other subcommands' --temporal)
	onScheduleCompare // schedule create --compare: the comparison of each firing
)

// pick is the help (or default) on run and compare, else on a schedule.
func (c command) pick(now, scheduled string) string {
	if c >= onSchedule {
		return scheduled
	}
	return now
}

// compareHelp is a comparison flag's help: text with nowNote on compare,
// and on a schedule "with --compare: " text with scheduledNote.
func (c command) compareHelp(text, nowNote, scheduledNote string) string {
	return c.pick(text+nowNote, "with --compare: "+text+scheduledNote)
}

// clusterFlags are the Temporal cluster the command submits to. On run and
// compare the default is an embedded server in this process; a schedule
// lives in a server that keeps running, 'longhaul dev' by default.
type clusterFlags struct {
	temporal  string
	namespace string
}

func (f *clusterFlags) register(fs *pflag.FlagSet, on command) {
	fs.StringVar(&f.temporal, "temporal", on.pick("", fmt.Sprintf("127.0.0.1:%d", devserver.DefaultPort)),
		"Temporal frontend HOST:PORT"+on.pick(" (default: an embedded server in this process)", ": a cluster, or 'longhaul dev' (which must be running for a schedule to fire)"))
	fs.StringVar(&f.namespace, "namespace", "default", "Temporal namespace")
}

// outputFlags are what a command prints and serves. Run and compare follow
// what they submitted (--detach, the live UI, --verbose, --metrics-addr); a
// schedule subcommand only prints (--format).
type outputFlags struct {
	format      string
	detach      bool
	uiAddr      string
	verbose     bool
	metricsAddr string
}

func (f *outputFlags) register(fs *pflag.FlagSet, on command) {
	if on >= onSchedule {
		fs.StringVar(&f.format, "format", "text", "output: text or json")
		return
	}
	// what is followed; items what the JSON output holds before its last object.
	what, items, last := "run", "windows", "report"
	if on == onCompare {
		what, items, last = "comparison", "rounds", "comparison"
	}
	fs.BoolVar(&f.detach, "detach", false, "submit the "+what+" and return without following it")
	fs.StringVar(&f.format, "format", "text", "output: text, or json (NDJSON "+items+", then one "+last+" object)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve worker and run metrics at http://ADDR/metrics")
	uiAddrFlag(fs, &f.uiAddr, "127.0.0.1:0", "while following the "+what+", serve the browser UI on HOST:PORT (default a free port)")
	verboseFlag(fs, &f.verbose)
}

// submitFlags are how run and compare submit and follow: the cluster, the
// output and the store.
type submitFlags struct {
	clusterFlags
	outputFlags
	storeFlags
}

func (f *submitFlags) register(fs *pflag.FlagSet, on command) {
	f.clusterFlags.register(fs, on)
	f.outputFlags.register(fs, on)
	f.storeFlags.register(fs)
}

// scheduled are the submit flags with which run's and compare's checks
// judge a schedule's action: ${env:...} resolve on the worker at each
// firing, not here.
func scheduled() submitFlags {
	return submitFlags{clusterFlags: clusterFlags{temporal: "schedule"}, outputFlags: outputFlags{format: "text"}}
}

// loadFlags are how long a soak drives load and how its results are cut. A
// comparison's length is its rounds' (roundFlags): compare has --window only.
type loadFlags struct {
	duration time.Duration
	window   time.Duration
}

func (f *loadFlags) register(fs *pflag.FlagSet, on command) {
	window := "length of one result window"
	if on == onCompare {
		window = "length of one window"
	} else {
		fs.DurationVar(&f.duration, "duration", 0, on.pick("how long to drive load", "how long each run drives load")+" (default: the scenario's load.duration)")
	}
	fs.DurationVar(&f.window, "window", 0, window+" (default: the scenario's load.window)")
}

// envFlags are the environment a soak provisions: the provider and the
// target's environment (a comparison's sides have their own: sideFlags).
type envFlags struct {
	provider  string
	targetEnv []string
}

func (f *envFlags) register(fs *pflag.FlagSet, on command) {
	providers := map[command]string{
		onRun:      "local, docker, auto, or url (drive the scenario's running environment.target.url, start nothing)",
		onCompare:  "local, docker or auto",
		onSchedule: "local, docker, auto or url",
	}[on]
	fs.StringVar(&f.provider, "provider", "", "environment provider: "+providers+" (default: the scenario's)")
	if on == onCompare {
		return
	}
	fs.StringArrayVar(&f.targetEnv, "target-env", nil, "KEY=VALUE added to the target's environment "+on.pick("(repeatable)", "(repeatable; on update, added to the schedule's)"))
}

// sideFlags are the two builds a comparison runs: A (the baseline) and B,
// each a git ref, an image or the scenario's build, with its own env.
type sideFlags struct {
	a, b           string
	aImage, bImage string
	aEnv, bEnv     []string
}

func (f *sideFlags) register(fs *pflag.FlagSet, on command) {
	for _, s := range []struct {
		flag       string
		ref, image *string
		env        *[]string
	}{{"a", &f.a, &f.aImage, &f.aEnv}, {"b", &f.b, &f.bImage, &f.bEnv}} {
		side := "side " + strings.ToUpper(s.flag)
		fs.StringVar(s.ref, s.flag, "", on.compareHelp(side+" is this git ref of target.build", "", " (resolved at each firing)"))
		fs.StringVar(s.image, s.flag+"-image", "", on.compareHelp(side+" is this image", " (docker provider)", ""))
		fs.StringArrayVar(s.env, s.flag+"-env", nil, on.compareHelp("KEY=VALUE added to "+side+"'s target environment", " (repeatable)", ""))
	}
}

// roundFlags are how a comparison runs its rounds and decides: pairs,
// order, length, the equivalence check and disturbed rounds. A schedule's
// comparisons stop at the default --max-pairs and decide on the default
// metrics.
type roundFlags struct {
	pairs          string
	maxPairs       int
	maxDuration    time.Duration
	decideOn       string
	order          string
	roundDuration  time.Duration
	warmup         time.Duration
	equivalence    string
	allowDiff      bool
	rerunDisturbed bool
	disturbedAbove string
}

func (f *roundFlags) register(fs *pflag.FlagSet, on command) {
	if on == onCompare {
		fs.IntVar(&f.maxPairs, "max-pairs", analysis.DefaultMaxPairs, "with --pairs auto: the most pairs")
		fs.DurationVar(&f.maxDuration, "max-duration", 0, "with --pairs auto: start no pair that would end later than this after the start (0: no limit)")
		fs.StringVar(&f.decideOn, "decide-on", defaultDecideOn, "the primary metrics: their intervals share the joint coverage and --pairs auto stops when they are decided")
	} else {
		f.maxPairs, f.decideOn = analysis.DefaultMaxPairs, defaultDecideOn
	}
	fs.StringVar(&f.pairs, "pairs", on.pick("auto", strconv.Itoa(workflows.DefaultPairs)), on.pick(
		"pairs of rounds, or auto: add pairs until the --decide-on metrics are decided (docs/statistics-sequential.md)",
		"with --compare: pairs of rounds, or auto (until decided, at most 10)"))
	fs.StringVar(&f.order, "order", workflows.OrderABBA, on.compareHelp("order of each pair's rounds: abba, ab or random", "", ""))
	fs.DurationVar(&f.roundDuration, "round-duration", 0, on.compareHelp("length of one round (default: the scenario's load.duration)", "", ""))
	fs.DurationVar(&f.warmup, "warmup", 0, on.compareHelp("start of each round left out of its values", " (default: the scenario's load.warmup)", ""))
	fs.StringVar(&f.equivalence, "equivalence", strconv.Itoa(workflows.DefaultEquivalenceRequests), on.compareHelp("requests of the response-equivalence check, or off", "", ""))
	fs.BoolVar(&f.allowDiff, "allow-diff", false, on.compareHelp("compare the builds even when their responses differ", "", ""))
	fs.BoolVar(&f.rerunDisturbed, "rerun-disturbed", false, on.pick(
		"rerun pairs with a round disturbed by foreign load on the host (at most --pairs reruns)",
		"with --compare: rerun pairs with a disturbed round"))
	fs.StringVar(&f.disturbedAbove, "disturbed-above", strconv.FormatFloat(workflows.DefaultDisturbedAbove, 'f', -1, 64), on.pick(
		"a round whose foreign load (CPU busy with neither the target, its database nor longhaul) is above this share of the host is disturbed, or off",
		"with --compare: foreign-load share above which a round is disturbed, or off"))
}

// verboseFlag, pushURLFlag and uiAddrFlag: run's and compare's flags that
// dev, worker and server have too, with their own default or subject.
func verboseFlag(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "verbose", false, "also show Temporal's own log lines (SDK and server) on stderr; they are always in DATA/"+datadir.TemporalLogFile)
}

func pushURLFlag(fs *pflag.FlagSet, p *string, what string) {
	fs.StringVar(p, "push-url", "", what+" (VictoriaMetrics: http://HOST:8428/api/v1/import/prometheus)")
}

func uiAddrFlag(fs *pflag.FlagSet, p *string, def, what string) {
	fs.StringVar(p, "ui-addr", def, what+" ('off': no UI; a non-loopback address needs $LONGHAUL_UI_TOKEN)")
}

// failOnFlag is --fail-on, shared by the commands that start runs (run,
// and schedules).
type failOnFlag struct{ value string }

func (f *failOnFlag) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.value, "fail-on", "", "fail the gate (exit 3) when a finding is at least this severe: warning, critical, or none (the default)")
}

// severity is the flag's severity ("" for none); a bad value is bad input.
func (f failOnFlag) severity() (analysis.Severity, error) {
	s, err := thresholds.ParseFailOn(f.value)
	return s, asBadInput(err)
}

// storeFlags are the flags of every command that reads or writes results:
// --data DIR (the data directory) and --store FILE|DSN (the result store).
type storeFlags struct {
	data  string
	store string
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.data, "data", "", "data directory (default $XDG_DATA_HOME/longhaul or ~/.local/share/longhaul)")
	fs.StringVar(&f.store, "store", "", "result store: a SQLite file or a postgres:// URL (default $LONGHAUL_STORE, else DATA/"+datadir.StoreFile+")")
}
