//go:build !linux

package netns

import (
	"context"
	"net"
	"net/netip"
)

// Namespace is an open network namespace; on this system none can be opened.
type Namespace struct{}

// Open returns ErrUnsupported: network namespaces are Linux-only.
func Open(path string) (*Namespace, error) { return nil, ErrUnsupported }

// OpenTarget returns ErrUnsupported.
func OpenTarget(t Target) (*Namespace, error) { return nil, ErrUnsupported }

// Path is "".
func (n *Namespace) Path() string { return "" }

// ID is "".
func (n *Namespace) ID() string { return "" }

// Close does nothing.
func (n *Namespace) Close() error { return nil }

// DialContext returns ErrUnsupported.
func (n *Namespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return nil, &net.OpError{Op: "dial", Net: network, Err: ErrUnsupported}
}

// Listeners returns ErrUnsupported.
func (n *Namespace) Listeners() ([]netip.AddrPort, error) { return nil, ErrUnsupported }

// TCPTables is not supported off Linux.
func (n *Namespace) TCPTables() ([][]byte, error) { return nil, ErrUnsupported }

// LoopbackAddr returns ErrUnsupported.
func (n *Namespace) LoopbackAddr(ctx context.Context, port int) (netip.AddrPort, error) {
	return netip.AddrPort{}, ErrUnsupported
}
