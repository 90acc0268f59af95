package loopbench

import (
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestServeBody(t *testing.T) {
	rec := httptest.NewRecorder()
	ServeBody(rec, httptest.NewRequest("GET", "/", nil))
	res := rec.Result()
	got, _ := io.ReadAll(res.Body)
	if len(Body) != 40 {
		t.Errorf("Body is %d bytes, want 40 (bench/driver/RESULTS.md describes a 40-byte body)", len(Body))
	}
	if string(got) != string(Body) {
		t.Errorf("body = %q, want %q", got, Body)
	}
	if cl := res.Header.Get("Content-Length"); cl != strconv.Itoa(len(got)) {
		t.Errorf("Content-Length = %s, body is %d bytes", cl, len(got))
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
}
