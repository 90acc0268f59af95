package scenarios

import (
	"fmt"
	"math"
	"net"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/longhaul-dev/longhaul/equivalence"
)

// Validate checks s as Parse does and fills in the same defaults. Use it on a
// scenario built in Go, decoded from JSON, or changed after parsing (say, by
// command-line overrides of its load); zero values count as "not given".
// Problems are returned as Errors, located by each step's Line when known.
func (s *Scenario) Validate() error {
	el := &errorList{file: s.Source}
	v := validator{el: el, s: s}
	v.validate()
	return el.err()
}

// validator checks a decoded scenario, fills in defaults, and reports every
// problem with the line of the value it concerns.
type validator struct {
	el  *errorList
	loc locator
	s   *Scenario

	varUses, poolUses []ref
	capVars, capPools map[string]bool
}

// ref is a use of a variable or pool in a template.
type ref struct {
	name string
	path []any
}

func (v *validator) errf(path []any, format string, args ...any) {
	line, col := v.loc.at(path...)
	if v.loc.root == nil && len(path) >= 2 {
		// No YAML tree (Validate on a scenario built in code or decoded from
		// JSON): the step's recorded line is the best there is.
		if i, ok := path[1].(int); ok {
			switch {
			case path[0] == "setup" && i < len(v.s.Setup):
				line = v.s.Setup[i].Line
			case path[0] == "ops" && i < len(v.s.Ops):
				line = v.s.Ops[i].Line
			case path[0] == "thresholds" && i < len(v.s.Thresholds):
				line = v.s.Thresholds[i].Line
			}
		}
	}
	v.el.addf(line, col, format, args...)
}

// has reports whether the key at path is written in the file.
func (v *validator) has(path ...any) bool {
	if len(path) == 0 {
		return true
	}
	parent := v.loc.root
	for _, p := range path[:len(path)-1] {
		if parent = child(parent, p); parent == nil {
			return false
		}
	}
	k, ok := path[len(path)-1].(string)
	return ok && mapKey(parent, k, 0) != nil
}

func p(elems ...any) []any { return elems }

// join appends elems to a copy of base.
func join(base []any, elems ...any) []any {
	return append(slices.Clip(base), elems...)
}

func (v *validator) validate() {
	s := v.s
	v.capVars, v.capPools = map[string]bool{}, map[string]bool{}
	if strings.TrimSpace(s.Name) == "" {
		v.errf(p("name"), "name is required (name: my-scenario)")
	}
	v.validateLoad()
	for i := range s.Setup {
		st := &s.Setup[i]
		if st.Name == "" {
			st.Name = fmt.Sprintf("setup-%d", i+1)
		}
		v.validateStep(p("setup", i), st)
	}
	if len(s.Ops) == 0 {
		v.errf(p("ops"), "at least one op is required (ops: - name: ..., weight: 1, request: {path: /})")
	}
	names := map[string]int{}
	for i := range s.Ops {
		op := &s.Ops[i]
		base := p("ops", i)
		if strings.TrimSpace(op.Name) == "" {
			v.errf(join(base, "name"), "op %d has no name", i+1)
		} else if first, dup := names[op.Name]; dup {
			v.errf(join(base, "name"), "op name %q is used twice (first by op %d)", op.Name, first+1)
		} else {
			names[op.Name] = i
		}
		switch {
		case op.Weight == 0 && !v.has(join(base, "weight")...):
			op.Weight = 1
		case op.Weight < 1:
			v.errf(join(base, "weight"), "op %q: weight must be ≥ 1, got %d", op.Name, op.Weight)
		}
		v.validateStep(base, &op.Step)
	}
	for _, u := range v.varUses {
		if !v.capVars[u.name] {
			v.errf(u.path, "variable %s is never captured (add capture: [{json: FIELD, var: %s}] to a setup step or op)", u.name, u.name)
		}
	}
	for _, u := range v.poolUses {
		if !v.capPools[u.name] {
			v.errf(u.path, "pool %q is never filled (add capture: [{json: FIELD, pool: %s}] to an op)", u.name, u.name)
		}
	}
	v.validateEnvironment()
	v.validateProbes()
	v.validateThresholds()
	if c := v.s.Compare; c != nil {
		for i, path := range c.Ignore {
			if err := equivalence.CheckIgnore(path); err != nil {
				v.errf(p("compare", "ignore", i), "%v", err)
			}
		}
	}
}

