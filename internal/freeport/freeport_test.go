package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestForTestIsListenable: the port returned can be listened on at once.
func TestForTestIsListenable(t *testing.T) {
	port := ForTest(t)
	if port <= 0 || port > 65535 {
		t.Fatalf("port %d is not a TCP port", port)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on the port found free: %v", err)
	}
	l.Close()
}
