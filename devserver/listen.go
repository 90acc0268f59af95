package devserver

import (
	"fmt"
	"net"
	"strconv"
)

// ParseListenAddr splits HOST:PORT for a listener: an empty host is every
// address, localhost is 127.0.0.1; the host must be an IP address.
func ParseListenAddr(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q: want HOST:PORT", addr)
	}
	switch h {
	case "":
		h = "0.0.0.0"
	case "localhost":
		h = "127.0.0.1"
	}
	if net.ParseIP(h) == nil {
		return "", 0, fmt.Errorf("%q: the host must be an IP address (0.0.0.0 for all)", addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: port must be 0..65535", addr)
	}
	return h, port, nil
}
