//go:build !linux

package driver

import (
	"io"
	"net"
)

// Raw socket I/O is Linux-only; elsewhere the client reads and writes the
// net.Conn itself.
const rawSocketIOSupported = false

type sockIO struct{ io.ReadWriter }

func newSockIO(c net.Conn) (*sockIO, error) { return &sockIO{c}, nil }
