package scenarios

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/window"
)

// hotOps is a typical templated op set for the hot-path benchmarks: a path
// with a pick, a header with a variable, a JSON body with random values.
const hotOps = `
  - name: login
    request: {method: POST, path: /login}
    capture: [{json: token, var: token}]
  - name: create
    request: {method: POST, path: /items}
    capture: [{json: id, pool: items}]
  - name: update
    request:
      method: PUT
      path: /items/{{ pick "items" }}
      headers: {Authorization: "Bearer {{ .token }}"}
      json:
        bucket: "{{ randInt 0 99 }}"
        title: "{{ randString 8 32 }}"
        payload: {ref: "{{ uuid }}", note: "{{ randString 16 96 }}"}
  - name: list
    request: {path: /items, query: {bucket: "{{ randInt 0 99 }}", limit: "20"}}
`

const createdBody = `{"id":123456,"bucket":17,"title":"abcdefgh","owner":3,"payload":{"note":"xyz"},"created_at":"2025-01-01T00:00:00.000000001Z","updated_at":"2025-01-01T00:00:00.000000001Z"}`

// hotPlan compiles hotOps and warms a VU: token captured, pool filled to its
// bound (100 entries here), the steady state of a long soak.
func hotPlan(tb testing.TB) (*Plan, *VU) {
	p := compileOps(tb, hotOps, CompileOptions{MaxPoolEntries: 100})
	vu := p.NewVU(1)
	if c := op(tb, p, "login").Check(vu, 200, []byte(`{"token":"0123456789abcdef0123456789abcdef","user_id":3}`)); c != window.OK {
		tb.Fatalf("login Check = %v", c)
	}
	for range 100 {
		if c := op(tb, p, "create").Check(vu, 201, []byte(createdBody)); c != window.OK {
			tb.Fatalf("create Check = %v", c)
		}
	}
	return p, vu
}

func BenchmarkRender(b *testing.B) {
	p, vu := hotPlan(b)
	a := op(b, p, "update")
	var r Rendered
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Render(vu, &r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(r.PathQuery) + len(r.Body)))
}

func BenchmarkRenderStatic(b *testing.B) {
	p := compileOps(b, `  - {name: get, request: {path: /items}}`+"\n", CompileOptions{})
	vu := p.NewVU(1)
	var r Rendered
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Ops[0].Render(vu, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckCapture(b *testing.B) {
	p, vu := hotPlan(b)
	a := op(b, p, "create")
	body := []byte(createdBody)
	b.ReportAllocs()
	for b.Loop() {
		if c := a.Check(vu, 201, body); c != window.OK {
			b.Fatal(c)
		}
	}
}

func BenchmarkCheckNoCapture(b *testing.B) {
	p, vu := hotPlan(b)
	a := op(b, p, "list")
	b.ReportAllocs()
	for b.Loop() {
		if c := a.Check(vu, 200, nil); c != window.OK {
			b.Fatal(c)
		}
	}
}

// TestHotPathAllocs holds the hot-path contract: Render and Check do not
// allocate in the steady state (one Rendered reused; a full pool).
func TestHotPathAllocs(t *testing.T) {
	p := compileOps(t, hotOps, CompileOptions{MaxPoolEntries: 50})
	vu := p.NewVU(1)
	login, create, update, list := op(t, p, "login"), op(t, p, "create"), op(t, p, "update"), op(t, p, "list")
	token := []byte(`{"token":"0123456789abcdef0123456789abcdef"}`)
	body := []byte(createdBody)
	var r Rendered
	tests := []struct {
		name string
		fn   func()
	}{
		{"render update", func() { _ = update.Render(vu, &r) }},
		{"render list", func() { _ = list.Render(vu, &r) }},
		{"check no capture", func() { list.Check(vu, 200, nil) }},
		{"check var capture", func() { login.Check(vu, 200, token) }},
		{"check pool capture (full pool)", func() { create.Check(vu, 201, body) }},
	}
	for range 100 { // fill the pool past its bound and size the buffers
		create.Check(vu, 201, body)
		login.Check(vu, 200, token)
		_ = update.Render(vu, &r)
		_ = list.Render(vu, &r)
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(200, tt.fn); got != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tt.name, got)
		}
	}
}

func BenchmarkParseMix(b *testing.B) {
	data, err := os.ReadFile("parse-mix.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, "parse-mix.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefuse measures how long hostile files take to refuse.
func BenchmarkRefuse(b *testing.B) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'k'; i++ {
		bomb += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	cases := []struct{ name, data string }{
		{"alias-bomb", bomb},
		{"1MiB-list", strings.Repeat("- a\n", MaxFileBytes/4)},
		{"deep-nesting", strings.Repeat("[", 5000) + strings.Repeat("]", 5000)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			data := []byte(c.data)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(data, "x"); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
