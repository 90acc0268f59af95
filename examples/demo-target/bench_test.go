package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func benchItems(n int) []item {
	items := make([]item, n)
	t := time.Date(2025, 5, 20, 10, 0, 0, 0, time.UTC)
	for i := range items {
		items[i] = item{ID: int64(i + 1), Bucket: 7, Title: fmt.Sprintf("item number %d", i), Owner: 3,
			Payload: []byte(`{"score":42,"tags":["a","b"],"note":"some text here"}`), CreatedAt: t, UpdatedAt: t}
	}
	return items
}

// BenchmarkAppendItems is the hand-written list encoding (20 items, the default limit).
func BenchmarkAppendItems(b *testing.B) {
	items := benchItems(defaultListLimit)
	buf := make([]byte, 0, 8192)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendItems(buf[:0], items)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkMarshalItems is the same response through encoding/json, for comparison.
func BenchmarkMarshalItems(b *testing.B) {
	src := benchItems(defaultListLimit)
	items := make([]apiItem, len(src)) // the HTTP contract's item JSON
	for i, it := range src {
		items[i] = apiItem{it.ID, it.Bucket, it.Title, it.Owner, it.Payload, it.CreatedAt, it.UpdatedAt}
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		out, _ := json.Marshal(struct {
			Items []apiItem `json:"items"`
		}{items})
		n = len(out)
	}
	b.SetBytes(int64(n))
}

// benchHandler serves requests straight into the handler (no network), over
// SQLite seeded with rows items in 100 buckets.
func benchHandler(b *testing.B, rows int) (*server, string) {
	st := openTestSQLite(b, true)
	ctx := context.Background()
	owner, err := st.createUser(ctx, "bench", []byte("x"), now())
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]newItem, 100)
	for i := 0; i < rows; i += len(batch) {
		for j := range batch {
			batch[j] = newItem{Bucket: int64((i + j) % 100), Title: "t", Payload: []byte(`{"n":1}`)}
		}
		if _, err := st.createItems(ctx, owner, batch, now()); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.createSession(ctx, "tok", owner, now()); err != nil {
		b.Fatal(err)
	}
	return newServer(st, serverOptions{}), "tok"
}

func BenchmarkHandlerListItems(b *testing.B) {
	s, token := benchHandler(b, 10_000)
	req := httptest.NewRequest("GET", "/items?bucket=7&limit=20", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	b.ReportAllocs()
	for b.Loop() {
		serveExpect(b, s, req, http.StatusOK)
	}
}

func BenchmarkHandlerGetItem(b *testing.B) {
	s, _ := benchHandler(b, 1_000)
	req := httptest.NewRequest("GET", "/items/500", nil)
	b.ReportAllocs()
	for b.Loop() {
		serveExpect(b, s, req, http.StatusOK)
	}
}

func BenchmarkHandlerCreateItem(b *testing.B) {
	s, token := benchHandler(b, 0)
	body := `{"bucket":3,"title":"bench","payload":{"score":42,"tags":["a","b"]}}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/items", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		serveExpect(b, s, req, http.StatusCreated)
	}
}

// serveExpect serves req and fails b unless the answer has status want.
func serveExpect(b *testing.B, s *server, req *http.Request, want int) {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != want {
		b.Fatalf("status %d: %s", w.Code, w.Body)
	}
}
