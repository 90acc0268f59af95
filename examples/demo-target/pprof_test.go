package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPprofServed: the profiles longhaul's probes.profile reads are served,
// gzipped profile.proto, without counting as API requests.
func TestPprofServed(t *testing.T) {
	ts := httptest.NewServer(newServer(nil, serverOptions{}))
	defer ts.Close()
	for _, path := range []string{"/debug/pprof/heap?gc=1", "/debug/pprof/profile?seconds=1"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		if _, err := gzip.NewReader(bytes.NewReader(body)); err != nil {
			t.Errorf("GET %s: not a gzipped profile: %v", path, err)
		}
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(body, []byte("pprof")) {
		t.Errorf("/metrics counts profiling requests:\n%s", body)
	}
}