func (v *validator) validateLoad() {
	l := &v.s.Load
	lp := func(k ...any) []any { return join(p("load"), k...) }
	if l.VUs < 0 {
		v.errf(lp("vus"), "vus must be ≥ 1, got %d", l.VUs)
	}
	if l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) {
		v.errf(lp("rate"), "rate must be a positive number of iterations per second, got %v", l.Rate)
	}
	if l.MaxVUs < 0 {
		v.errf(lp("max_vus"), "max_vus must be ≥ 1, got %d", l.MaxVUs)
	}
	if l.VUs > 0 && (l.Rate > 0 || l.MaxVUs > 0) {
		v.errf(lp("vus"), "vus (closed model) and rate/max_vus (open model) exclude each other; keep one")
	}
	if l.MaxVUs > 0 && l.Rate == 0 && len(l.Stages) == 0 {
		v.errf(lp("max_vus"), "max_vus needs rate (iterations per second) or stages: the open model")
	}
	open := l.Open()
	var staged time.Duration
	for i, st := range l.Stages {
		sp := lp("stages", i)
		if st.Duration <= 0 {
			v.errf(join(sp, "duration"), "stage %d: duration must be > 0", i+1)
		}
		staged += st.Duration.D()
		switch {
		case st.Target < 0 || math.IsNaN(st.Target) || math.IsInf(st.Target, 0):
			v.errf(join(sp, "target"), "stage %d: target must be ≥ 0, got %v", i+1, st.Target)
		case !open && st.Target != math.Trunc(st.Target):
			v.errf(join(sp, "target"), "stage %d: target is a number of VUs (closed model), got %v", i+1, st.Target)
		}
	}
	if open {
		if l.MaxVUs == 0 {
			l.MaxVUs = DefaultMaxVUs
		}
	} else if l.VUs == 0 && len(l.Stages) == 0 {
		l.VUs = DefaultVUs
	}

	if l.Duration < 0 || (l.Duration == 0 && v.has("load", "duration")) {
		v.errf(lp("duration"), "duration must be > 0, got %s", l.Duration)
	} else if l.Duration == 0 {
		l.Duration = DefaultDuration
		if staged > 0 {
			l.Duration = Duration(staged)
		}
	}
	if staged > l.Duration.D() && l.Duration > 0 {
		v.errf(lp("stages"), "stages last %s, longer than duration %s", staged, l.Duration)
	}
	if l.Window < 0 || (l.Window == 0 && v.has("load", "window")) {
		v.errf(lp("window"), "window must be > 0, got %s", l.Window)
	} else if l.Window == 0 {
		l.Window = min(DefaultWindow, l.Duration)
	}
	if l.Window > l.Duration && l.Duration > 0 {
		v.errf(lp("window"), "window %s is longer than duration %s", l.Window, l.Duration)
	}
	if l.Warmup < 0 {
		v.errf(lp("warmup"), "warmup must be ≥ 0, got %s", l.Warmup)
	} else if l.Warmup >= l.Duration && l.Duration > 0 {
		v.errf(lp("warmup"), "warmup %s must be shorter than duration %s", l.Warmup, l.Duration)
	}
	if l.Timeout < 0 || (l.Timeout == 0 && v.has("load", "timeout")) {
		v.errf(lp("timeout"), "timeout must be > 0, got %s", l.Timeout)
	} else if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// headersSetByDriver are headers a scenario may not set.
var headersSetByDriver = []string{"Content-Length", "Transfer-Encoding", "Connection", "Host"}

