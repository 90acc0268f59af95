package provision

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// ExitLines is how many lines of its last output an exit event carries.
const ExitLines = 50

// ExitError is Check's error when the target or the database stopped: it
// wraps ErrGone and carries the event (how and when it stopped, its last
// output) for the drive to record with the window it noticed it in.
type ExitError struct {
	Event window.Event
}

func (e *ExitError) Error() string        { return ErrGone.Error() + ": " + e.Event.Detail }
func (e *ExitError) Is(target error) bool { return target == ErrGone }

// FaultEvent returns the event; callers that must not import this package
// find it with errors.As on an interface{ FaultEvent() window.Event }.
func (e *ExitError) FaultEvent() window.Event { return e.Event }

// exitStatus is what a reaper writes when a process it started ends, so
// that Check — in this process or another — can say how it ended.
type exitStatus struct {
	At     time.Time `json:"at"`
	Code   *int      `json:"exit_code,omitempty"`
	Signal int       `json:"signal,omitempty"`
}

// exitFile is where the exit status of the process logging to logPath goes.
func exitFile(logPath string) string {
	return strings.TrimSuffix(logPath, filepath.Ext(logPath)) + ".exit.json"
}

// writeExit records how cmd ended (its Wait has returned).
func writeExit(path string, cmd *exec.Cmd) {
	st := exitStatus{At: time.Now().UTC()}
	if ps := cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			st.Signal = int(ws.Signal())
		} else {
			c := ps.ExitCode()
			st.Code = &c
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}

// readExit reads the exit status written for logPath's process, waiting up
// to wait for its reaper (the process may have died a moment ago).
func readExit(logPath string, wait time.Duration) (exitStatus, bool) {
	deadline := time.Now().Add(wait)
	for {
		var st exitStatus
		b, err := os.ReadFile(exitFile(logPath))
		if err == nil && json.Unmarshal(b, &st) == nil {
			return st, true
		}
		if time.Now().After(deadline) {
			return st, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processExit describes how the local process pid (what: "target" or
// "database") ended, from its reaper's exit file, the kernel log (an OOM
// kill) and its log file.
func processExit(kind, what string, pid int, logPath string) window.Event {
	ev := window.Event{Kind: kind, PID: pid}
	st, known := readExit(logPath, time.Second)
	if known {
		ev.At, ev.ExitCode, ev.Signal = st.At, st.Code, st.Signal
	}
	if ev.Signal == int(syscall.SIGKILL) || !known {
		if oomKilled(pid) {
			ev.OOMKilled, ev.OOMSource = true, "kernel log"
		}
	}
	ev.Detail = fmt.Sprintf("the %s process %d %s", what, pid, exitDetail(ev))
	ev.Output = lastLinesOf(logPath, ExitLines)
	return ev
}

// exitDetail says how it ended in a few words: "exited (signal 9: killed)".
func exitDetail(ev window.Event) string {
	if ev.Signal == 0 && ev.ExitCode == nil {
		return "is not running (" + ev.How() + ": it was not this worker's child)"
	}
	return "exited (" + ev.How() + ")"
}

// oomKilled reports whether the kernel log says the OOM killer killed pid.
// It reads /dev/kmsg without blocking; where that is not readable (no
// privilege, a container) it says false: "not visible", not "not killed".
func oomKilled(pid int) bool {
	// Raw syscalls: os.File would park a non-blocking read at the end of
	// the ring buffer in the poller instead of returning EAGAIN.
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	want := "Killed process " + strconv.Itoa(pid) + " "
	buf := make([]byte, 8192)
	for range 1 << 16 { // the ring buffer holds far fewer records
		n, err := syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EINTR):
			continue // a record was overwritten while reading: read on
		case err != nil || n <= 0:
			return false // EAGAIN: the end of the buffer
		case strings.Contains(string(buf[:n]), want):
			return true
		}
	}
	return false
}

// lastLinesOf returns the last n non-empty lines of the file at path
// (reading at most its last 64 KiB), oldest first.
func lastLinesOf(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const max = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, io.SeekStart)
	}
	return lastLinesFrom(f, n)
}

func lastLinesFrom(r io.Reader, n int) []string {
	var ring []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r ")
		if l == "" {
			continue
		}
		ring = append(ring, l)
		if len(ring) > n {
			ring = ring[1:]
		}
	}
	return ring
}
