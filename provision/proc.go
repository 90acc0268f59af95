package provision

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// markerEnv is set in the environment of every process the local provider
// starts: LONGHAUL_ENV_ID=<env id> for the target, <env id>/postgres for the
// private database. /proc/<pid>/environ then tells which processes belong to
// an environment, whatever their parent or group, and a recycled PID never
// matches.
const markerEnv = "LONGHAUL_ENV_ID"

func markerFor(envID, role string) string {
	if role == "" {
		return envID
	}
	return envID + "/" + role
}

// procStat returns the state letter and process group of pid.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) S ppid pgrp ..." — comm may contain spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	pg, _ := strconv.Atoi(f[2])
	return f[0][0], pg, true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	st, _, ok := procStat(pid)
	return ok && st != 'Z' && st != 'X'
}

// hasMarker reports whether pid's environment carries LONGHAUL_ENV_ID=marker.
func hasMarker(pid int, marker string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(markerEnv + "=" + marker)
	for _, kv := range bytes.Split(b, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// markedPIDs lists the live processes whose environment carries marker.
func markedPIDs(marker string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if hasMarker(pid, marker) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopProcesses stops the process group led by leader and every process
// carrying marker: first (SIGTERM for a target, SIGINT — PostgreSQL's fast
// shutdown — for a database), then SIGKILL after grace. It signals the group
// only when its leader, or a marked member, proves the group is ours. It
// returns when they are gone or after the SIGKILL wait.
func stopProcesses(ctx context.Context, leader int, marker string, first syscall.Signal, grace time.Duration) error {
	targets := func() (group int, pids []int) {
		pids = markedPIDs(marker)
		if leader > 0 {
			if alive(leader) && hasMarker(leader, marker) {
				group = leader
			}
			for _, p := range pids {
				if _, pg, ok := procStat(p); ok && pg == leader {
					group = leader
				}
			}
		}
		return group, pids
	}
	signal := func(sig syscall.Signal) bool {
		group, pids := targets()
		if group > 0 {
			_ = syscall.Kill(-group, sig)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, sig)
		}
		return group > 0 || len(pids) > 0
	}
	gone := func() bool {
		group, pids := targets()
		return group == 0 && len(pids) == 0
	}
	if !signal(first) {
		return nil
	}
	if waitUntil(ctx, grace, gone) {
		return nil
	}
	signal(syscall.SIGKILL)
	if waitUntil(ctx, 5*time.Second, gone) {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("processes still alive after SIGKILL")
}

// waitUntil polls cond until it holds, d passes, or ctx ends.
func waitUntil(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	interval := 10 * time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(interval):
		}
		if interval < 200*time.Millisecond {
			interval *= 2
		}
	}
}

// lastLines returns the last n lines of the file at path (reading at most
// its last 64 KiB), or "" when it cannot be read.
func lastLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return tailOf(b, n)
}

// tailOf returns the last n non-empty lines of b, each indented for an error
// message.
func tailOf(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var kept []string
	for i := len(lines) - 1; i >= 0 && len(kept) < n; i-- {
		if l := strings.TrimRight(lines[i], "\r "); l != "" {
			kept = append(kept, l)
		}
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	if len(kept) == 0 {
		return ""
	}
	return "  " + strings.Join(kept, "\n  ")
}

// withTail appends "last lines:" and tail to msg when tail is not empty.
func withTail(msg, what, tail string) string {
	if tail == "" {
		return msg + " (" + what + " is empty)"
	}
	return msg + "; last lines of " + what + ":\n" + tail
}

// errWithTail adds the last lines of a log to err's message; errors.Is and
// errors.As still see err.
func errWithTail(err error, what, tail string) error { return &tailError{err, what, tail} }

type tailError struct {
	err        error
	what, tail string
}

func (e *tailError) Error() string { return withTail(e.err.Error(), e.what, e.tail) }
func (e *tailError) Unwrap() error { return e.err }

// tailBuffer is an io.Writer that keeps the last n lines written to it.
type tailBuffer struct {
	n     int
	lines []string
	part  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.push(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
	if len(t.part) > 4096 { // a very long line without newline
		t.push(string(t.part))
		t.part = t.part[:0]
	}
	return len(p), nil
}

func (t *tailBuffer) push(l string) {
	t.lines = append(t.lines, l)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tailBuffer) String() string {
	all := strings.Join(t.lines, "\n")
	if len(t.part) > 0 {
		all += "\n" + string(t.part)
	}
	return tailOf([]byte(all), t.n)
}

// removeOwnedDir removes dir only if it holds the marker file naming envID,
// so a tampered or stale Environment cannot make teardown delete anything
// longhaul did not create.
func removeOwnedDir(dir, envID string) error {
	if dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, dirMarkerFile))
	if errors.Is(err, os.ErrNotExist) {
		if _, statErr := os.Stat(dir); errors.Is(statErr, os.ErrNotExist) {
			return nil
		}
		return errors.New("refusing to remove " + dir + ": it has no " + dirMarkerFile)
	}
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(b)) != envID {
		return errors.New("refusing to remove " + dir + ": it belongs to environment " + strings.TrimSpace(string(b)))
	}
	// A reaper may write its exit file while the tree is removed (the
	// process it reaped was just stopped by teardown): remove again.
	for range 10 {
		if err = os.RemoveAll(dir); !errors.Is(err, syscall.ENOTEMPTY) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// dirMarkerFile names the environment a directory belongs to.
const dirMarkerFile = ".longhaul-env"
