package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// openTestSQLite opens a SQLite store in t's temp dir, closed when t ends.
func openTestSQLite(t testing.TB, indexBucket bool) store {
	t.Helper()
	st, err := openSQLite(context.Background(), filepath.Join(t.TempDir(), "demo.db"), indexBucket, testLog)
	if err != nil {
		t.Fatalf("open SQLite: %v", err)
	}
	t.Cleanup(st.close)
	return st
}

// apiClient talks to a test server; it fails the test on transport errors.
type apiClient struct {
	t    testing.TB
	base string
	http *http.Client
}

func newAPIClient(t testing.TB, st store) *apiClient {
	t.Helper()
	ts := httptest.NewServer(newServer(st, serverOptions{}))
	t.Cleanup(ts.Close)
	return &apiClient{t: t, base: ts.URL, http: ts.Client()}
}

// do sends a request with an optional JSON body (string or value) and bearer
// token, and returns the status and body; it fails the test on transport errors.
func (c *apiClient) do(method, path, token string, body any) (int, []byte) {
	c.t.Helper()
	code, out, err := c.send(method, path, token, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return code, out
}

// send is do for any goroutine: it returns transport errors.
func (c *apiClient) send(method, path, token string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return resp.StatusCode, out, nil
}

// mustDo is do with an expected status; it decodes a JSON answer into v (if not nil).
func (c *apiClient) mustDo(method, path, token string, body any, wantStatus int, v any) []byte {
	c.t.Helper()
	got, out := c.do(method, path, token, body)
	if got != wantStatus {
		c.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, got, wantStatus, out)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, out, err)
		}
	}
	return out
}

// signUp creates a user and logs in, returning the session token and user id.
func (c *apiClient) signUp(username string) (string, int64) {
	c.t.Helper()
	c.mustDo("POST", "/users", "", credentials{username, "pw-" + username}, http.StatusCreated, nil)
	var login struct {
		Token  string `json:"token"`
		UserID int64  `json:"user_id"`
	}
	c.mustDo("POST", "/login", "", credentials{username, "pw-" + username}, http.StatusOK, &login)
	if login.Token == "" || login.UserID == 0 {
		c.t.Fatalf("login %s: got %+v, want a token and a user id", username, login)
	}
	return login.Token, login.UserID
}

