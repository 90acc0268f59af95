//go:build linux

// Package netnstest gives a test a network namespace of its own, with
// listeners inside it, to exercise code that dials through package netns
// without a container:
//
//	ns := netnstest.New(t)                      // skips without CAP_SYS_ADMIN
//	ln := ns.Listen(t, "127.0.0.1:0")           // inside the namespace
//	n, _ := netns.Open(ns.Path)                 // what the code under test does
//
// The namespace lives on one OS thread that unshared it and never leaves
// it; at the end of the test that thread exits (the runtime discards a
// thread whose goroutine ends locked), so nothing outlives the test, not
// even when the test binary is killed — unlike `ip netns add`.
package netnstest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// Namespace is a test's own network namespace: its loopback is up (with
// any alias addresses New was given), nothing else is configured.
type Namespace struct {
	// Path is the namespace file (/proc/<pid>/task/<tid>/ns/net), valid
	// until the test ends.
	Path string
	jobs chan func()
}

// New creates the namespace, bringing up lo and adding each alias (IPv4)
// to it as lo:1, lo:2, ... It skips the test when the process may not
// create namespaces (no CAP_SYS_ADMIN).
func New(t testing.TB, aliases ...netip.Addr) *Namespace {
	t.Helper()
	ns := &Namespace{jobs: make(chan func())}
	ready := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: this thread dies with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- err
			return
		}
		ns.Path = fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		ready <- configureLoopback(aliases)
		for {
			select {
			case job := <-ns.jobs:
				job()
			case <-done:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("cannot create a network namespace (needs CAP_SYS_ADMIN): %v", err)
		}
		t.Fatalf("new network namespace: %v", err)
	}
	t.Cleanup(func() { close(done) })
	return ns
}

// Listen opens a TCP listener inside the namespace; the test's cleanup
// closes it.
func (ns *Namespace) Listen(t testing.TB, address string) net.Listener {
	t.Helper()
	var ln net.Listener
	var err error
	finished := make(chan struct{})
	ns.jobs <- func() {
		defer close(finished)
		ln, err = net.Listen("tcp", address)
	}
	<-finished
	if err != nil {
		t.Fatalf("listen on %s in %s: %v", address, ns.Path, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// Serve serves h on a listener at address inside the namespace and returns
// the listener's address; the test's cleanup stops it.
func (ns *Namespace) Serve(t testing.TB, address string, h http.Handler) string {
	t.Helper()
	ln := ns.Listen(t, address)
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// configureLoopback brings lo up in the current thread's namespace and adds
// the alias addresses.
func configureLoopback(aliases []netip.Addr) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	up := func(name string) error {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("flags of %s: %w", name, err)
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("bring %s up: %w", name, err)
		}
		return nil
	}
	if err := up("lo"); err != nil {
		return err
	}
	for i, a := range aliases {
		if !a.Is4() {
			return fmt.Errorf("alias %s: only IPv4 aliases are supported", a)
		}
		name := fmt.Sprintf("lo:%d", i+1)
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return err
		}
		b := a.As4()
		if err := ifr.SetInet4Addr(b[:]); err != nil {
			return err
		}
		if err := unix.IoctlIfreq(s, unix.SIOCSIFADDR, ifr); err != nil {
			return fmt.Errorf("address %s on %s: %w", a, name, err)
		}
		if err := up(name); err != nil {
			return err
		}
	}
	return nil
}
