package scenarios

import (
	"reflect"
	"testing"

	"github.com/longhaul-dev/longhaul/window"
)

func TestCheckClassification(t *testing.T) {
	p := compileOps(t, `
  - {name: default, request: {path: /}}
  - {name: custom, request: {path: /}, expect: {status: [200, 404]}}
`, CompileOptions{})
	vu := p.NewVU(1)
	tests := []struct {
		op     string
		status int
		want   window.Class
	}{
		{"default", 200, window.OK},
		{"default", 204, window.OK},
		{"default", 302, window.OK},
		{"default", 399, window.OK},
		{"default", 404, window.Status4xx},
		{"default", 503, window.Status5xx},
		{"default", 101, window.Unexpected},
		{"default", 0, window.Unexpected},
		{"default", 999, window.Unexpected},
		{"custom", 200, window.OK},
		{"custom", 404, window.OK},
		{"custom", 201, window.Unexpected},
		{"custom", 409, window.Status4xx},
		{"custom", 500, window.Status5xx},
	}
	for _, tt := range tests {
		if got := op(t, p, tt.op).Check(vu, tt.status, nil); got != tt.want {
			t.Errorf("%s: Check(%d) = %v, want %v", tt.op, tt.status, got, tt.want)
		}
	}
}

func TestCaptures(t *testing.T) {
	p := compileOps(t, `
  - name: login
    request: {method: POST, path: /login}
    capture:
      - {json: data.token, var: token}
      - {json: ids.1, var: second}
      - {json: user, var: user}
  - name: create
    request: {method: POST, path: /items}
    expect: {status: [201, 404]}
    capture: [{json: ids, pool: items, each: true}]
  - {name: use, request: {path: "/{{ .token }}/{{ .second }}/{{ .user }}/{{ pick \"items\" }}"}}
`, CompileOptions{})
	vu := p.NewVU(1)
	login, create := op(t, p, "login"), op(t, p, "create")
	if !login.WantsBody() || op(t, p, "use").WantsBody() {
		t.Errorf("WantsBody: login %v, use %v; want true, false", login.WantsBody(), op(t, p, "use").WantsBody())
	}
	body := []byte(` { "other": [1, {"x": "}"}], "data" : {"tok\u0065n": "a\"b\u00e9\ud83d\ude00", "n": 1}, "ids": [10, 20], "user": {"id": 5} } `)
	if c := login.Check(vu, 200, body); c != window.OK {
		t.Fatalf("login Check = %v", c)
	}
	got := map[string]string{}
	for _, name := range []string{"token", "second", "user"} {
		got[name], _ = vu.Var(name)
	}
	want := map[string]string{"token": "a\"bé😀", "second": "20", "user": `{"id": 5}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("vars = %q, want %q", got, want)
	}

	if c := create.Check(vu, 201, []byte(`{"ids": ["a", "b", "c"]}`)); c != window.OK || p.Pools.Len("items") != 3 {
		t.Errorf("each capture: class %v, Len %d; want ok, 3", c, p.Pools.Len("items"))
	}
	// An expected non-2xx response has nothing to capture.
	if c := create.Check(vu, 404, []byte(`not json`)); c != window.OK {
		t.Errorf("expected 404 Check = %v, want ok", c)
	}
	for _, bad := range []string{`{"ids": 5}`, `{"id": [1]}`, `not json`, ``, `{"ids": [1, 2`} {
		if c := create.Check(vu, 201, []byte(bad)); c != window.Unexpected {
			t.Errorf("create Check(%q) = %v, want unexpected", bad, c)
		}
	}
	// A missing field is unexpected and leaves the variable as it was.
	if c := login.Check(vu, 200, []byte(`{"data": {}}`)); c != window.Unexpected {
		t.Errorf("login Check(missing) = %v, want unexpected", c)
	}
	if v, _ := vu.Var("token"); v != "a\"bé😀" {
		t.Errorf("token after a failed capture = %q", v)
	}
}

func TestJSONLookup(t *testing.T) {
	doc := []byte(`{"a": {"b": [1, "two", {"c": null}], "e\"q": true}, "s": "x\\y", "n": -1.5e3, "0": "zero", "empty": [], "o": {}}`)
	tests := []struct {
		path string
		want string // "" = not found
	}{
		{"a.b.0", "1"},
		{"a.b.1", `"two"`},
		{"a.b.2.c", "null"},
		{"a.b.3", ""},
		{"a.b", `[1, "two", {"c": null}]`},
		{`e"q`, ""},
		{"s", `"x\\y"`},
		{"n", "-1.5e3"},
		{"0", `"zero"`},
		{"a.b.x", ""},
		{"s.x", ""},
		{"empty.0", ""},
		{"o.x", ""},
		{"missing", ""},
	}
	for _, tt := range tests {
		start, end, ok := jsonLookup(doc, compilePath(tt.path))
		got := ""
		if ok {
			got = string(doc[start:end])
		}
		if got != tt.want {
			t.Errorf("jsonLookup(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if s, e, ok := jsonLookup(doc, compilePath("a.e\"q")); !ok || string(doc[s:e]) != "true" {
		t.Errorf("escaped key lookup = %q, %v; want true", doc[s:e], ok)
	}
}

func TestThinkTime(t *testing.T) {
	p := compileOps(t, `
  - {name: none, request: {path: /}}
  - {name: fixed, request: {path: /}, think: 100ms}
  - {name: range, request: {path: /}, think: {min: 10ms, max: 20ms}}
`, CompileOptions{})
	vu := p.NewVU(1)
	if got := op(t, p, "none").ThinkTime(vu); got != 0 {
		t.Errorf("none: %v, want 0", got)
	}
	if got := op(t, p, "fixed").ThinkTime(vu); got.Milliseconds() != 100 {
		t.Errorf("fixed: %v, want 100ms", got)
	}
	lo, hi := p.Ops[2].Think.Min.D(), p.Ops[2].Think.Max.D()
	seenLow, seenHigh := false, false
	for range 1000 {
		got := op(t, p, "range").ThinkTime(vu)
		if got < lo || got > hi {
			t.Fatalf("range: %v outside [%v, %v]", got, lo, hi)
		}
		seenLow = seenLow || got < lo+(hi-lo)/4
		seenHigh = seenHigh || got > hi-(hi-lo)/4
	}
	if !seenLow || !seenHigh {
		t.Errorf("range: draws not spread over [%v, %v]", lo, hi)
	}
}
