package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// lines renders Errors as "line: msg" for comparison.
func lines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, want Errors: %v", err, err)
	}
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%d: %s", e.Line, e.Msg))
	}
	return out
}

func TestParseMinimalDefaults(t *testing.T) {
	s, err := LoadFile("hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Name: "hello",
		Load: Load{VUs: 16, Duration: Duration(time.Minute), Window: Duration(10 * time.Second), Timeout: Duration(30 * time.Second)},
		Ops: []Op{{
			Step:   Step{Name: "get", Request: Request{Method: "GET", Path: "/items"}, Line: 3},
			Weight: 1,
		}},
		Source: "hello.yaml",
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("LoadFile(hello.yaml)\n got %+v\nwant %+v", s, want)
	}
}

func TestParseDefaults(t *testing.T) {
	const head = "name: x\nops: [{name: a, request: {path: /}}]\n"
	tests := []struct {
		name string
		yaml string
		want Load
	}{
		{"closed default", head, Load{VUs: 16, Duration: Duration(time.Minute), Window: Duration(10 * time.Second), Timeout: Duration(30 * time.Second)}},
		{"open default max_vus", head + "load: {rate: 50}", Load{Rate: 50, MaxVUs: 100, Duration: Duration(time.Minute), Window: Duration(10 * time.Second), Timeout: Duration(30 * time.Second)}},
		{"short duration shrinks window", head + "load: {vus: 2, duration: 4s}", Load{VUs: 2, Duration: Duration(4 * time.Second), Window: Duration(4 * time.Second), Timeout: Duration(30 * time.Second)}},
		{"stages set duration", head + "load: {stages: [{duration: 30s, target: 8}, {duration: 1m30s, target: 8}]}", Load{
			Stages:   []Stage{{Duration(30 * time.Second), 8}, {Duration(90 * time.Second), 8}},
			Duration: Duration(2 * time.Minute), Window: Duration(10 * time.Second), Timeout: Duration(30 * time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.yaml), "x.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Load, tt.want) {
				t.Errorf("Load\n got %+v\nwant %+v", s.Load, tt.want)
			}
			if got := s.Ops[0]; got.Weight != 1 || got.Request.Method != "GET" {
				t.Errorf("op defaults: weight %d method %q, want 1 GET", got.Weight, got.Request.Method)
			}
		})
	}
}

