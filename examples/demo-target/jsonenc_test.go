package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestAppendJSONString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`quote " and \ backslash`, `"quote \" and \\ backslash"`},
		{"tab\tnl\ncr\r", `"tab\tnl\ncr\r"`},
		{"\x00\x1f", `"\u0000\u001f"`},
		{"héllo ✓ 🙂", `"héllo ✓ 🙂"`},
		{"bad \xff utf8", `"bad \ufffd utf8"`},
		{"line\u2028para\u2029", `"line\u2028para\u2029"`},
		{"<a&b>", `"<a&b>"`},
	}
	for _, tt := range tests {
		if got := string(appendJSONString(nil, tt.in)); got != tt.want {
			t.Errorf("appendJSONString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzAppendJSONString checks the output is valid JSON that decodes to what
// encoding/json's own encoding of the same string decodes to.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\xff\xfe", "\u2028", "\x7f", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendJSONString(nil, s)
		if !json.Valid(out) {
			t.Fatalf("appendJSONString(%q) = %s: not valid JSON", s, out)
		}
		ref, _ := json.Marshal(s)
		var got, want string
		json.Unmarshal(out, &got)
		json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("appendJSONString(%q) decodes to %q, encoding/json's to %q", s, got, want)
		}
	})
}

func FuzzCompactJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{ "a" : [1, 2 ,"x y"] }`, `{"s":"\" \\ "}`, "{\n\t\"k\": {\"n\": null}\r\n}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		var want bytes.Buffer
		json.Compact(&want, []byte(s))
		if got := compactJSON([]byte(s)); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compactJSON(%q) = %s, want %s", s, got, want.Bytes())
		}
	})
}

// TestAppendItemMatchesContract decodes the hand-written encoding with
// encoding/json and compares it with the item.
func TestAppendItemMatchesContract(t *testing.T) {
	created := time.Date(2025, 5, 20, 10, 0, 0, 123456000, time.UTC)
	items := []item{
		{ID: 1, Bucket: 7, Title: "a \"title\"", Owner: 3, Payload: []byte(`{"k": [1, 2]}`), CreatedAt: created, UpdatedAt: created.Add(time.Second)},
		{ID: 2, Bucket: -1, Title: "", Owner: 4, Payload: nil, CreatedAt: created, UpdatedAt: created},
	}
	out := appendItems(nil, items)
	var got struct{ Items []apiItem }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if len(got.Items) != len(items) {
		t.Fatalf("got %d items, want %d", len(got.Items), len(items))
	}
	for i, want := range items {
		g := got.Items[i]
		wantPayload := string(want.Payload)
		if wantPayload == "" {
			wantPayload = "{}"
		}
		if g.ID != want.ID || g.Bucket != want.Bucket || g.Title != want.Title || g.Owner != want.Owner ||
			!jsonEqual(g.Payload, wantPayload) || !g.CreatedAt.Equal(want.CreatedAt) || !g.UpdatedAt.Equal(want.UpdatedAt) {
			t.Errorf("item %d: got %+v, want %+v", i, g, want)
		}
	}
	if want := `"created_at":"2025-05-20T10:00:00.123456Z"`; !bytes.Contains(out, []byte(want)) {
		t.Errorf("got %s, want RFC 3339 UTC times like %s", out, want)
	}
	if got, want := string(appendIDs(nil, []int64{3, 4})), `{"ids":[3,4]}`; got != want {
		t.Errorf("appendIDs = %s, want %s", got, want)
	}
}
