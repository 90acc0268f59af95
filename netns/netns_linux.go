//go:build linux

package netns

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// setns is unix.Setns; tests replace it to see a refusal (EPERM).
var setns = unix.Setns

// errClosed is returned by a Namespace's methods after Close.
var errClosed = errors.New("network namespace closed")

// Namespace is an open network namespace. Its methods are safe for
// concurrent use.
type Namespace struct {
	path string
	id   string

	mu sync.RWMutex // Close waits for the dials in progress (they use fd)
	fd int          // -1 once closed
}

// Open opens the network namespace at path (a /proc/<pid>/ns/net link, or
// a namespace file bound elsewhere, as `ip netns` does under /run/netns)
// and enters and leaves it once, so that an error here means the process
// cannot dial in it: ErrNotFound, ErrNotPermitted, or another error that
// names path.
func Open(path string) (*Namespace, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, namespaceError("open", path, err)
	}
	if typ, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); err == nil && typ != unix.CLONE_NEWNET {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("open network namespace %s: not a network namespace", path)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, namespaceError("stat", path, err)
	}
	n := &Namespace{path: path, id: "net:[" + strconv.FormatUint(st.Ino, 10) + "]", fd: fd}
	if err := n.do(func() error { return nil }); err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

// OpenTarget opens t.Path and checks that it is still the namespace t.ID
// names (ErrChanged if not).
func OpenTarget(t Target) (*Namespace, error) {
	n, err := Open(t.Path)
	if err != nil {
		return nil, err
	}
	if t.ID != "" && n.id != t.ID {
		_ = n.Close()
		return nil, fmt.Errorf("%w: %s is %s, not %s (the process was replaced)", ErrChanged, t.Path, n.id, t.ID)
	}
	return n, nil
}

// namespaceError wraps err in the sentinel callers branch on.
func namespaceError(op, path string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w: %s %s: %w", ErrNotFound, op, path, err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: %s %s: %w", ErrNotPermitted, op, path, err)
	}
	return fmt.Errorf("network namespace %s: %s: %w", path, op, err)
}

// Path is the namespace file Open was given.
func (n *Namespace) Path() string { return n.path }

// ID identifies the namespace: "net:[inode]", as readlink shows it.
func (n *Namespace) ID() string { return n.id }

// Close releases the namespace. Connections opened in it stay open.
func (n *Namespace) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd < 0 {
		return nil
	}
	err := unix.Close(n.fd)
	n.fd = -1
	return err
}

// do runs fn on an OS thread that is inside the namespace for fn's
// duration (see the package doc).
func (n *Namespace) do(fn func() error) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.fd < 0 {
		return errClosed
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(home)
		if err := setns(n.fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- namespaceError("enter", n.path, err)
			return
		}
		ferr := fn()
		if err := setns(home, unix.CLONE_NEWNET); err != nil {
			// Subtleness ahead: the thread is stuck in the foreign
			// namespace. Returning without UnlockOSThread makes the runtime
			// terminate it, so no other goroutine ever runs there.
			errc <- errors.Join(ferr, fmt.Errorf("return from network namespace %s: %w", n.path, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// DialContext connects to address inside the namespace, like
// net.Dialer.DialContext. network is tcp, tcp4 or tcp6; address must be a
// loopback IP literal and port (ErrNotLoopback otherwise), so a connection
// never leaves the namespace. Errors are *net.OpError, as net's, so a
// refused connection still matches syscall.ECONNREFUSED.
func (n *Namespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%w: %q", ErrNotLoopback, address)}
	}
	var c net.Conn
	err = n.do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	if err != nil && c != nil {
		_ = c.Close()
		c = nil
	}
	return c, err
}

// Listeners lists the TCP sockets listening inside the namespace (IPv4 and
// IPv6).
func (n *Namespace) Listeners() ([]netip.AddrPort, error) {
	tables, err := n.TCPTables()
	if err != nil {
		return nil, err
	}
	var out []netip.AddrPort
	for i, b := range tables {
		ls, err := parseListeners(b)
		if err != nil {
			return nil, fmt.Errorf("listeners in %s: table %d: %w", n.path, i, err)
		}
		out = append(out, ls...)
	}
	return out, nil
}

// TCPTables reads the namespace's TCP socket tables, /proc/thread-self/net/tcp
// and tcp6 (absent when IPv6 is disabled), on a thread inside it.
func (n *Namespace) TCPTables() ([][]byte, error) {
	var out [][]byte
	err := n.do(func() error {
		for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
			b, err := os.ReadFile(f)
			if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(f, "6") {
				continue // IPv6 disabled
			}
			if err != nil {
				return fmt.Errorf("socket tables in %s: %w", n.path, err)
			}
			out = append(out, b)
		}
		return nil
	})
	return out, err
}

// tcpListen is the LISTEN state in /proc/net/tcp.
const tcpListen = "0A"

// parseListeners reads the listening sockets of a /proc/net/tcp or tcp6
// table. Addresses are hex, each 32-bit word in the host's byte order;
// ports are hex in network order.
func parseListeners(b []byte) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	lines := strings.Split(string(b), "\n")
	for i, ln := range lines {
		f := strings.Fields(ln)
		if i == 0 || len(f) < 4 || f[3] != tcpListen {
			continue
		}
		hexAddr, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("line %d: local address %q", i+1, f[1])
		}
		raw, err := hex.DecodeString(hexAddr)
		if err != nil || (len(raw) != 4 && len(raw) != 16) {
			return nil, fmt.Errorf("line %d: local address %q", i+1, f[1])
		}
		for w := 0; w < len(raw); w += 4 {
			binary.NativeEndian.PutUint32(raw[w:], binary.BigEndian.Uint32(raw[w:]))
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("line %d: port %q", i+1, hexPort)
		}
		addr, _ := netip.AddrFromSlice(raw)
		out = append(out, netip.AddrPortFrom(addr, uint16(port)))
	}
	return out, nil
}