func (v *validator) validateStep(base []any, st *Step) {
	label := fmt.Sprintf("op %q", st.Name)
	if base[0] == "setup" {
		label = fmt.Sprintf("setup step %q", st.Name)
	}
	if st.WebSocket != nil {
		v.validateWebSocket(base, st, label)
		return
	}
	r := &st.Request
	rp := join(base, "request")
	if v.loc.root != nil && !v.has(join(base, "request")...) {
		v.errf(base, "%s: request is required (request: {method: GET, path: /items})", label)
	}
	if r.Method == "" {
		r.Method = "GET"
	} else if m := strings.ToUpper(r.Method); slices.Contains(methods, m) {
		r.Method = m
	} else {
		v.errf(join(rp, "method"), "%s: method %q is not one of %s", label, r.Method, strings.Join(methods, ", "))
	}
	switch {
	case r.Path == "":
		if v.loc.root == nil || v.has(rp...) {
			v.errf(rp, "%s: request.path is required (path: /items)", label)
		}
	case !strings.HasPrefix(r.Path, "/"):
		v.errf(join(rp, "path"), "%s: path must start with \"/\" (the target's URL is given separately), got %q", label, r.Path)
	default:
		for _, pt := range v.template(join(rp, "path"), r.Path) {
			if pt.kind == partLit && strings.ContainsAny(pt.text, " \t\r\n#") {
				v.errf(join(rp, "path"), "%s: path must not contain spaces or \"#\" (a value inserted by a template is escaped)", label)
				break
			}
		}
	}
	for _, k := range sortedKeys(r.Query) {
		if k == "" {
			v.errf(join(rp, "query"), "%s: query has an empty key", label)
		}
		v.template(join(rp, "query", k), r.Query[k])
	}
	for _, k := range sortedKeys(r.Headers) {
		hp := join(rp, "headers", k)
		switch {
		case !validHeaderKey(k):
			v.errf(hp, "%s: %q is not a valid header name", label, k)
		case slices.Contains(headersSetByDriver, textproto.CanonicalMIMEHeaderKey(k)):
			v.errf(hp, "%s: header %s is set by the driver", label, k)
		}
		v.template(hp, r.Headers[k])
	}
	if r.JSON != nil && r.Body != "" {
		v.errf(join(rp, "body"), "%s: request has both json and body; keep one", label)
	}
	if r.Body != "" {
		v.template(join(rp, "body"), r.Body)
	}
	if r.JSON != nil {
		r.JSON = v.jsonValue(join(rp, "json"), r.JSON, 0)
	}
	for i, c := range st.Capture {
		cp := join(base, "capture", i)
		switch {
		case c.JSON == "":
			v.errf(cp, "%s: capture %d needs json: the dotted path of a response field (e.g. data.token)", label, i+1)
		case slices.Contains(strings.Split(c.JSON, "."), ""):
			v.errf(join(cp, "json"), "%s: capture json %q has an empty path element", label, c.JSON)
		}
		switch {
		case c.Var == "" && c.Pool == "":
			v.errf(cp, "%s: capture %d needs var (a VU variable) or pool (a shared pool)", label, i+1)
		case c.Var != "" && c.Pool != "":
			v.errf(join(cp, "pool"), "%s: capture %d has both var and pool; keep one", label, i+1)
		case c.Var != "":
			if !identRE.MatchString(c.Var) {
				v.errf(join(cp, "var"), "%s: %q is not a variable name (letters, digits, _)", label, c.Var)
			}
			v.capVars[c.Var] = true
		default:
			v.capPools[c.Pool] = true
		}
		if c.Each && c.Pool == "" {
			v.errf(join(cp, "each"), "%s: capture each: true adds every array element to a pool; it needs pool", label)
		}
	}
	for i, code := range st.Expect.Status {
		if code < 100 || code > 599 {
			v.errf(join(base, "expect", "status", i), "%s: expect status %d is not an HTTP status (100..599)", label, code)
		}
	}
	switch {
	case st.Think.Min < 0 || st.Think.Max < 0:
		v.errf(join(base, "think"), "%s: think must be ≥ 0", label)
	case st.Think.Max < st.Think.Min:
		v.errf(join(base, "think"), "%s: think min %s is greater than max %s", label, st.Think.Min, st.Think.Max)
	}
}

// template checks the syntax of a template string and records its variable
// and pool uses.
func (v *validator) template(path []any, s string) []part {
	parts, err := parseTemplate(s)
	if err != nil {
		v.errf(path, "%v", err)
		return nil
	}
	for _, pt := range parts {
		switch pt.kind {
		case partVar:
			v.varUses = append(v.varUses, ref{pt.text, path})
		case partPick, partTake:
			v.poolUses = append(v.poolUses, ref{pt.text, path})
		}
	}
	return parts
}

