//go:build linux

package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/longhaul-dev/longhaul/netns/netnstest"
)

// newNamespace is a namespace of the test's own (netnstest.New).
func newNamespace(t testing.TB, aliases ...netip.Addr) *netnstest.Namespace {
	t.Helper()
	return netnstest.New(t, aliases...)
}

func open(t testing.TB, ns *netnstest.Namespace) *Namespace {
	t.Helper()
	n, err := Open(ns.Path)
	if err != nil {
		t.Fatalf("Open(%s): %v", ns.Path, err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// listenIn opens a TCP listener inside ns that answers every connection
// with greeting and the peer's address, then closes it.
func listenIn(t testing.TB, ns *netnstest.Namespace, addr, greeting string) net.Listener {
	t.Helper()
	ln := ns.Listen(t, addr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s from %s\n", greeting, c.RemoteAddr())
			_ = c.Close()
		}
	}()
	return ln
}

func readLine(t testing.TB, c net.Conn) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	s, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return strings.TrimSpace(s)
}

func TestDialReachesTheNamespacesLoopback(t *testing.T) {
	ns := newNamespace(t)
	n := open(t, ns)
	ln := listenIn(t, ns, "127.0.0.1:0", "inside")
	addr := ln.Addr().String()

	c, err := n.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s in the namespace: %v", addr, err)
	}
	defer c.Close()
	got := readLine(t, c)
	if !strings.HasPrefix(got, "inside from 127.0.0.1:") {
		t.Errorf("got %q, want the namespace's server, reached from its loopback", got)
	}

	// The host's loopback is another one: the same address there is not
	// this listener (nothing, or something else, answers).
	if hc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = hc.SetDeadline(time.Now().Add(200 * time.Millisecond))
		line, _ := bufio.NewReader(hc).ReadString('\n')
		hc.Close()
		if strings.HasPrefix(line, "inside") {
			t.Errorf("the host's %s reached the namespace's listener", addr)
		}
	}
}

func TestDialErrorsAreNetErrors(t *testing.T) {
	ns := newNamespace(t)
	n := open(t, ns)
	ln := listenIn(t, ns, "127.0.0.1:0", "x")
	addr := ln.Addr().String()
	ln.Close()
	_, err := n.DialContext(context.Background(), "tcp", addr)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial of a closed port: %v, want ECONNREFUSED", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Errorf("dial error %T is not a *net.OpError", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n.DialContext(ctx, "tcp", addr); err == nil {
		t.Error("dial with a cancelled context succeeded")
	}
}

func TestDialRefusesNonLoopbackAddresses(t *testing.T) {
	n := open(t, newNamespace(t))
	for _, addr := range []string{"172.17.0.2:8080", "10.0.0.1:80", "[fe80::1]:80", "localhost:80", "example.com:80", "8080"} {
		_, err := n.DialContext(context.Background(), "tcp", addr)
		if !errors.Is(err, ErrNotLoopback) {
			t.Errorf("dial %s: %v, want ErrNotLoopback", addr, err)
		}
	}
	if _, err := n.DialContext(context.Background(), "udp", "127.0.0.1:53"); err == nil {
		t.Error("dial udp: no error")
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("/proc/999999999/ns/net"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open of a pid that does not exist: %v, want ErrNotFound", err)
	}
	if _, err := Open("/proc/self/ns/uts"); err == nil || !strings.Contains(err.Error(), "not a network namespace") {
		t.Errorf("Open of a UTS namespace: %v, want 'not a network namespace'", err)
	}
	path := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Error("Open of a plain file: no error")
	}
}

// TestOpenNotPermitted: a process without CAP_SYS_ADMIN gets EPERM from
// setns; Open reports it as ErrNotPermitted (and the caller falls back).
func TestOpenNotPermitted(t *testing.T) {
	path := newNamespace(t).Path
	real := setns
	t.Cleanup(func() { setns = real })
	setns = func(fd, nstype int) error { return unix.EPERM }
	_, err := Open(path)
	if !errors.Is(err, ErrNotPermitted) || !errors.Is(err, unix.EPERM) {
		t.Errorf("Open when setns is refused: %v, want ErrNotPermitted wrapping EPERM", err)
	}
}

func TestOpenTarget(t *testing.T) {
	ns := newNamespace(t)
	path := ns.Path
	n := open(t, ns)
	if !strings.HasPrefix(n.ID(), "net:[") {
		t.Errorf("ID %q", n.ID())
	}
	if link, err := os.Readlink(path); err != nil || link != n.ID() {
		t.Errorf("ID %q, readlink %q (%v)", n.ID(), link, err)
	}
	m, err := OpenTarget(Target{Path: path, ID: n.ID()})
	if err != nil {
		t.Fatalf("OpenTarget with the right ID: %v", err)
	}
	m.Close()
	if _, err := OpenTarget(Target{Path: "/proc/self/ns/net", ID: n.ID()}); !errors.Is(err, ErrChanged) {
		t.Errorf("OpenTarget of another namespace under a recorded ID: %v, want ErrChanged", err)
	}
}

func TestClosedNamespace(t *testing.T) {
	n, err := Open(newNamespace(t).Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := n.DialContext(context.Background(), "tcp", "127.0.0.1:1"); !errors.Is(err, errClosed) {
		t.Errorf("dial after Close: %v", err)
	}
}

// threadNamespaces maps each of this process's threads to its network
// namespace.
func threadNamespaces(t testing.TB) map[string]string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, task := range tasks {
		if link, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net"); err == nil {
			out[task.Name()] = link
		}
	}
	return out
}

