// Package netns opens TCP connections inside another network namespace —
// a container's — so that a process on the host reaches the container's own
// loopback directly, with no port publishing (and no docker-proxy) between
// them. The connections stay loopback connections: they never leave the
// container's namespace and never touch a bridge address.
//
// Recipe:
//
//  1. Open the namespace: Open(ContainerPath(pid)) for a container's first
//     process, or OpenTarget(t) for a Target recorded earlier (it also
//     checks that the namespace is still the one recorded). Open enters and
//     leaves the namespace once, so a process that may not enter it (no
//     CAP_SYS_ADMIN: ErrNotPermitted; the pid not visible here: ErrNotFound)
//     finds out at once and can fall back to a published port.
//  2. DialContext(ctx, "tcp", "127.0.0.1:8080") as with a net.Dialer: the
//     address is the namespace's own loopback. Only loopback addresses are
//     accepted (ErrNotLoopback). LoopbackAddr(ctx, port) tells which
//     loopback address a port can be reached on, and describes the
//     listeners when it cannot (a server bound to its bridge address only).
//  3. Close when no more connections are needed; open connections outlive it.
//
// How (Linux): each dial runs on a fresh goroutine locked to its OS thread,
// which switches its network namespace (setns), creates and connects the
// socket and switches back before it unlocks. A socket belongs to the
// namespace it was created in for its whole life, so reads and writes need
// no further switching and cost what any loopback socket costs. If the
// switch back ever failed, the goroutine would exit still locked, which
// makes the Go runtime discard the thread rather than reuse it in a foreign
// namespace. Elsewhere Open returns ErrUnsupported.
package netns

import (
	"errors"
	"strconv"
)

// Errors Open, OpenTarget and DialContext wrap.
var (
	// ErrNotPermitted: this process may not open or enter the namespace
	// (entering a network namespace needs CAP_SYS_ADMIN).
	ErrNotPermitted = errors.New("not permitted to enter the network namespace")
	// ErrNotFound: no namespace at the path (the process is gone, or its pid
	// is not visible in this pid namespace).
	ErrNotFound = errors.New("network namespace not found")
	// ErrChanged: the namespace at a Target's path is not the one recorded.
	ErrChanged = errors.New("network namespace changed")
	// ErrNotLoopback: an address outside 127.0.0.0/8 and ::1 was dialled.
	ErrNotLoopback = errors.New("not a loopback address")
	// ErrNotOnLoopback: LoopbackAddr found nothing listening on the port on
	// a loopback or wildcard address inside the namespace.
	ErrNotOnLoopback = errors.New("not listening on loopback inside the namespace")
	// ErrUnsupported: network namespaces are Linux-only.
	ErrUnsupported = errors.New("network namespaces are not supported on this system")
)

// Target says where a server listens inside a network namespace, as plain
// data for environment records (JSON).
type Target struct {
	// Path is the namespace file: /proc/<pid>/ns/net of the container's
	// first process (ContainerPath).
	Path string `json:"path"`
	// ID identifies the namespace ("net:[4026532185]"); OpenTarget refuses
	// a namespace at Path with another ID (the container was restarted, or
	// its pid was reused by another process).
	ID string `json:"id"`
	// URL is the server's base URL inside the namespace, on a loopback
	// address (http://127.0.0.1:8080).
	URL string `json:"url"`
}

// ContainerPath is the network namespace file of process pid.
func ContainerPath(pid int) string {
	return "/proc/" + strconv.Itoa(pid) + "/ns/net"
}
