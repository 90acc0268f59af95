package soakworker

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
)

func TestServeMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	set := metrics.NewSet()
	set.NewCounter("longhaul_test_total").Inc()
	stop, err := ServeMetrics(addr, set)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"longhaul_test_total 1", "process_resident_memory_bytes"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %q:\n%.500s", want, body)
		}
	}
	if _, err := ServeMetrics(addr, set); err == nil || !strings.HasPrefix(err.Error(), "--metrics-addr "+addr+": ") {
		t.Errorf("a second endpoint on %s: %v, want a --metrics-addr error", addr, err)
	}
}
