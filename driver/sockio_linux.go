//go:build linux

package driver

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// sockIO reads and writes a TCP connection's socket with raw system calls,
// still waiting (and honouring deadlines) through Go's network poller.
//
// Subtleness ahead: net.Conn's Read and Write go through syscall.Syscall,
// which tells the scheduler that the goroutine may block. When a driver
// pinned to one CPU (GOMAXPROCS=1) spends more than a sysmon tick (20 µs)
// in a loopback write — which happens, since the write also runs the
// receiver's TCP stack — sysmon hands the only P to another thread, and the
// process pays context switches between threads for every such hand-off.
// The socket is non-blocking, so a read or write never blocks in the
// kernel: RawSyscall is safe and keeps the driver on one thread, as wrk is.
// Measured in bench/driver/RESULTS.md (longhaul-netconn is the same driver
// with LONGHAUL_DRIVER_NETCONN=1, which turns this off).
type sockIO struct {
	rc syscall.RawConn

	// Arguments and results of the pre-bound callbacks (no closure is
	// allocated per call).
	buf   []byte
	n     int
	errno syscall.Errno

	readFn, writeFn func(fd uintptr) bool
}

const rawSocketIOSupported = true

func newSockIO(c net.Conn) (*sockIO, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, os.ErrInvalid
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &sockIO{rc: rc}
	s.readFn, s.writeFn = s.read, s.write
	return s, nil
}

func (s *sockIO) read(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.buf[0])), uintptr(len(s.buf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait for the poller, then try again
		}
		s.n, s.errno = int(r), e
		return true
	}
}

func (s *sockIO) write(fd uintptr) bool {
	for len(s.buf) > 0 {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&s.buf[0])), uintptr(len(s.buf)))
		switch e {
		case 0:
			s.n += int(r)
			s.buf = s.buf[r:]
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		s.errno = e
		return true
	}
	return true
}

// Read implements io.Reader.
func (s *sockIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.buf, s.n, s.errno = p, 0, 0
	err := s.rc.Read(s.readFn)
	s.buf = nil
	switch {
	case err != nil:
		return 0, err
	case s.errno != 0:
		return 0, os.NewSyscallError("read", s.errno)
	case s.n == 0:
		return 0, io.EOF
	}
	return s.n, nil
}

// Write writes all of p.
func (s *sockIO) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.buf, s.n, s.errno = p, 0, 0
	err := s.rc.Write(s.writeFn)
	s.buf = nil
	switch {
	case err != nil:
		return s.n, err
	case s.errno != 0:
		return s.n, os.NewSyscallError("write", s.errno)
	}
	return s.n, nil
}
