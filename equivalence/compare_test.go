package equivalence

import (
	"reflect"
	"strings"
	"testing"
)

func ex(op, path string, status int, body string) Exchange {
	return Exchange{Op: op, Method: "GET", Path: path, Status: status, Body: []byte(body)}
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name string
		a, b []Exchange
		opts Options
		want *Difference // nil: identical
	}{
		{
			name: "identical bytes",
			a:    []Exchange{ex("get", "/x", 200, `{"a":1}`)},
			b:    []Exchange{ex("get", "/x", 200, `{"a":1}`)},
		},
		{
			name: "key order and whitespace are free",
			a:    []Exchange{ex("get", "/x", 200, `{"a":1,"b":[1,2],"c":{"d":"e","f":null}}`)},
			b:    []Exchange{ex("get", "/x", 200, ` { "c": {"f":null, "d":"e"}, "b":[1,2], "a":1 }`)},
		},
		{
			name: "generated ids, UUIDs, timestamps and tokens become placeholders",
			a: []Exchange{
				ex("create", "/items", 201, `{"id":17,"ref":"0b7e8c52-1c4e-4a36-9e4e-6b8b9f1a0c11","created_at":"2025-03-01T12:00:00.123456Z","owner":"ann"}`),
				ex("login", "/login", 200, `{"token":"aa11","user_id":5}`),
				ex("get", "/items/17", 200, `{"id":17,"parent_id":null,"itemIds":[17,18]}`),
			},
			b: []Exchange{
				ex("create", "/items", 201, `{"id":901,"ref":"7d0c1e0e-9a2b-4d7f-8c3a-2e1f0a9b8c7d","created_at":"2026-07-09T01:02:03Z","owner":"ann"}`),
				ex("login", "/login", 200, `{"token":"ffee99","user_id":77}`),
				ex("get", "/items/901", 200, `{"id":901,"parent_id":null,"itemIds":[901,902]}`),
			},
		},
		{
			name: "ids compared consistently: B returns another item",
			a: []Exchange{
				ex("create", "/items", 201, `{"id":17}`),
				ex("create", "/items", 201, `{"id":18}`),
				ex("get", "/items/17", 200, `{"id":17}`),
			},
			b: []Exchange{
				ex("create", "/items", 201, `{"id":901}`),
				ex("create", "/items", 201, `{"id":902}`),
				ex("get", "/items/901", 200, `{"id":902}`),
			},
			want: &Difference{Request: 3, Op: "get", Method: "GET", Path: "/items/17", What: "body", JSONPath: "$.id", A: `"<id#1>"`, B: `"<id#2>"`},
		},
		{
			name: "an extra field",
			a:    []Exchange{ex("list", "/items", 200, `{"items":[]}`)},
			b:    []Exchange{ex("list", "/items", 200, `{"items":[],"cursor":null}`)},
			want: &Difference{Request: 1, Op: "list", Method: "GET", Path: "/items", What: "body", JSONPath: "$.cursor", A: "(absent)", B: "null"},
		},
		{
			name: "a changed sort order",
			a:    []Exchange{ex("list", "/items", 200, `{"items":[{"title":"a"},{"title":"b"}]}`)},
			b:    []Exchange{ex("list", "/items", 200, `{"items":[{"title":"b"},{"title":"a"}]}`)},
			want: &Difference{Request: 1, Op: "list", Method: "GET", Path: "/items", What: "body", JSONPath: "$.items[0].title", A: `"a"`, B: `"b"`},
		},
		{
			name: "ignored paths",
			a:    []Exchange{ex("list", "/items", 200, `{"items":[{"t":"a","rank":1},{"t":"b","rank":2}],"took":3}`)},
			b:    []Exchange{ex("list", "/items", 200, `{"items":[{"t":"a","rank":9},{"t":"b","rank":8}],"took":5}`)},
			opts: Options{Ignore: []string{"$.items[*].rank", "$..took"}},
		},
		{
			name: "status",
			a:    []Exchange{ex("get", "/x", 200, `{}`), ex("get", "/y", 200, `{}`)},
			b:    []Exchange{ex("get", "/x", 200, `{}`), ex("get", "/y", 404, `{"error":"not found"}`)},
			want: &Difference{Request: 2, Op: "get", Method: "GET", Path: "/y", What: "status", A: "200", B: "404"},
		},
		{
			name: "non-JSON bodies compare as bytes",
			a:    []Exchange{ex("get", "/x", 200, `hello`)},
			b:    []Exchange{ex("get", "/x", 200, `hello!`)},
			want: &Difference{Request: 1, Op: "get", Method: "GET", Path: "/x", What: "body", A: "hello", B: "hello!"},
		},
		{
			name: "array length",
			a:    []Exchange{ex("get", "/x", 200, `[1,2]`)},
			b:    []Exchange{ex("get", "/x", 200, `[1,2,3]`)},
			want: &Difference{Request: 1, Op: "get", Method: "GET", Path: "/x", What: "body", JSONPath: "$", A: "2 elements", B: "3 elements"},
		},
		{
			name: "one side stopped answering",
			a:    []Exchange{ex("get", "/x", 200, `{}`), ex("get", "/y", 200, `{}`)},
			b:    []Exchange{ex("get", "/x", 200, `{}`), {Op: "get", Method: "GET", Path: "/y", Err: "connection refused"}},
			want: &Difference{Request: 2, Op: "get", Method: "GET", Path: "/y", What: "error", A: "status 200", B: "error: connection refused"},
		},
		{
			name: "fewer requests on one side",
			a:    []Exchange{ex("get", "/x", 200, `{}`), ex("get", "/y", 200, `{}`)},
			b:    []Exchange{ex("get", "/x", 200, `{}`)},
			want: &Difference{Request: 2, Op: "get", Method: "GET", Path: "/y", What: "missing", A: "status 200", B: "(no request)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Compare(tt.a, tt.b, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if res.Status != Identical || res.FirstDifference != nil || res.Requests != len(tt.a) {
					t.Errorf("got %+v (%+v), want identical over %d requests", res, res.FirstDifference, len(tt.a))
				}
				return
			}
			if res.Status != Different || !reflect.DeepEqual(res.FirstDifference, tt.want) {
				t.Errorf("got %s %+v\nwant different %+v", res.Status, res.FirstDifference, tt.want)
			}
		})
	}
}