func TestParseProbeDefaults(t *testing.T) {
	s, err := Parse([]byte("name: x\nops: [{name: a, request: {path: /}}]\nprobes: {heap: {metric: {}, gc_hook: {}, inspector: {}}}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	h := s.Probes.Heap
	got := []any{h.Metric.Path, h.Metric.Name, h.GCHook.Path, h.GCHook.Every, h.Inspector.Host, h.Inspector.Port, h.Inspector.Every}
	want := []any{"/metrics", "go_gc_heap_live_bytes", "/debug/gc", 5, "127.0.0.1", 9229, 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("heap defaults = %v, want %v", got, want)
	}
}

func TestParseProfileDefaults(t *testing.T) {
	s, err := Parse([]byte("name: x\nops: [{name: a, request: {path: /}}]\nprobes: {profile: {pprof: /debug/pprof}}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	got := *s.Probes.Profile
	want := Profile{Pprof: "/debug/pprof", Seconds: 5, Every: 5, HeapEvery: 10}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("profile defaults = %+v, want %+v", got, want)
	}
}

func TestParseThink(t *testing.T) {
	tests := []struct {
		yaml string
		want Think
	}{
		{"think: 100ms", Think{Duration(100 * time.Millisecond), Duration(100 * time.Millisecond)}},
		{"think: {min: 50ms, max: 150ms}", Think{Duration(50 * time.Millisecond), Duration(150 * time.Millisecond)}},
		{"think: {min: 1s}", Think{Duration(time.Second), Duration(time.Second)}},
		{"think: {max: 1s}", Think{0, Duration(time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.yaml, func(t *testing.T) {
			s, err := Parse([]byte("name: x\nops:\n  - name: a\n    request: {path: /}\n    "+tt.yaml+"\n"), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Ops[0].Think; got != tt.want {
				t.Errorf("Think = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParseErrors checks each problem's message and line.
func TestParseErrors(t *testing.T) {
	const ops = "ops: [{name: a, request: {path: /}}]\n"
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"empty", "", []string{"0: file is empty; a scenario needs at least name and ops"}},
		{"not a mapping", "- a\n- b\n", []string{"1: a scenario is a mapping with keys name, load, setup, ops, environment, probes, thresholds, compare; got a list"}},
		{"syntax", "name: x\nops: [\n", []string{"2: did not find expected node content"}},
		{"bad compare.ignore", "name: x\n" + ops + "compare:\n  ignore: [$.ok, items.rank]\n", []string{
			`4: compare.ignore "items.rank": must start with $ (use $.key, $.list[*].key, $.list[0], $..key)`}},
		{"two documents", "name: x\n" + ops + "---\nname: y\n", []string{"3: more than one YAML document; a scenario file holds one"}},
		{"no name, no ops", "load: {vus: 1}\n", []string{
			"1: name is required (name: my-scenario)",
			"1: at least one op is required (ops: - name: ..., weight: 1, request: {path: /})"}},
		{"unknown keys", "name: x\nopz: []\n" + ops + "load: {vu: 3}\n", []string{
			`2: unknown key "opz" in the scenario (known keys: name, load, setup, ops, environment, probes, thresholds, compare)`,
			`4: unknown key "vu" in load (known keys: vus, rate, max_vus, stages, duration, window, warmup, timeout)`}},
		{"wrong types", "name: x\nload:\n  vus: many\n  duration: 5\n  window: soon\n" + ops, []string{
			"3: want a whole number, got a string (many)",
			"4: duration 5 needs a unit, e.g. 5s or 5ms",
			`5: "soon" is not a duration (write e.g. 30s, 500ms, 1h30m)`}},
		{"repeated key", "name: x\nname: y\n" + ops, []string{`2: key "name" repeated (first at line 1)`}},
		{"op problems", `name: x
ops:
  - name: a
    weight: 0
    request: {method: FETCH, path: items}
  - name: a
    weight: -2
    request: {path: /, json: {a: 1}, body: "x"}
  - weight: 1
    request: {path: "/a b"}
`, []string{
			`4: op "a": weight must be ≥ 1, got 0`,
			`5: op "a": method "FETCH" is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`,
			`5: op "a": path must start with "/" (the target's URL is given separately), got "items"`,
			`6: op name "a" is used twice (first by op 1)`,
			`7: op "a": weight must be ≥ 1, got -2`,
			`8: op "a": request has both json and body; keep one`,
			`9: op 3 has no name`,
			`10: op "": path must not contain spaces or "#" (a value inserted by a template is escaped)`}},
		{"missing request", "name: x\nops:\n  - name: a\n", []string{`3: op "a": request is required (request: {method: GET, path: /items})`}},
		{"templates", `name: x
ops:
  - name: a
    request:
      path: /items/{{ pick "items" }}
      headers: {X-Token: "{{ .token }}", X-Bad: "{{ nope }}"}
      query: {n: "{{ randInt 5 }}", m: "{{ randInt 9 1 }}", o: "{{ uuid"}
      json: {a: "{{ pick items }}", b: "${env:}"}
`, []string{
			`5: pool "items" is never filled (add capture: [{json: FIELD, pool: items}] to an op)`,
			`6: variable token is never captured (add capture: [{json: FIELD, var: token}] to a setup step or op)`,
			`6: unknown template function "nope" (known: vu, seq, uuid, randInt, randString, pick, take; variables are written {{ .name }})`,
			`7: randInt takes 2 arguments, got 1`,
			`7: randInt 9 1: MIN is greater than MAX`,
			`7: unclosed {{ (every {{ needs a }})`,
			`8: pick takes a pool name in quotes: {{ pick "items" }}`,
			`8: ${env:}: "" is not an environment variable name`}},
		{"captures", `name: x
ops:
  - name: a
    request: {path: /}
    capture:
      - {var: t}
      - {json: id}
      - {json: id, var: v, pool: p}
      - {json: a..b, var: "1x"}
      - {json: ids, var: w, each: true}
`, []string{
			`6: op "a": capture 1 needs json: the dotted path of a response field (e.g. data.token)`,
			`7: op "a": capture 2 needs var (a VU variable) or pool (a shared pool)`,
			`8: op "a": capture 3 has both var and pool; keep one`,
			`9: op "a": capture json "a..b" has an empty path element`,
			`9: op "a": "1x" is not a variable name (letters, digits, _)`,
			`10: op "a": capture each: true adds every array element to a pool; it needs pool`}},
		{"expect and think", `name: x
ops:
  - name: a
    request: {path: /}
    expect: {status: [200, 42]}
    think: {min: 2s, max: 1s}
`, []string{
			`5: op "a": expect status 42 is not an HTTP status (100..599)`,
			`6: op "a": think min 2s is greater than max 1s`}},
		{"load model", "name: x\n" + ops + "load:\n  vus: 4\n  rate: 10\n  stages: [{duration: 0s, target: -1}, {duration: 1s, target: 1.5}]\n", []string{
			"4: vus (closed model) and rate/max_vus (open model) exclude each other; keep one",
			"6: stage 1: duration must be > 0",
			"6: stage 1: target must be ≥ 0, got -1"}},
		{"closed stage target", "name: x\n" + ops + "load:\n  stages: [{duration: 1s, target: 1.5}]\n", []string{
			"4: stage 1: target is a number of VUs (closed model), got 1.5"}},
		{"max_vus alone", "name: x\n" + ops + "load: {max_vus: 10}\n", []string{
			"3: max_vus needs rate (iterations per second) or stages: the open model"}},
		{"durations", "name: x\n" + ops + "load:\n  duration: 10s\n  window: 20s\n  warmup: 10s\n  timeout: 0s\n  stages: [{duration: 11s, target: 1}]\n", []string{
			"5: window 20s is longer than duration 10s",
			"6: warmup 10s must be shorter than duration 10s",
			"7: timeout must be > 0, got 0s",
			"8: stages last 11s, longer than duration 10s"}},
		{"environment", `name: x
ops: [{name: a, request: {path: /}}]
environment:
  provider: kubernetes
  target:
    url: http://example.com:8080
    image: app:latest
    port: 70000
    health: healthz
    resources: {memory: lots}
  database: {kind: oracle}
`, []string{
			`4: provider "kubernetes" is not one of local, docker, auto`,
			`6: target.url: host "example.com" is not a loopback address (127.0.0.1, ::1, localhost): longhaul only sends load to this machine`,
			`6: target.url is an already running target; it excludes image, build and command`,
			`8: target.port must be within 0..65535, got 70000`,
			`9: target.health is a path and must start with "/", got "healthz"`,
			`10: resources.memory "lots" is not a size (e.g. 512m, 1g)`,
			`11: database.kind "oracle" is not one of none, postgres, mysql, mariadb, mongodb`}},
		{"providers", `name: x
ops: [{name: a, request: {path: /}}]
environment:
  provider: docker
  target: {command: [./app]}
`, []string{`5: the docker provider needs target.image or target.build.repo`}},
		{"local needs command", "name: x\n" + ops + "environment: {provider: local, target: {image: x}}\n", []string{
			`3: the local provider needs target.command (the argv of the target process)`}},
		{"no provider", "name: x\n" + ops + "environment: {target: {command: [./app]}, database: {kind: postgres}}\n", []string{
			`3: environment.provider is required to build or run the target: local, docker or auto`,
			`3: database.kind postgres needs a provider (local, docker or auto) to run it`}},
		{"url scheme", "name: x\n" + ops + "environment: {target: {url: 'ftp://127.0.0.1/'}}\n", []string{
			`3: target.url: "ftp://127.0.0.1/" must be an http:// or https:// URL`}},
		{"probes", `name: x
ops: [{name: a, request: {path: /}}]
probes:
  heap:
    metric: {name: "1bad-name"}
    gc_hook: {every: 0}
    inspector: {port: 70000, every: -1}
`, []string{
			`5: heap.metric.name "1bad-name" is not a Prometheus metric name`,
			`6: heap.gc_hook.every is a number of windows and must be ≥ 1, got 0`,
			`7: heap.inspector.port must be within 1..65535, got 70000`,
			`7: heap.inspector.every is a number of windows and must be ≥ 1, got -1`}},
		{"profile", "name: x\n" + ops + "probes:\n  profile: {pprof: debug/pprof, seconds: 0, every: 0, heap_every: -1}\n", []string{
			`4: probes.profile.pprof must be a path starting with "/", e.g. /debug/pprof, got "debug/pprof"`,
			`4: probes.profile.seconds is the length of a CPU profile and must be ≥ 1, got 0`,
			`4: probes.profile.every is a number of windows and must be ≥ 1, got 0`,
			`4: probes.profile.heap_every is a number of windows and must be ≥ 1, got -1`}},
		{"profile source", "name: x\n" + ops + "probes: {profile: {seconds: 2}}\n", []string{
			`3: probes.profile needs pprof: /debug/pprof (the path of a Go target's net/http/pprof) or inspector: true (a Node.js target's inspector)`}},
		{"profile both sources", "name: x\n" + ops + "probes: {profile: {pprof: /debug/pprof, inspector: true}}\n", []string{
			`3: probes.profile takes pprof (a Go target) or inspector (a Node.js target), not both`}},
		{"profile overlap", "name: x\n" + ops + "load: {window: 2s}\nprobes: {profile: {pprof: /debug/pprof, seconds: 4, every: 2}}\n", []string{
			`4: probes.profile.seconds (4 s) must be shorter than every × load.window (2 × 2s), or profiles would overlap`}},
		{"empty heap", "name: x\n" + ops + "probes: {heap: {}}\n", []string{`3: probes.heap needs at least one of metric, gc_hook, inspector`}},
		{"database probe", "name: x\n" + ops + "probes:\n  database:\n    postgres: true\n", []string{
			`5: unknown key "postgres" in probes.database (known keys: sqlite; or write database: true for PostgreSQL)`}},
		{"database probe type", "name: x\n" + ops + "probes: {database: 3}\n", []string{
			`3: probes.database is true, false (PostgreSQL statistics) or {sqlite: PATH}, got a number`}},
		{"sqlite path", "name: x\n" + ops + "probes:\n  database: {sqlite: ''}\n", []string{
			`4: probes.database.sqlite needs the path of the target's SQLite file, e.g. "{{.EnvDir}}/data.db"`}},
		{"sqlite template", "name: x\n" + ops + "probes:\n  database:\n    sqlite: '{{.EnvDir'\n", []string{
			`5: probes.database.sqlite: template: sqlite:1: unclosed action`}},
		{"think type", "name: x\nops:\n  - name: a\n    request: {path: /}\n    think: [1s]\n", []string{
			"5: think is a duration (100ms) or {min: 50ms, max: 150ms}, got a list"}},
		{"json keys", "name: x\nops:\n  - name: a\n    request:\n      path: /\n      json: {1: a}\n", []string{"6: json object keys must be strings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.yaml), "t.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want errors %q", s, tt.want)
			}
			if s != nil {
				t.Errorf("Parse returned a scenario with errors")
			}
			got := lines(t, err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestErrorsFormat(t *testing.T) {
	errs := Errors{{File: "a.yaml", Line: 3, Msg: "bad"}, {File: "a.yaml", Msg: "worse"}, {Line: 1, Msg: "x"}}
	want := "a.yaml:3: bad\na.yaml: worse\n<input>:1: x"
	if got := errs.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestParseLimits(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'k'; i++ {
		bomb += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	tests := []struct {
		name string
		data string
		want string
	}{
		{"too big", "name: x\n#" + strings.Repeat("a", MaxFileBytes), "file is larger than 1048576 bytes (1 MiB); scenario files are small"},
		{"alias bomb", bomb, "document expands to more than 100000 nodes (aliases?); scenario files are small"},
		{"many lines", "name: x\nops:\n" + strings.Repeat("- a\n", (MaxFileBytes-20)/4), "file has more than 100000 lines, commas, brackets, colons and dashes; scenario files are small"},
		{"many commas", "[" + strings.Repeat("1,", (MaxFileBytes-2)/2) + "]", "file has more than 100000 lines, commas, brackets, colons and dashes; scenario files are small"},
		{"many nodes per line", strings.Repeat("- [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", 3000), "file has more than 100000 lines, commas, brackets, colons and dashes; scenario files are small"},
		{"deep flow", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), "nesting deeper than 64 levels"},
		{"deep block", deepBlock(200), "nesting deeper than 64 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse([]byte(tt.data), "bomb.yaml")
			elapsed := time.Since(start)
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Msg != tt.want {
				t.Fatalf("Parse error = %v, want %q", err, tt.want)
			}
			if elapsed > time.Second {
				t.Errorf("refusing took %v, want well under a second", elapsed)
			}
		})
	}
}

func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	return b.String()
}

func TestLoadFileErrors(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml"))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || !strings.HasSuffix(errs[0].Error(), "missing.yaml: cannot read: no such file or directory") {
		t.Errorf("LoadFile(missing) = %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(big); err == nil || !strings.Contains(err.Error(), "big.yaml: file is larger than") {
		t.Errorf("LoadFile(big) = %v", err)
	}
}

// TestExampleFiles validates and compiles every scenario shipped in this directory.
func TestExampleFiles(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d example files, want hello.yaml and parse-mix.yaml at least", len(files))
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			s, err := LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(s, CompileOptions{Seed: 1, LookupEnv: func(string) (string, bool) { return "set", true }})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Ops) == 0 {
				t.Errorf("%s compiles to no ops", f)
			}
		})
	}
}

func TestParseMixShape(t *testing.T) {
	s, err := LoadFile("parse-mix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	total := 0
	for _, op := range s.Ops {
		got[op.Name] = op.Weight
		total += op.Weight
	}
	want := map[string]int{"list": 40, "get": 15, "create": 20, "update": 19, "batch": 4, "delete": 1, "login": 1}
	if !reflect.DeepEqual(got, want) || total != 100 {
		t.Errorf("weights = %v (total %d), want %v", got, total, want)
	}
	var setup []string
	for _, st := range s.Setup {
		setup = append(setup, st.Name)
	}
	if want := []string{"signup", "login"}; !reflect.DeepEqual(setup, want) {
		t.Errorf("setup = %v, want %v", setup, want)
	}
}

// TestScenarioJSONRoundTrip: a scenario shipped to a worker as JSON compiles
// to the same requests.
func TestScenarioJSONRoundTrip(t *testing.T) {
	s, err := LoadFile("parse-mix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"duration":"10m0s"`) {
		t.Errorf("durations do not marshal as strings: %s", data)
	}
	var back Scenario
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Load, s.Load) {
		t.Errorf("load after round trip = %+v, want %+v", back.Load, s.Load)
	}
	render := func(s *Scenario) []string {
		p, err := Compile(s, CompileOptions{Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		p.Pools.Add("items", "42")
		vu := p.NewVU(1)
		var out []string
		var r Rendered
		for _, a := range p.Ops {
			if err := a.Render(vu, &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %s %s", r.Method, r.PathQuery, r.Body))
		}
		return out
	}
	if got, want := render(&back), render(s); !reflect.DeepEqual(got, want) {
		t.Errorf("rendered after round trip\n got %q\nwant %q", got, want)
	}
}

func TestValidateWithoutYAML(t *testing.T) {
	tests := []struct {
		name string
		s    Scenario
		want []string
	}{
		{"defaults", Scenario{Name: "x", Ops: []Op{{Step: Step{Name: "a", Request: Request{Path: "/"}}}}}, nil},
		{"override conflict", Scenario{Name: "x", Load: Load{VUs: 4, Rate: 10, Duration: Duration(-time.Second)},
			Ops: []Op{{Step: Step{Name: "a", Request: Request{Path: "/"}, Line: 7}, Weight: -1}, {Step: Step{Name: "b", Line: 9}}}}, []string{
			"0: vus (closed model) and rate/max_vus (open model) exclude each other; keep one",
			"0: duration must be > 0, got -1s",
			`7: op "a": weight must be ≥ 1, got -1`,
			`9: op "b": request.path is required (path: /items)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			got := lines(t, s.Validate())
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate errors\n got %q\nwant %q", got, tt.want)
			}
			if got == nil && (s.Load.VUs != DefaultVUs || s.Ops[0].Weight != 1 || s.Ops[0].Request.Method != "GET") {
				t.Errorf("Validate did not fill defaults: %+v", s)
			}
		})
	}
}

func TestParseDatabaseProbe(t *testing.T) {
	for _, tt := range []struct {
		yaml     string
		on, set  bool
		sqlite   string
		jsonOfIt string
	}{
		{"database: true", true, true, "", `true`},
		{"database: false", false, true, "", `false`},
		{"database: {sqlite: '{{.EnvDir}}/pb_data/data.db'}", false, false, "{{.EnvDir}}/pb_data/data.db", `{"sqlite":"{{.EnvDir}}/pb_data/data.db"}`},
	} {
		s, err := Parse([]byte("name: x\nops: [{name: a, request: {path: /}}]\nprobes: {"+tt.yaml+"}\n"), "")
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		on, set := s.Probes.PostgresOn()
		if on != tt.on || set != tt.set || s.Probes.SQLitePath() != tt.sqlite {
			t.Errorf("%s: PostgresOn %v,%v SQLitePath %q; want %v,%v %q", tt.yaml, on, set, s.Probes.SQLitePath(), tt.on, tt.set, tt.sqlite)
		}
		// Workflow payloads and stored scenarios: the boolean form keeps
		// its old JSON shape, and both forms round-trip.
		b, err := json.Marshal(s.Probes)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"database":` + tt.jsonOfIt + `}`; string(b) != want {
			t.Errorf("%s: JSON %s, want %s", tt.yaml, b, want)
		}
		var back Probes
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, s.Probes) {
			t.Errorf("%s: JSON round trip %+v (%v), want %+v", tt.yaml, back, err, s.Probes)
		}
	}
}

// TestProbesForTargetKind: probes that cannot apply to the target are
// refused when the file is read, not found out at run time.
func TestProbesForTargetKind(t *testing.T) {
	for _, tt := range []struct {
		name, env, probes, want string
	}{
		{"process on url", "environment: {target: {url: 'http://127.0.0.1:8080'}}", "process: true", "not applicable to a target.url target"},
		{"process off on url", "environment: {target: {url: 'http://127.0.0.1:8080'}}", "process: false", ""},
		{"heap on url", "environment: {target: {url: 'http://127.0.0.1:8080'}}", "heap: {metric: {}}", ""},
		{"process on command", "environment: {provider: local, target: {command: [app]}}", "process: true", ""},
		{"database on url", "environment: {target: {url: 'http://127.0.0.1:8080'}}", "database: true", "set environment.database.kind (postgres, mysql, mariadb, mongodb)"},
		{"database with postgres", "environment: {provider: local, target: {command: [app]}, database: {kind: postgres}}", "database: true", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("name: x\n"+tt.env+"\nops: [{name: a, request: {path: /}}]\nprobes: {"+tt.probes+"}\n"), "x.yaml")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want ok", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			case err != nil && !strings.HasPrefix(err.Error(), "x.yaml:4:"):
				t.Errorf("not located at the probes line: %v", err)
			}
		})
	}
}
