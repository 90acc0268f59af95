// Package freeport finds a loopback TCP port that nothing listens on, for
// tests and benchmarks that start a server which must be told its port
// (a process that can listen on port 0 and say its address should do that
// instead: a port found free here can be taken by another process before it
// is used).
package freeport

import (
	"fmt"
	"net"
	"testing"
)

// Loopback returns a TCP port that was free on 127.0.0.1 a moment ago.
func Loopback() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ForTest is Loopback for a test: it fails t if no port can be found.
func ForTest(t testing.TB) int {
	t.Helper()
	port, err := Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
