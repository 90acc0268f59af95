package probes

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// answer serves status and body to a method request for path (400 to any
// other) until the test ends, and returns that path's URL.
func answer(t *testing.T, method, path string, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.Method != method {
			http.Error(w, "wrong request", 400)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + path
}

func TestMetricScraper(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    int64
		wantErr string
	}{
		{name: "gauge", status: 200, body: "go_gc_heap_live_bytes 5.6623104e+07\n", want: 56623104},
		{name: "rounded", status: 200, body: "go_gc_heap_live_bytes 10.6\n", want: 11},
		{name: "missing", status: 200, body: "other 1\n", wantErr: "metric not found"},
		{name: "negative", status: 200, body: "go_gc_heap_live_bytes -1\n", wantErr: "out of range"},
		{name: "404", status: 404, body: "not found", wantErr: "status 404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMetricScraper(answer(t, http.MethodGet, "/metrics", tt.status, tt.body), "go_gc_heap_live_bytes")
			got, err := m.Read(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Read = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGCHookClient(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    int64
		wantErr error
		errText string
	}{
		{name: "ok", status: 200, body: `{"heap_bytes": 56623104}`, want: 56623104},
		{name: "float", status: 200, body: `{"heap_bytes": 1.5e6, "extra": true}`, want: 1500000},
		{name: "missing field", status: 200, body: `{"heap": 1}`, wantErr: ErrNoHeapBytes},
		{name: "not json", status: 200, body: `ok`, errText: "decode"},
		{name: "server error", status: 500, body: `boom`, errText: "status 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewGCHookClient(answer(t, http.MethodPost, "/debug/gc", tt.status, tt.body)).Collect(context.Background())
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errText)
				}
			case err != nil:
				t.Fatal(err)
			case got != tt.want:
				t.Errorf("Collect = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGCHookTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := NewGCHookClient(srv.URL + "/debug/gc").Collect(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Collect took %v past its 50ms deadline", d)
	}
}