// apiItem is the item JSON of the HTTP contract.
type apiItem struct {
	ID        int64           `json:"id"`
	Bucket    int64           `json:"bucket"`
	Title     string          `json:"title"`
	Owner     int64           `json:"owner"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

func TestAPISQLite(t *testing.T) {
	testAPI(t, func(t *testing.T) store { return openTestSQLite(t, true) })
}

// testAPI runs the HTTP contract against the stores newStore opens.
func testAPI(t *testing.T, newStore func(t *testing.T) store) {
	t.Run("users and sessions", func(t *testing.T) {
		c := newAPIClient(t, newStore(t))
		var created struct {
			ID       int64  `json:"id"`
			Username string `json:"username"`
		}
		c.mustDo("POST", "/users", "", credentials{"alice", "secret"}, http.StatusCreated, &created)
		if created.ID == 0 || created.Username != "alice" {
			t.Errorf("POST /users: got %+v, want an id and username alice", created)
		}
		tests := []struct {
			name, method, path string
			body               any
			want               int
		}{
			{"taken", "POST", "/users", credentials{"alice", "other"}, http.StatusConflict},
			{"bad JSON", "POST", "/users", `{"username":`, http.StatusBadRequest},
			{"empty body", "POST", "/users", "", http.StatusBadRequest},
			{"no username", "POST", "/users", credentials{"", "pw"}, http.StatusBadRequest},
			{"no password", "POST", "/users", credentials{"bob", ""}, http.StatusBadRequest},
			{"password over 72 bytes", "POST", "/users", credentials{"bob", strings.Repeat("x", 73)}, http.StatusBadRequest},
			{"wrong password", "POST", "/login", credentials{"alice", "wrong"}, http.StatusUnauthorized},
			{"unknown user", "POST", "/login", credentials{"nobody", "secret"}, http.StatusUnauthorized},
			{"login bad JSON", "POST", "/login", `[`, http.StatusBadRequest},
			{"login", "POST", "/login", credentials{"alice", "secret"}, http.StatusOK},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, body := c.do(tt.method, tt.path, "", tt.body)
				if got != tt.want {
					t.Errorf("%s %s: got %d, want %d (body %s)", tt.method, tt.path, got, tt.want, body)
				}
			})
		}
		t1, _ := c.signUp("carol")
		t2 := c.mustDo("POST", "/login", "", credentials{"carol", "pw-carol"}, http.StatusOK, nil)
		if strings.Contains(string(t2), t1) {
			t.Errorf("two logins returned the same token %s", t1)
		}
	})

	t.Run("auth on reads and writes", func(t *testing.T) {
		c := newAPIClient(t, newStore(t))
		token, _ := c.signUp("alice")
		var it apiItem
		c.mustDo("POST", "/items", token, map[string]any{"bucket": 1, "title": "t", "payload": map[string]int{"a": 1}}, http.StatusCreated, &it)
		id := fmt.Sprint(it.ID)
		tests := []struct {
			name, method, path, token string
			body                      any
			want                      int
		}{
			{"create without token", "POST", "/items", "", `{"bucket":1}`, http.StatusUnauthorized},
			{"create with bad token", "POST", "/items", "nope", `{"bucket":1}`, http.StatusUnauthorized},
			{"batch without token", "POST", "/items/batch", "", `{"items":[{}]}`, http.StatusUnauthorized},
			{"update without token", "PUT", "/items/" + id, "", `{"title":"x"}`, http.StatusUnauthorized},
			{"delete without token", "DELETE", "/items/" + id, "", nil, http.StatusUnauthorized},
			{"delete with bad token", "DELETE", "/items/" + id, "nope", nil, http.StatusUnauthorized},
			{"public get", "GET", "/items/" + id, "", nil, http.StatusOK},
			{"get with token", "GET", "/items/" + id, token, nil, http.StatusOK},
			{"get with bad token", "GET", "/items/" + id, "nope", nil, http.StatusUnauthorized},
			{"public list", "GET", "/items?bucket=1", "", nil, http.StatusOK},
			{"list with token", "GET", "/items?bucket=1", token, nil, http.StatusOK},
			{"list with bad token", "GET", "/items?bucket=1", "nope", nil, http.StatusUnauthorized},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, body := c.do(tt.method, tt.path, tt.token, tt.body)
				if got != tt.want {
					t.Errorf("%s %s: got %d, want %d (body %s)", tt.method, tt.path, got, tt.want, body)
				}
			})
		}
		t.Run("malformed header", func(t *testing.T) {
			req, _ := http.NewRequest("GET", c.base+"/items", nil)
			req.Header.Set("Authorization", "Basic YTpi")
			resp, err := c.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got, want := resp.StatusCode, http.StatusUnauthorized; got != want {
				t.Errorf("GET /items with Basic auth: got %d, want %d", got, want)
			}
		})
	})

	t.Run("items CRUD", func(t *testing.T) {
		c := newAPIClient(t, newStore(t))
		token, userID := c.signUp("alice")
		before := time.Now().Add(-time.Second)

		var created apiItem
		c.mustDo("POST", "/items", token, `{"bucket": 4, "title": "first \"one\"", "payload": {"n": 1, "tags": ["a", "b"]}}`, http.StatusCreated, &created)
		if created.ID == 0 || created.Bucket != 4 || created.Title != `first "one"` || created.Owner != userID {
			t.Errorf("POST /items: got %+v", created)
		}
		if !jsonEqual(created.Payload, `{"n":1,"tags":["a","b"]}`) {
			t.Errorf("POST /items payload: got %s", created.Payload)
		}
		if created.CreatedAt.Before(before) || !created.CreatedAt.Equal(created.UpdatedAt) {
			t.Errorf("POST /items times: created %v updated %v", created.CreatedAt, created.UpdatedAt)
		}
		path := fmt.Sprintf("/items/%d", created.ID)

		var got apiItem
		c.mustDo("GET", path, "", nil, http.StatusOK, &got)
		if !itemsEqual(got, created) {
			t.Errorf("GET %s: got %+v, want %+v", path, got, created)
		}

		var updated apiItem
		c.mustDo("PUT", path, token, `{"title": "renamed"}`, http.StatusOK, &updated)
		if updated.Title != "renamed" || !jsonEqual(updated.Payload, `{"n":1,"tags":["a","b"]}`) || !updated.CreatedAt.Equal(created.CreatedAt) || updated.UpdatedAt.Before(created.UpdatedAt) {
			t.Errorf("PUT title only: got %+v", updated)
		}
		c.mustDo("PUT", path, token, `{"payload": {"n": 2}}`, http.StatusOK, &updated)
		if updated.Title != "renamed" || !jsonEqual(updated.Payload, `{"n":2}`) {
			t.Errorf("PUT payload only: got %+v", updated)
		}
		c.mustDo("GET", path, "", nil, http.StatusOK, &got)
		if !itemsEqual(got, updated) {
			t.Errorf("GET after PUT: got %+v, want %+v", got, updated)
		}

		errs := []struct {
			name, method, path string
			body               any
			want               int
		}{
			{"payload not an object", "POST", "/items", `{"bucket":1,"payload":[1]}`, http.StatusBadRequest},
			{"bucket not an int", "POST", "/items", `{"bucket":"x"}`, http.StatusBadRequest},
			{"bad JSON", "POST", "/items", `{`, http.StatusBadRequest},
			{"update payload not an object", "PUT", path, `{"payload":"x"}`, http.StatusBadRequest},
			{"get missing", "GET", "/items/999999", nil, http.StatusNotFound},
			{"get non-numeric id", "GET", "/items/abc", nil, http.StatusNotFound},
			{"update missing", "PUT", "/items/999999", `{"title":"x"}`, http.StatusNotFound},
			{"delete missing", "DELETE", "/items/999999", nil, http.StatusNotFound},
			{"unknown route", "GET", "/nope", nil, http.StatusNotFound},
			{"wrong method", "PATCH", path, `{}`, http.StatusMethodNotAllowed},
		}
		for _, tt := range errs {
			t.Run(tt.name, func(t *testing.T) {
				got, body := c.do(tt.method, tt.path, token, tt.body)
				if got != tt.want {
					t.Errorf("%s %s: got %d, want %d (body %s)", tt.method, tt.path, got, tt.want, body)
				}
			})
		}

		c.mustDo("DELETE", path, token, nil, http.StatusNoContent, nil)
		c.mustDo("GET", path, "", nil, http.StatusNotFound, nil)
		c.mustDo("DELETE", path, token, nil, http.StatusNotFound, nil)
	})

	t.Run("batch and list", func(t *testing.T) {
		c := newAPIClient(t, newStore(t))
		token, _ := c.signUp("alice")
		batch := func(bucket, n int) []int64 {
			items := make([]map[string]any, n)
			for i := range items {
				items[i] = map[string]any{"bucket": bucket, "title": fmt.Sprintf("b%d-%d", bucket, i), "payload": map[string]int{"i": i}}
			}
			var out struct {
				IDs []int64 `json:"ids"`
			}
			c.mustDo("POST", "/items/batch", token, map[string]any{"items": items}, http.StatusCreated, &out)
			if len(out.IDs) != n {
				t.Fatalf("POST /items/batch of %d: got %d ids", n, len(out.IDs))
			}
			return out.IDs
		}
		ids7 := batch(7, 25)
		for i := 1; i < len(ids7); i++ {
			if ids7[i] <= ids7[i-1] {
				t.Fatalf("batch ids not in insert order: %v", ids7)
			}
		}
		ids8 := batch(8, 3)
		// Items created one by one after the batches are newer.
		var single apiItem
		c.mustDo("POST", "/items", token, `{"bucket":7,"title":"newest"}`, http.StatusCreated, &single)
		if string(single.Payload) != "{}" {
			t.Errorf("missing payload: got %s, want {}", single.Payload)
		}

		list := func(query string) []apiItem {
			var out struct {
				Items []apiItem `json:"items"`
			}
			c.mustDo("GET", "/items"+query, "", nil, http.StatusOK, &out)
			return out.Items
		}
		ids := func(items []apiItem) []int64 {
			out := make([]int64, len(items))
			for i, it := range items {
				out[i] = it.ID
			}
			return out
		}
		newest7 := append([]int64{single.ID}, reversed(ids7)...)

		tests := []struct {
			query string
			want  []int64
		}{
			{"?bucket=7", newest7[:20]},
			{"?bucket=7&limit=5", newest7[:5]},
			{"?bucket=7&limit=500", newest7}, // capped at 100, 26 exist
			{"?bucket=8", reversed(ids8)},
			{"?bucket=9", []int64{}},
			{"?limit=3", []int64{single.ID, ids8[2], ids8[1]}},
		}
		for _, tt := range tests {
			t.Run(tt.query, func(t *testing.T) {
				if got := ids(list(tt.query)); !equalInt64s(got, tt.want) {
					t.Errorf("GET /items%s: got ids %v, want %v", tt.query, got, tt.want)
				}
			})
		}
		if got := list("?bucket=7&limit=1"); len(got) != 1 || got[0].Title != "newest" || got[0].Bucket != 7 {
			t.Errorf("GET /items?bucket=7&limit=1: got %+v", got)
		}

		bad := []struct {
			name, method, path string
			body               any
		}{
			{"bucket not an int", "GET", "/items?bucket=x", nil},
			{"limit zero", "GET", "/items?limit=0", nil},
			{"limit not an int", "GET", "/items?limit=ten", nil},
			{"empty batch", "POST", "/items/batch", `{"items":[]}`},
			{"batch over 100", "POST", "/items/batch", `{"items":[` + strings.Repeat(`{},`, 100) + `{}]}`},
			{"batch payload not an object", "POST", "/items/batch", `{"items":[{"payload":1}]}`},
			{"batch bad JSON", "POST", "/items/batch", `{"items":`},
		}
		for _, tt := range bad {
			t.Run(tt.name, func(t *testing.T) {
				if got, body := c.do(tt.method, tt.path, token, tt.body); got != http.StatusBadRequest {
					t.Errorf("%s %s: got %d, want 400 (body %s)", tt.method, tt.path, got, body)
				}
			})
		}
	})

	t.Run("concurrent mix", func(t *testing.T) {
		// Writers and readers at once: no request may fail with 500 (SQLite's
		// single writer must queue, not answer SQLITE_BUSY).
		c := newAPIClient(t, newStore(t))
		token, _ := c.signUp("alice")
		const workers, ops = 8, 40
		errs := make(chan string, workers*ops)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < ops; i++ {
					var got, want int
					var body []byte
					var err error
					switch i % 4 {
					case 0:
						got, body, err = c.send("POST", "/items", token, fmt.Sprintf(`{"bucket":%d,"title":"c"}`, w))
						want = http.StatusCreated
					case 1:
						got, body, err = c.send("POST", "/items/batch", token, `{"items":[{"bucket":1},{"bucket":2}]}`)
						want = http.StatusCreated
					case 2:
						got, body, err = c.send("GET", fmt.Sprintf("/items?bucket=%d", w), token, nil)
						want = http.StatusOK
					case 3:
						got, body, err = c.send("PUT", "/items/1", token, `{"title":"u"}`)
						want = http.StatusOK
					}
					if err != nil {
						errs <- err.Error()
					} else if got != want {
						errs <- fmt.Sprintf("worker %d op %d: status %d, want %d: %s", w, i, got, want, body)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	})

	t.Run("operations", func(t *testing.T) {
		c := newAPIClient(t, newStore(t))
		c.mustDo("GET", "/health", "", nil, http.StatusOK, nil)
		var gc struct {
			HeapBytes uint64 `json:"heap_bytes"`
		}
		c.mustDo("POST", "/debug/gc", "", nil, http.StatusOK, &gc)
		if gc.HeapBytes == 0 {
			t.Errorf("POST /debug/gc: heap_bytes 0, want the live heap")
		}
		c.mustDo("GET", "/items/404", "", nil, http.StatusNotFound, nil)
		metricsText := string(c.mustDo("GET", "/metrics", "", nil, http.StatusOK, nil))
		for _, want := range []string{
			"\ngo_gc_heap_live_bytes ",
			`http_requests_total{route="GET /health",code="200"} 1`,
			`http_requests_total{route="GET /items/{id}",code="404"} 1`,
			`http_request_duration_seconds_count{route="POST /debug/gc"} 1`,
			"\nprocess_resident_memory_bytes ",
			"\ngo_memstats_heap_inuse_bytes ",
		} {
			if !strings.Contains(metricsText, want) {
				t.Errorf("GET /metrics: no %q in\n%s", want, metricsText)
			}
		}
	})
}

// itemsEqual compares items field by field (times with Equal, payloads as JSON).
func itemsEqual(a, b apiItem) bool {
	return a.ID == b.ID && a.Bucket == b.Bucket && a.Title == b.Title && a.Owner == b.Owner &&
		jsonEqual(a.Payload, string(b.Payload)) && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

func reversed(s []int64) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