// LoopbackAddr returns the loopback address and port on which port accepts
// connections inside the namespace: the listener's own address when it is a
// loopback one, 127.0.0.1 for a wildcard listener (0.0.0.0 or ::), ::1 for
// a listener on ::1 only. It dials the address once to be sure. When port
// listens only on other addresses (a server bound to its container's
// bridge address), the error wraps ErrNotOnLoopback and names them.
func (n *Namespace) LoopbackAddr(ctx context.Context, port int) (netip.AddrPort, error) {
	ls, err := n.Listeners()
	if err != nil {
		return netip.AddrPort{}, err
	}
	cands, on := loopbackCandidates(ls, port)
	if len(cands) == 0 {
		if len(on) == 0 {
			return netip.AddrPort{}, fmt.Errorf("%w: nothing listens on port %d in %s", ErrNotOnLoopback, port, n.path)
		}
		return netip.AddrPort{}, fmt.Errorf("%w: port %d listens on %s only", ErrNotOnLoopback, port, strings.Join(on, ", "))
	}
	var errs []error
	for _, ap := range cands {
		c, err := n.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			_ = c.Close()
			return ap, nil
		}
		errs = append(errs, err)
	}
	return netip.AddrPort{}, fmt.Errorf("%w: port %d: %w", ErrNotOnLoopback, port, errors.Join(errs...))
}

// loopbackCandidates are the loopback addresses to try for port, IPv4
// first, and every address port listens on (for messages).
func loopbackCandidates(ls []netip.AddrPort, port int) (cands []netip.AddrPort, on []string) {
	var v4, v6 []netip.AddrPort
	add := func(list []netip.AddrPort, a netip.Addr) []netip.AddrPort {
		ap := netip.AddrPortFrom(a, uint16(port))
		for _, x := range list {
			if x == ap {
				return list
			}
		}
		return append(list, ap)
	}
	for _, l := range ls {
		if int(l.Port()) != port {
			continue
		}
		on = append(on, l.String())
		a := l.Addr().Unmap()
		switch {
		case a.IsUnspecified() && a.Is4():
			v4 = add(v4, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
		case a.IsUnspecified(): // ::, which takes IPv4 too unless IPV6_V6ONLY
			v4 = add(v4, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
			v6 = add(v6, netip.IPv6Loopback())
		case a.IsLoopback() && a.Is4():
			v4 = add(v4, a)
		case a.IsLoopback():
			v6 = add(v6, a)
		}
	}
	return append(v4, v6...), on
}
