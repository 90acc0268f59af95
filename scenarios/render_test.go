package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul/window"
)

// compileOps parses a scenario made of the given ops YAML (a list) and
// compiles it with a fixed seed and environment.
func compileOps(t testing.TB, ops string, opts CompileOptions) *Plan {
	t.Helper()
	s, err := Parse([]byte("name: t\nops:\n"+ops), "t.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if opts.Seed == 0 {
		opts.Seed = 42
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = func(name string) (string, bool) {
			v, ok := map[string]string{"SECRET": `p"w`, "HOST": "a b"}[name]
			return v, ok
		}
	}
	p, err := Compile(s, opts)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

// op returns the plan's op by name.
func op(t testing.TB, p *Plan, name string) *Action {
	t.Helper()
	for _, a := range append(p.Setup, p.Ops...) {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no op %q", name)
	return nil
}

// seedOps is a producer op that fills variable v and pools p (numbers) and
// names (strings) from a response, so templates can use them.
const seedOps = `
  - name: seed
    request: {path: /seed}
    capture:
      - {json: v, var: v}
      - {json: n, pool: p}
      - {json: s, pool: names}
`

const seedBody = `{"v": "x y/z\n", "n": 42, "s": "bob \"q\""}`

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		op      string
		method  string
		path    string
		headers string
		body    string
	}{
		{"static", `{name: a, request: {path: /items}}`, "GET", "/items", "", ""},
		{"escaped path and query", `{name: a, request: {method: delete, path: "/a/{{ .v }}", query: {q: "{{ .v }}", "k k": "1 2"}}}`,
			"DELETE", "/a/x%20y%2Fz%0A?k%20k=1%202&q=x%20y%2Fz%0A", "", ""},
		{"query after literal ?", `{name: a, request: {path: "/s?x=1&y={{ .v }}", query: {z: "1"}}}`,
			"GET", "/s?x=1&y=x%20y%2Fz%0A&z=1", "", ""},
		{"headers", `{name: a, request: {path: /, headers: {x-user: "u {{ .v }}", Authorization: "Bearer ${env:SECRET}"}}}`,
			"GET", "/", `Authorization: Bearer p"w|X-User: u x y/z`, ""},
		{"raw body", `{name: a, request: {method: POST, path: /, body: "v={{ .v }}&n={{ pick \"p\" }}"}}`,
			"POST", "/", "", "v=x y/z\n&n=42"},
		{"json", `{name: a, request: {method: POST, path: /, json: {
			n: "{{ randInt 5 5 }}", v: "{{ vu }}", s: "{{ seq }}", id: "{{ pick \"p\" }}", name: "{{ pick \"names\" }}",
			var: "{{ .v }}", mixed: "id-{{ randInt 7 7 }}", both: "{{ vu }}{{ vu }}", lit: 3, f: 1.5, b: true, nil: null, arr: [1, "x"],
			env: "${env:SECRET}", envmix: "k=${env:SECRET}", nested: {deep: ["{{ randInt -1 -1 }}"]}}}}`,
			"POST", "/", "Content-Type: application/json",
			`{"arr":[1,"x"],"b":true,"both":"33","env":"p\"w","envmix":"k=p\"w","f":1.5,"id":42,"lit":3,"mixed":"id-7","n":5,"name":"bob \"q\"","nested":{"deep":[-1]},"nil":null,"s":1,"v":3,"var":"x y/z\n"}`},
		{"json timestamps stay as written", `{name: a, request: {method: POST, path: /, json: {d: 2024-01-02, t: 2001-12-14t21:59:43.10-05:00}}}`,
			"POST", "/", "Content-Type: application/json", `{"d":"2024-01-02","t":"2001-12-14t21:59:43.10-05:00"}`},
		{"json keeps content type", `{name: a, request: {method: POST, path: /, headers: {content-type: application/vnd.x+json}, json: [1]}}`,
			"POST", "/", "Content-Type: application/vnd.x+json", "[1]"},
		{"literal braces", `{name: a, request: {method: POST, path: /, body: "{{ \"{{\" }} x }}"}}`,
			"POST", "/", "", "{{ x }}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := compileOps(t, seedOps+"  - "+tt.op+"\n", CompileOptions{})
			vu := p.NewVU(3)
			if c := op(t, p, "seed").Check(vu, 200, []byte(seedBody)); c != window.OK {
				t.Fatalf("seed Check = %v", c)
			}
			var r Rendered
			if err := op(t, p, "a").Render(vu, &r); err != nil {
				t.Fatal(err)
			}
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, h.Key+": "+string(h.Value))
			}
			got := []string{r.Method, string(r.PathQuery), strings.Join(hs, "|"), string(r.Body)}
			want := []string{tt.method, tt.path, tt.headers, tt.body}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rendered\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestRenderReusesRendered(t *testing.T) {
	p := compileOps(t, `
  - {name: a, request: {method: POST, path: /a, headers: {X-A: "1", X-B: "2"}, body: "long body"}}
  - {name: b, request: {path: /b}}
`, CompileOptions{})
	vu := p.NewVU(1)
	var r Rendered
	if err := op(t, p, "a").Render(vu, &r); err != nil {
		t.Fatal(err)
	}
	if err := op(t, p, "b").Render(vu, &r); err != nil {
		t.Fatal(err)
	}
	if r.Method != "GET" || string(r.PathQuery) != "/b" || len(r.Headers) != 0 || len(r.Body) != 0 {
		t.Errorf("second render left %+v, want a clean GET /b", r)
	}
}

func TestRandomFunctions(t *testing.T) {
	p := compileOps(t, `
  - {name: a, request: {path: "/{{ uuid }}/{{ randString 3 5 }}/{{ randInt -2 2 }}"}}
`, CompileOptions{})
	vu := p.NewVU(1)
	re := regexp.MustCompile(`^/([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})/([A-Za-z0-9]{3,5})/(-?\d)$`)
	ints := map[string]int{}
	lens := map[int]int{}
	uuids := map[string]bool{}
	var r Rendered
	const n = 2000
	for range n {
		if err := p.Ops[0].Render(vu, &r); err != nil {
			t.Fatal(err)
		}
		m := re.FindStringSubmatch(string(r.PathQuery))
		if m == nil {
			t.Fatalf("rendered %q, want /UUIDv4/alnum{3,5}/int", r.PathQuery)
		}
		uuids[m[1]] = true
		lens[len(m[2])]++
		ints[m[3]]++
	}
	if len(uuids) != n {
		t.Errorf("%d distinct UUIDs in %d renders", len(uuids), n)
	}
	if want := map[int]bool{3: true, 4: true, 5: true}; len(lens) != len(want) {
		t.Errorf("randString lengths seen %v, want each of 3..5", lens)
	}
	if len(ints) != 5 {
		t.Errorf("randInt -2 2 values seen %v, want each of -2..2 (inclusive)", ints)
	}
}

func TestSeedReproducible(t *testing.T) {
	const ops = `  - {name: a, request: {path: "/{{ uuid }}/{{ randString 3 9 }}/{{ randInt 0 1000000 }}"}}` + "\n"
	render := func(seed uint64, vuID int) string {
		p := compileOps(t, ops, CompileOptions{Seed: seed})
		var r Rendered
		if err := p.Ops[0].Render(p.NewVU(vuID), &r); err != nil {
			t.Fatal(err)
		}
		return string(r.PathQuery)
	}
	if a, b := render(1, 1), render(1, 1); a != b {
		t.Errorf("same seed rendered %q and %q", a, b)
	}
	if a, b := render(1, 1), render(2, 1); a == b {
		t.Errorf("seeds 1 and 2 both rendered %q", a)
	}
	if a, b := render(1, 1), render(1, 2); a == b {
		t.Errorf("VUs 1 and 2 both rendered %q", a)
	}
}

func TestSeqSharedByVUs(t *testing.T) {
	p := compileOps(t, `  - {name: a, request: {path: "/{{ seq }}"}}`+"\n", CompileOptions{})
	var got []string
	var r Rendered
	for _, id := range []int{1, 2, 1} {
		if err := p.Ops[0].Render(p.NewVU(id), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(r.PathQuery))
	}
	if want := []string{"/1", "/2", "/3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("seq rendered %v, want %v", got, want)
	}
}

func TestCompileEnv(t *testing.T) {
	s, err := Parse([]byte(`name: t
ops:
  - name: a
    request: {path: "/${env:A}", headers: {X-Key: "${env:B}"}}
  - name: b
    request: {path: /, body: "${env:C}"}
`), "env.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Ops[0].Request.Path != "/${env:A}" {
		t.Errorf("Parse resolved the reference: path %q", s.Ops[0].Request.Path)
	}
	lookup := func(name string) (string, bool) {
		if name == "A" {
			return "top-secret-value", true
		}
		return "", false
	}
	_, err = Compile(s, CompileOptions{LookupEnv: lookup})
	got := lines(t, err)
	want := []string{`3: op "a": ${env:B} is not set in the environment`, `5: op "b": ${env:C} is not set in the environment`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compile errors\n got %q\nwant %q", got, want)
	}
	if strings.Contains(err.Error(), "top-secret-value") {
		t.Errorf("Compile error leaks a secret: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "env.yaml:3: ") {
		t.Errorf("Compile error %q does not start with file:line", err)
	}
}

func TestPoolPickTake(t *testing.T) {
	p := compileOps(t, `
  - name: create
    request: {method: POST, path: /items}
    capture: [{json: id, pool: items}]
  - {name: get, request: {path: "/items/{{ pick \"items\" }}"}}
  - {name: del, request: {method: DELETE, path: "/items/{{ take \"items\" }}"}}
`, CompileOptions{})
	vu := p.NewVU(1)
	var r Rendered
	for _, name := range []string{"get", "del"} {
		if err := op(t, p, name).Render(vu, &r); !errors.Is(err, ErrPoolEmpty) {
			t.Errorf("%s on an empty pool: err = %v, want ErrPoolEmpty", name, err)
		}
	}
	if c := op(t, p, "create").Check(vu, 201, []byte(`{"id": 7}`)); c != window.OK {
		t.Fatalf("create Check = %v", c)
	}
	for range 3 {
		if err := op(t, p, "get").Render(vu, &r); err != nil || string(r.PathQuery) != "/items/7" {
			t.Fatalf("get rendered %q, %v; want /items/7", r.PathQuery, err)
		}
	}
	if got := p.Pools.Len("items"); got != 1 {
		t.Errorf("after picks Len = %d, want 1 (pick keeps)", got)
	}
	if err := op(t, p, "del").Render(vu, &r); err != nil || string(r.PathQuery) != "/items/7" {
		t.Fatalf("del rendered %q, %v; want /items/7", r.PathQuery, err)
	}
	if got := p.Pools.Len("items"); got != 0 {
		t.Errorf("after take Len = %d, want 0 (take removes)", got)
	}
	if got := p.Pools.Names(); !reflect.DeepEqual(got, []string{"items"}) {
		t.Errorf("Names = %v", got)
	}
}

func TestPoolBounded(t *testing.T) {
	p := compileOps(t, `
  - name: create
    request: {method: POST, path: /items}
    capture: [{json: id, pool: items}]
`, CompileOptions{MaxPoolEntries: 10})
	vu := p.NewVU(1)
	for i := range 1000 {
		if c := p.Ops[0].Check(vu, 201, fmt.Appendf(nil, `{"id": %d}`, i)); c != window.OK {
			t.Fatalf("Check = %v", c)
		}
	}
	if got := p.Pools.Len("items"); got != 10 {
		t.Errorf("Len = %d, want the bound 10", got)
	}
	// Replacement keeps the pool turning over: recent ids are present.
	pl := p.Pools.byName["items"]
	recent := 0
	for _, e := range pl.entries {
		var n int
		fmt.Sscan(string(e.b), &n)
		if n >= 900 {
			recent++
		}
	}
	if recent == 0 {
		t.Errorf("no entry from the last 100 captures in a full pool: %v", pl.entries)
	}
}

// TestPoolsConcurrent runs many VUs that capture into, pick from and take
// from one pool at once; run with -race.
func TestPoolsConcurrent(t *testing.T) {
	p := compileOps(t, `
  - name: create
    request: {method: POST, path: /items}
    capture: [{json: ids, pool: items, each: true}]
  - {name: get, request: {path: "/items/{{ pick \"items\" }}"}}
  - {name: del, request: {method: DELETE, path: "/items/{{ take \"items\" }}"}}
`, CompileOptions{MaxPoolEntries: 1000})
	const workers, iters = 8, 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	added, taken := 0, 0
	for w := range workers {
		wg.Go(func() {
			vu := p.NewVU(w + 1)
			var r Rendered
			a, tk := 0, 0
			for i := range iters {
				switch i % 3 {
				case 0:
					if c := op(t, p, "create").Check(vu, 201, fmt.Appendf(nil, `{"ids": [%d, %d]}`, w*iters+i, -(w*iters+i))); c != window.OK {
						t.Errorf("Check = %v", c)
						return
					}
					a += 2
				case 1:
					if err := op(t, p, "get").Render(vu, &r); err != nil && !errors.Is(err, ErrPoolEmpty) {
						t.Errorf("get: %v", err)
					}
				case 2:
					if err := op(t, p, "del").Render(vu, &r); err == nil {
						tk++
					} else if !errors.Is(err, ErrPoolEmpty) {
						t.Errorf("del: %v", err)
					}
				}
			}
			mu.Lock()
			added, taken = added+a, taken+tk
			mu.Unlock()
		})
	}
	wg.Wait()
	got := p.Pools.Len("items")
	if got > 1000 {
		t.Errorf("Len = %d, above the bound 1000", got)
	}
	if added-taken <= 1000 && got != added-taken {
		t.Errorf("Len = %d, want added %d - taken %d", got, added, taken)
	}
}

func TestCompileChecksBuiltScenarios(t *testing.T) {
	s := &Scenario{Name: "x", Source: "built", Ops: []Op{
		{Step: Step{Name: "a", Line: 4, Request: Request{Path: "items"}}, Weight: 1},
		{Step: Step{Name: "b", Line: 6, Request: Request{Path: "/{{ nope }}"}, Capture: []Capture{{JSON: "ids", Var: "v", Each: true}}}},
	}}
	_, err := Compile(s, CompileOptions{})
	got := lines(t, err)
	want := []string{
		`4: op "a": path must start with "/", got "items"`,
		`6: op "b": weight must be ≥ 1, got 0`,
		`6: op "b": unknown template function "nope" (known: vu, seq, uuid, randInt, randString, pick, take; variables are written {{ .name }})`,
		`6: op "b": capture of "ids" with each: true needs pool`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compile errors\n got %q\nwant %q", got, want)
	}
}