// jsonValue checks a request's json value (objects with string keys, finite
// numbers, templated strings) and returns it with YAML timestamps turned back
// into the strings they were written as: JSON has no timestamps.
func (v *validator) jsonValue(path []any, x any, depth int) any {
	if depth > MaxDepth {
		v.errf(path, "json nested deeper than %d levels", MaxDepth)
		return x
	}
	switch x := x.(type) {
	case string:
		v.template(path, x)
	case map[string]any:
		for _, k := range sortedKeys(x) {
			x[k] = v.jsonValue(join(path, k), x[k], depth+1)
		}
	case map[any]any:
		v.errf(path, "json object keys must be strings")
	case []any:
		for i, e := range x {
			x[i] = v.jsonValue(join(path, i), e, depth+1)
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			v.errf(path, "json cannot hold %v", x)
		}
	case time.Time:
		if n := v.loc.node(path...); n != nil && n.Kind == yaml.ScalarNode {
			return n.Value
		}
		return x.Format(time.RFC3339Nano)
	case nil, bool, int, int64, uint64, float32:
	default:
		v.errf(path, "json cannot hold a %T", x)
	}
	return x
}

func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var (
	memoryRE     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?\s*([kKmMgGtT]i?[bB]?|[bB])?$`)
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	envNameRE    = identRE
)

var providers = []string{"", "local", "docker", "auto"}

func (v *validator) validateEnvironment() {
	e := &v.s.Environment
	t := &e.Target
	ep := func(k ...any) []any { return join(p("environment"), k...) }
	tp := func(k ...any) []any { return join(ep("target"), k...) }
	if !slices.Contains(providers, e.Provider) {
		v.errf(ep("provider"), "provider %q is not one of local, docker, auto", e.Provider)
	}
	provisioned := t.Image != "" || t.Build != nil || len(t.Command) > 0
	if t.URL != "" {
		if err := checkLoopbackURL(t.URL); err != nil {
			v.errf(tp("url"), "target.url: %v", err)
		}
		if provisioned {
			v.errf(tp("url"), "target.url is an already running target; it excludes image, build and command")
		}
	}
	docker := t.Image != "" || (t.Build != nil && t.Build.Repo != "")
	local := len(t.Command) > 0
	switch e.Provider {
	case "":
		if provisioned {
			v.errf(ep(), "environment.provider is required to build or run the target: local, docker or auto")
		}
	case "docker":
		if !docker {
			v.errf(ep("target"), "the docker provider needs target.image or target.build.repo")
		}
	case "local":
		if !local {
			v.errf(ep("target"), "the local provider needs target.command (the argv of the target process)")
		}
	case "auto":
		if !docker && !local {
			v.errf(ep("target"), "the auto provider needs target.image or target.build.repo (docker) and/or target.command (local)")
		}
	}
	if t.Port < 0 || t.Port > 65535 {
		v.errf(tp("port"), "target.port must be within 0..65535, got %d", t.Port)
	}
	if t.Health != "" && !strings.HasPrefix(t.Health, "/") {
		v.errf(tp("health"), "target.health is a path and must start with \"/\", got %q", t.Health)
	}
	if t.HealthTimeout < 0 {
		v.errf(tp("health_timeout"), "target.health_timeout must be ≥ 0")
	}
	for _, k := range sortedKeys(t.Env) {
		if !envNameRE.MatchString(k) {
			v.errf(tp("env", k), "target.env: %q is not an environment variable name", k)
		}
	}
	if m := t.Resources.Memory; m != "" && !memoryRE.MatchString(m) {
		v.errf(tp("resources", "memory"), "resources.memory %q is not a size (e.g. 512m, 1g)", m)
	}
	if t.Resources.CPUs < 0 {
		v.errf(tp("resources", "cpus"), "resources.cpus must be ≥ 0")
	}
	if t.Resources.PIDs < 0 {
		v.errf(tp("resources", "pids"), "resources.pids must be ≥ 0")
	}
	v.validateRestart(provisioned)
	v.validateProtocol()
	switch e.Database.Kind {
	case "", "none":
	case "postgres", "mysql", "mariadb", "mongodb":
		if e.Provider == "" {
			v.errf(ep("database", "kind"), "database.kind %s needs a provider (local, docker or auto) to run it", e.Database.Kind)
		}
	default:
		v.errf(ep("database", "kind"), "database.kind %q is not one of none, %s", e.Database.Kind, strings.Join(DatabaseKinds, ", "))
	}
}

// validateRestart checks target.restart and fills in its defaults: policy
// on-failure restarts at most max (default DefaultRestartMax) times; "no"
// never does.
func (v *validator) validateRestart(provisioned bool) {
	r := v.s.Environment.Target.Restart
	if r == nil {
		return
	}
	rp := func(k ...any) []any { return join(p("environment", "target", "restart"), k...) }
	switch r.Policy {
	case RestartOnFailure:
		switch {
		case r.Max == 0 && !v.has(rp("max")...):
			r.Max = DefaultRestartMax
		case r.Max < 1 || r.Max > maxRestarts:
			v.errf(rp("max"), "target.restart.max must be within 1..%d (how many times a crashed target is started again), got %d", maxRestarts, r.Max)
		}
		if !provisioned {
			v.errf(rp(), "target.restart needs a target longhaul starts (target.command or target.image), not target.url")
		}
	case RestartNever:
		if r.Max != 0 {
			v.errf(rp("max"), "target.restart.max is for policy on-failure; policy no never restarts")
		}
	case "":
		v.errf(rp("policy"), "target.restart.policy is required: on-failure (start a crashed target again) or no")
	default:
		v.errf(rp("policy"), "target.restart.policy %q is not one of on-failure, no", r.Policy)
	}
}

// maxRestarts bounds target.restart.max: a target that crashes this often
// in one run has told what there is to tell.
const maxRestarts = 100

// checkLoopbackURL accepts http(s) URLs whose host is a loopback address:
// longhaul only ever sends load to the machine it runs on.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an http:// or https:// URL", raw)
	}
	if !IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("host %q is not a loopback address (127.0.0.1, ::1, localhost): longhaul only sends load to this machine", u.Hostname())
	}
	return nil
}

// IsLoopbackHost reports whether host (no port) is "localhost" or an IP
// address in 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Defaults of the heap probe sources.
const (
	DefaultHeapMetricPath = "/metrics"
	DefaultHeapMetricName = "go_gc_heap_live_bytes"
	DefaultGCHookPath     = "/debug/gc"
	DefaultGCHookEvery    = 5
	DefaultInspectorHost  = "127.0.0.1"
	DefaultInspectorPort  = 9229

	// DefaultProfileSeconds, DefaultProfileEvery and DefaultHeapProfileEvery
	// keep a profiled soak's cost well under 2 % of the target's CPU (see
	// bench/profiles): a 5 s CPU profile every 5 windows of 10 s profiles a
	// tenth of the time.
	DefaultProfileSeconds   = 5
	DefaultProfileEvery     = 5
	DefaultHeapProfileEvery = 10
)

func (v *validator) validateProbes() {
	// Probes that cannot apply to an already running target: longhaul
	// neither runs its process nor provisions its database.
	if t := v.s.Environment.Target; t.URL != "" && t.Image == "" && t.Build == nil && len(t.Command) == 0 {
		if pr := v.s.Probes.Process; pr != nil && *pr {
			v.errf(p("probes", "process"), "probes.process is not applicable to a target.url target: longhaul does not run its process, so it cannot read its CPU and RSS; remove process: true, or let longhaul start the target (target.command with provider local)")
		}
	}
	// A scenario without a target (for longhaul drive --target) has nothing
	// to check the database probe against.
	t := v.s.Environment.Target
	hasTarget := t.URL != "" || t.Image != "" || t.Build != nil || len(t.Command) > 0
	if on, set := v.s.Probes.PostgresOn(); hasTarget && set && on && !slices.Contains(DatabaseKinds, v.s.Environment.Database.Kind) {
		v.errf(p("probes", "database"), "probes.database: true samples the database longhaul provisions, and there is none: set environment.database.kind (%s), or remove database: true", strings.Join(DatabaseKinds, ", "))
	}
	if d := v.s.Probes.Database; d != nil && d.Postgres == nil {
		where := p("probes", "database", "sqlite")
		switch path := strings.TrimSpace(d.SQLite); {
		case path == "":
			v.errf(where, "probes.database.sqlite needs the path of the target's SQLite file, e.g. \"{{.EnvDir}}/data.db\"")
		default:
			if _, err := template.New("sqlite").Option("missingkey=error").Parse(d.SQLite); err != nil {
				v.errf(where, "probes.database.sqlite: %v", err)
			}
		}
	}
	v.validateProfile()
	h := v.s.Probes.Heap
	if h == nil {
		return
	}
	hp := func(k ...any) []any { return join(p("probes", "heap"), k...) }
	if h.Metric == nil && h.GCHook == nil && h.Inspector == nil {
		v.errf(hp(), "probes.heap needs at least one of metric, gc_hook, inspector")
	}
	if m := h.Metric; m != nil {
		if m.Path == "" {
			m.Path = DefaultHeapMetricPath
		} else if !strings.HasPrefix(m.Path, "/") {
			v.errf(hp("metric", "path"), "heap.metric.path must start with \"/\", got %q", m.Path)
		}
		if m.Name == "" {
			m.Name = DefaultHeapMetricName
		} else if !metricNameRE.MatchString(m.Name) {
			v.errf(hp("metric", "name"), "heap.metric.name %q is not a Prometheus metric name", m.Name)
		}
	}
	if g := h.GCHook; g != nil {
		if g.Path == "" {
			g.Path = DefaultGCHookPath
		} else if !strings.HasPrefix(g.Path, "/") {
			v.errf(hp("gc_hook", "path"), "heap.gc_hook.path must start with \"/\", got %q", g.Path)
		}
		if g.Every == 0 && !v.has("probes", "heap", "gc_hook", "every") {
			g.Every = DefaultGCHookEvery
		} else if g.Every < 1 {
			v.errf(hp("gc_hook", "every"), "heap.gc_hook.every is a number of windows and must be ≥ 1, got %d", g.Every)
		}
	}
	if in := h.Inspector; in != nil {
		if in.Host == "" {
			in.Host = DefaultInspectorHost
		} else if !IsLoopbackHost(in.Host) {
			// The inspector can run any code in the target: only ever talk to it on loopback.
			v.errf(hp("inspector", "host"), "heap.inspector.host must be a loopback address (127.0.0.1, ::1, localhost), got %q", in.Host)
		}
		if in.Port == 0 && !v.has("probes", "heap", "inspector", "port") {
			in.Port = DefaultInspectorPort
		} else if in.Port < 1 || in.Port > 65535 {
			v.errf(hp("inspector", "port"), "heap.inspector.port must be within 1..65535, got %d", in.Port)
		}
		if in.Every == 0 && !v.has("probes", "heap", "inspector", "every") {
			in.Every = 1
		} else if in.Every < 1 {
			v.errf(hp("inspector", "every"), "heap.inspector.every is a number of windows and must be ≥ 1, got %d", in.Every)
		}
	}
}

func (v *validator) validateProfile() {
	pr := v.s.Probes.Profile
	if pr == nil {
		return
	}
	pp := func(k ...any) []any { return join(p("probes", "profile"), k...) }
	switch {
	case pr.Pprof == "" && !pr.Inspector:
		v.errf(pp(), "probes.profile needs pprof: /debug/pprof (the path of a Go target's net/http/pprof) or inspector: true (a Node.js target's inspector)")
	case pr.Pprof != "" && pr.Inspector:
		v.errf(pp(), "probes.profile takes pprof (a Go target) or inspector (a Node.js target), not both")
	case pr.Inspector:
	case !strings.HasPrefix(pr.Pprof, "/"):
		v.errf(pp("pprof"), "probes.profile.pprof must be a path starting with \"/\", e.g. /debug/pprof, got %q", pr.Pprof)
	}
	if pr.Seconds == 0 && !v.has("probes", "profile", "seconds") {
		pr.Seconds = DefaultProfileSeconds
	} else if pr.Seconds < 1 {
		v.errf(pp("seconds"), "probes.profile.seconds is the length of a CPU profile and must be ≥ 1, got %d", pr.Seconds)
	}
	if pr.Every == 0 && !v.has("probes", "profile", "every") {
		pr.Every = DefaultProfileEvery
	} else if pr.Every < 1 {
		v.errf(pp("every"), "probes.profile.every is a number of windows and must be ≥ 1, got %d", pr.Every)
	}
	if pr.HeapEvery == 0 && !v.has("probes", "profile", "heap_every") {
		pr.HeapEvery = DefaultHeapProfileEvery
	} else if pr.HeapEvery < 1 {
		v.errf(pp("heap_every"), "probes.profile.heap_every is a number of windows and must be ≥ 1, got %d", pr.HeapEvery)
	}
	// Two CPU profiles of one process cannot overlap (Go answers "cpu
	// profiling already in use"): a profile must end before the next starts.
	if w := v.s.Load.Window.D(); w > 0 && pr.Seconds >= 1 && pr.Every >= 1 &&
		time.Duration(pr.Seconds)*time.Second >= time.Duration(pr.Every)*w {
		v.errf(pp("seconds"), "probes.profile.seconds (%d s) must be shorter than every × load.window (%d × %s), or profiles would overlap", pr.Seconds, pr.Every, w)
	}
}