func TestIgnorePaths(t *testing.T) {
	for _, p := range []string{"$.a", "$.a.b", "$.a[*].b", "$.a[0]", "$..b", "$['a'].b", "$.a[*]"} {
		if err := CheckIgnore(p); err != nil {
			t.Errorf("CheckIgnore(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", "a.b", "$", "$.", "$..", "$.a[", "$.a[]", "$a"} {
		err := CheckIgnore(p)
		if err == nil || !strings.Contains(err.Error(), "compare.ignore") {
			t.Errorf("CheckIgnore(%q) = %v, want an error", p, err)
		}
	}
	if _, err := Compare(nil, nil, Options{Ignore: []string{"nope"}}); err == nil {
		t.Error("Compare with a bad ignore path: no error")
	}
	tests := []struct {
		pat, path string
		want      bool
	}{
		{"$.a", "$.a", true},
		{"$.a", "$.b", false},
		{"$.a[*].b", "$.a[3].b", true},
		{"$.a[*].b", "$.a[3].c", false},
		{"$.a[1]", "$.a[1]", true},
		{"$.a[1]", "$.a[2]", false},
		{"$..b", "$.x.y[2].b", true},
		{"$..b", "$.b", true},
		{"$..b", "$.x.bb", false},
	}
	for _, tt := range tests {
		ip, err := compileIgnore(tt.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := ignored([]ignorePath{ip}, tt.path); got != tt.want {
			t.Errorf("%s matches %s = %v, want %v", tt.pat, tt.path, got, tt.want)
		}
	}
}

func TestShorten(t *testing.T) {
	long := strings.Repeat("é", 200)
	s := shorten(long)
	if len(s) > maxValueText+len("…") || !strings.HasSuffix(s, "…") || !strings.HasPrefix(long, strings.TrimSuffix(s, "…")) {
		t.Errorf("shorten cut badly: %q", s)
	}
}

func FuzzCompare(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"id":2}],"t":"2025-01-01T00:00:00Z"}`), []byte(`{"a":[1,{"id":3}]}`))
	f.Add([]byte(`[`), []byte(`null`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		res, err := Compare([]Exchange{{Op: "x", Status: 200, Body: a}}, []Exchange{{Op: "x", Status: 200, Body: b}}, Options{Ignore: []string{"$..etag"}})
		if err != nil {
			t.Fatal(err)
		}
		self, _ := Compare([]Exchange{{Op: "x", Status: 200, Body: a}}, []Exchange{{Op: "x", Status: 200, Body: a}}, Options{})
		if self.Status != Identical {
			t.Errorf("a body differs from itself: %+v", self.FirstDifference)
		}
		if res.Status == Different && res.FirstDifference == nil {
			t.Error("different without a difference")
		}
	})
}
