package probes

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"

	"github.com/longhaul-dev/longhaul/window"
)

// ConnCounter counts a target's TCP connections on the port it serves on,
// by state (window.Connections), from the socket tables of the network
// namespace it listens in: /proc/PID/net/tcp and tcp6 of a local process,
// the same tables read inside a container's namespace for a docker target.
//
// Why the kernel's table and not the client's count: longhaul's own count of
// open sessions is bounded by its VUs, so a server that never closes the
// sessions its clients closed shows nowhere on the client side. Its sockets
// stay in CLOSE_WAIT (the peer's FIN received, the server's close never
// made) until the process exits, and that state is in the table.
type ConnCounter struct {
	port   uint16
	tables func() ([][]byte, error)
}

// NewConnCounter counts connections whose local port is port, in the tables
// that tables returns (the contents of /proc/net/tcp and /proc/net/tcp6 of
// one network namespace).
func NewConnCounter(port int, tables func() ([][]byte, error)) (*ConnCounter, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("connections: port %d: must be 1..65535", port)
	}
	if tables == nil {
		return nil, errors.New("connections: no socket tables to read")
	}
	return &ConnCounter{port: uint16(port), tables: tables}, nil
}

// Read counts the connections now.
func (c *ConnCounter) Read() (window.Connections, error) {
	ts, err := c.tables()
	if err != nil {
		return window.Connections{}, err
	}
	var n window.Connections
	for _, t := range ts {
		if err := countConnections(t, c.port, &n); err != nil {
			return window.Connections{}, err
		}
	}
	return n, nil
}

// ProcTCPTables reads the TCP socket tables of process pid's network
// namespace (/proc/PID/net/tcp and tcp6; the latter is absent when IPv6 is
// disabled).
func ProcTCPTables(pid int) func() ([][]byte, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/net/"
	return func() ([][]byte, error) {
		var out [][]byte
		for _, name := range []string{"tcp", "tcp6"} {
			b, err := os.ReadFile(dir + name)
			if errors.Is(err, os.ErrNotExist) && name == "tcp6" {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("connections: %w", err)
			}
			out = append(out, b)
		}
		return out, nil
	}
}

// TCP states in /proc/net/tcp (include/net/tcp_states.h), as the hex the
// table prints.
var (
	tcpEstablished = []byte("01")
	tcpCloseWait   = []byte("08")
)

// countConnections adds the sockets of one /proc/net/tcp or tcp6 table whose
// local port is port to n, by state. A line is
// "sl local_address rem_address st …", the address "HEXADDR:HEXPORT" with
// the port in network order.
func countConnections(table []byte, port uint16, n *window.Connections) error {
	first := true
	for line := range bytes.Lines(table) {
		if first { // the header
			first = false
			continue
		}
		f := bytes.Fields(line)
		if len(f) < 4 {
			continue
		}
		colon := bytes.LastIndexByte(f[1], ':')
		if colon < 0 {
			return fmt.Errorf("connections: local address %q", f[1])
		}
		p, err := strconv.ParseUint(string(f[1][colon+1:]), 16, 16)
		if err != nil {
			return fmt.Errorf("connections: local port %q", f[1][colon+1:])
		}
		if uint16(p) != port {
			continue
		}
		switch {
		case bytes.Equal(f[3], tcpEstablished):
			n.Established++
		case bytes.Equal(f[3], tcpCloseWait):
			n.CloseWait++
		}
	}
	return nil
}

// urlPort is the TCP port of an http(s) base URL: its explicit port, else
// the scheme's.
func urlPort(raw string) (int, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return 0, fmt.Errorf("connections: the target's URL %q has no host", raw)
	}
	if p := u.Port(); p != "" {
		return strconv.Atoi(p)
	}
	switch u.Scheme {
	case "http":
		return 80, nil
	case "https":
		return 443, nil
	}
	return 0, fmt.Errorf("connections: the target's URL %q has no port", raw)
}