// TestThreadsComeHome: after many dials (some failing) and a failed return
// to the home namespace, no thread but the test's own holder is left in the
// foreign namespace.
func TestThreadsComeHome(t *testing.T) {
	home, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	n := open(t, ns)
	ln := listenIn(t, ns, "127.0.0.1:0", "x")
	for i := 0; i < 50; i++ {
		c, err := n.DialContext(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		_, _ = n.DialContext(context.Background(), "tcp", "127.0.0.1:1") // refused
	}

	// A failed return: the thread stays locked and the runtime ends it.
	real := setns
	calls := 0
	setns = func(fd, nstype int) error {
		calls++
		if calls == 2 {
			return unix.EINVAL
		}
		return real(fd, nstype)
	}
	_, err = n.DialContext(context.Background(), "tcp", ln.Addr().String())
	setns = real
	if err == nil || !strings.Contains(err.Error(), "return from network namespace") {
		t.Errorf("dial with a failed return: %v", err)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		var strays []string
		for task, ns := range threadNamespaces(t) {
			if ns != home && ns == n.ID() {
				strays = append(strays, task)
			}
		}
		// One thread is newNamespace's holder.
		if len(strays) <= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads %v are still in the foreign namespace %s", strays, n.ID())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseListeners(t *testing.T) {
	// Excerpts of /proc/net/tcp and tcp6 (x86, little-endian words): a
	// listener on 127.0.0.1:8080, one on 172.18.0.3:5432, an established
	// connection, and on IPv6 :: port 9229 and ::1 port 8081.
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 030012AC:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:240D 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1 0000000000000000 100 0 0 10 0
`
	got4, err := parseListeners([]byte(tcp))
	if err != nil {
		t.Fatal(err)
	}
	got6, err := parseListeners([]byte(tcp6))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ap := range append(got4, got6...) {
		got = append(got, ap.String())
	}
	want := "127.0.0.1:8080 172.18.0.3:5432 [::]:9229 [::1]:8081"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	if _, err := parseListeners([]byte("header\n 0: zz:1F90 0 0A\n")); err == nil {
		t.Error("bad address: no error")
	}
}

func TestLoopbackCandidates(t *testing.T) {
	ap := netip.MustParseAddrPort
	cases := []struct {
		listeners []netip.AddrPort
		want      string
	}{
		{[]netip.AddrPort{ap("0.0.0.0:8080")}, "127.0.0.1:8080"},
		{[]netip.AddrPort{ap("[::]:8080")}, "127.0.0.1:8080 [::1]:8080"},
		{[]netip.AddrPort{ap("127.0.0.5:8080"), ap("0.0.0.0:9")}, "127.0.0.5:8080"},
		{[]netip.AddrPort{ap("[::1]:8080")}, "[::1]:8080"},
		{[]netip.AddrPort{ap("[::ffff:127.0.0.1]:8080")}, "127.0.0.1:8080"},
		{[]netip.AddrPort{ap("172.18.0.3:8080"), ap("127.0.0.1:9")}, ""},
		{nil, ""},
	}
	for _, c := range cases {
		cands, _ := loopbackCandidates(c.listeners, 8080)
		var got []string
		for _, x := range cands {
			got = append(got, x.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%v: got %v, want %q", c.listeners, got, c.want)
		}
	}
}

// TestLoopbackAddr on live listeners: a wildcard listener is reached on
// 127.0.0.1, one on ::1 on ::1, and one bound only to another address of
// the namespace (as a server bound to its container's bridge address) is
// refused with the address named, and never dialled.
func TestLoopbackAddr(t *testing.T) {
	other := netip.MustParseAddr("10.200.0.1")
	ns := newNamespace(t, other)
	n := open(t, ns)
	ctx := context.Background()
	port := func(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

	wild := listenIn(t, ns, "0.0.0.0:0", "wild")
	if got, err := n.LoopbackAddr(ctx, port(wild)); err != nil || got.String() != fmt.Sprintf("127.0.0.1:%d", port(wild)) {
		t.Errorf("wildcard listener: %v, %v", got, err)
	}
	v6 := listenIn(t, ns, "[::1]:0", "v6")
	if got, err := n.LoopbackAddr(ctx, port(v6)); err != nil || got.String() != fmt.Sprintf("[::1]:%d", port(v6)) {
		t.Errorf("::1 listener: %v, %v", got, err)
	}
	elsewhere := listenIn(t, ns, other.String()+":0", "elsewhere")
	_, err := n.LoopbackAddr(ctx, port(elsewhere))
	if !errors.Is(err, ErrNotOnLoopback) || !strings.Contains(err.Error(), "10.200.0.1") {
		t.Errorf("listener on %s only: %v, want ErrNotOnLoopback naming it", other, err)
	}
	if _, err := n.LoopbackAddr(ctx, 1); !errors.Is(err, ErrNotOnLoopback) || !strings.Contains(err.Error(), "nothing listens") {
		t.Errorf("no listener: %v", err)
	}
}

// BenchmarkDialNamespace is one connection opened inside another namespace
// (thread switch in and out included), BenchmarkDialHost the same with a
// plain net.Dialer on the host's loopback: the price of the netns route per
// connection. The driver keeps its connections alive, so it pays it once
// per VU, not per request.
func BenchmarkDialNamespace(b *testing.B) {
	ns := newNamespace(b)
	n := open(b, ns)
	ln := listenIn(b, ns, "127.0.0.1:0", "x")
	addr := ln.Addr().String()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := n.DialContext(ctx, "tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

func BenchmarkDialHost(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var d net.Dialer
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
