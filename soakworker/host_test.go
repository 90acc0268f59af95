package soakworker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/store"
)

// TestOpenHost: the data directory, the store (DATA/longhaul.db by default),
// both log files and the metrics endpoint are opened, and closed again.
func TestOpenHost(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	var terminal strings.Builder
	h, err := OpenHost(context.Background(), HostOptions{Data: data, Getenv: func(string) string { return "" }, MetricsAddr: "127.0.0.1:0", Terminal: &terminal})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.DataDir != data || h.Metrics == nil || h.Logs == nil {
		t.Errorf("host = %+v; want data dir %s, metrics and logs", h, data)
	}
	if want := filepath.Join(data, "longhaul.db"); !strings.Contains(h.Where, want) {
		t.Errorf("Where = %q, want the default store %s", h.Where, want)
	}
	for _, f := range []string{"longhaul.db", "temporal.log", "longhaul.log"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := h.Store.ListRuns(context.Background(), store.ListOptions{}); err != nil {
		t.Errorf("store: %v", err)
	}
}

// TestOpenHostUnusable: what the user named and cannot be used is
// ErrUnusable, with the cause's message alone.
func TestOpenHostUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	tests := []struct {
		name string
		o    HostOptions
		want string
	}{
		{"data directory under a file", HostOptions{Data: filepath.Join(file, "data"), Store: filepath.Join(t.TempDir(), "s.db")}, "data directory"},
		{"metrics address that does not parse", HostOptions{Data: t.TempDir(), MetricsAddr: "127.0.0.1:notaport"}, "--metrics-addr 127.0.0.1:notaport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Getenv, tt.o.Terminal = noEnv, new(strings.Builder)
			h, err := OpenHost(context.Background(), tt.o)
			if err == nil {
				h.Close()
				t.Fatal("OpenHost succeeded")
			}
			if !errors.Is(err, ErrUnusable) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v; want ErrUnusable starting %q", err, tt.want)
			}
		})
	}
}
