package probes

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"sync"
	"unsafe"
)

// ProcessReading is one reading of a target's cumulative CPU time and its
// resident memory.
type ProcessReading struct {
	// CPUSeconds is cumulative user+system CPU time since the target started
	// (a counter: take differences).
	CPUSeconds float64
	// RSSBytes is the resident memory now.
	RSSBytes int64
	// Processes is how many processes were summed (1 for a container).
	Processes int
}

// ProcessTree reads the CPU time and RSS of a local process and all its
// descendants from /proc. The zero value is not usable; use NewProcessTree.
// A ProcessTree is not safe for concurrent use.
//
// What is summed, for every process in the tree (the root, its descendants,
// and — when the root leads a process group — the group's members, which
// catches a child that was reparented after its parent exited): utime and stime
// of the process itself, plus cutime and cstime, the CPU time of children it
// has already reaped. A child's time therefore moves from its own counters
// into its parent's when the parent waits for it, and the sum stays
// continuous. What escapes: a descendant that leaves the process group and is
// reparented outside the tree, and a child reaped by a process outside the
// tree. RSS is the sum of the processes' resident pages; pages shared between
// them (after fork) are counted once per process.
type ProcessTree struct {
	root     int
	procDir  string
	hz       float64
	pageSize int64

	buf   []byte
	procs map[int]procStat
	// member caches the tree walk of one read: 1 in the tree, 2 not.
	member map[int]uint8
}

type procStat struct {
	ppid, pgrp                   int
	utime, stime, cutime, cstime uint64 // clock ticks
	rssPages                     int64
}

// ErrProcessGone is returned when the root process of a ProcessTree no longer
// exists.
var ErrProcessGone = errors.New("target process is gone")

// NewProcessTree returns a reader for the process tree rooted at pid.
func NewProcessTree(pid int) (*ProcessTree, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("process tree: invalid pid %d", pid)
	}
	hz, _ := ClockTicksPerSecond()
	return &ProcessTree{
		root:     pid,
		procDir:  "/proc",
		hz:       float64(hz),
		pageSize: int64(os.Getpagesize()),
		buf:      make([]byte, 0, 1024),
		procs:    make(map[int]procStat, 256),
		member:   make(map[int]uint8, 256),
	}, nil
}

// listPIDs lists dir, a /proc; its iterator yields the id and the entry
// name of each process there.
func listPIDs(dir string) (iter.Seq2[int, string], error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	return func(yield func(int, string) bool) {
		for _, name := range names {
			if name == "" || name[0] < '0' || name[0] > '9' {
				continue
			}
			pid, err := strconv.Atoi(name)
			if err != nil {
				continue
			}
			if !yield(pid, name) {
				return
			}
		}
	}, nil
}

// Read scans /proc once and sums the tree. It returns ErrProcessGone (wrapped)
// when the root process does not exist.
func (t *ProcessTree) Read() (ProcessReading, error) {
	pids, err := listPIDs(t.procDir)
	if err != nil {
		return ProcessReading{}, err
	}
	clear(t.procs)
	clear(t.member)
	for pid := range pids {
		st, ok := t.readStat(pid)
		if !ok { // exited during the scan
			continue
		}
		t.procs[pid] = st
	}
	if _, ok := t.procs[t.root]; !ok {
		return ProcessReading{}, fmt.Errorf("process tree %d: %w", t.root, ErrProcessGone)
	}
	var ticks uint64
	var rss int64
	n := 0
	for pid, st := range t.procs {
		if !t.inTree(pid) {
			continue
		}
		n++
		ticks += st.utime + st.stime + st.cutime + st.cstime
		rss += st.rssPages
	}
	return ProcessReading{
		CPUSeconds: float64(ticks) / t.hz,
		RSSBytes:   rss * t.pageSize,
		Processes:  n,
	}, nil
}

// inTree reports whether pid is the root, a member of the root's process
// group, or a descendant of the root.
func (t *ProcessTree) inTree(pid int) bool {
	// Iterative walk up the parent chain, memoised; depth is bounded by the
	// number of processes, and cycles cannot occur in a consistent /proc but
	// a scan is not atomic, so cap the walk anyway.
	p := pid
	for steps := 0; steps < len(t.procs)+1; steps++ {
		if m, ok := t.member[p]; ok {
			t.member[pid] = m
			return m == 1
		}
		if p == t.root {
			t.member[pid] = 1
			return true
		}
		st, ok := t.procs[p]
		if !ok || p <= 1 {
			break
		}
		if st.pgrp == t.root {
			t.member[pid] = 1
			return true
		}
		p = st.ppid
	}
	t.member[pid] = 2
	return false
}

// readStat reads /proc/<pid>/stat. ok is false when the process is gone or
// the file cannot be parsed.
func (t *ProcessTree) readStat(pid int) (procStat, bool) {
	f, err := os.Open(t.procDir + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	t.buf = t.buf[:cap(t.buf)]
	n, err := io.ReadFull(f, t.buf)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return procStat{}, false
	}
	return parseStat(t.buf[:n])
}

// parseStat parses the content of /proc/<pid>/stat. The command name (field
// 2) is in parentheses and may itself contain spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	b = b[i+1:]
	// Fields after the name, numbered as in proc(5): 3 state, 4 ppid, 5 pgrp,
	// 14 utime, 15 stime, 16 cutime, 17 cstime, 24 rss (pages).
	var st procStat
	for field, tok := range statFields(b) {
		switch field {
		case 4:
			st.ppid = int(atoi(tok))
		case 5:
			st.pgrp = int(atoi(tok))
		case 14:
			st.utime = uint64(atoi(tok))
		case 15:
			st.stime = uint64(atoi(tok))
		case 16:
			st.cutime = uint64(atoi(tok))
		case 17:
			st.cstime = uint64(atoi(tok))
		case 24:
			st.rssPages = atoi(tok)
			return st, true
		}
	}
	return procStat{}, false
}

// statFields yields the space-separated fields of a /proc stat line after
// the command name's closing ')', numbered as in proc(5) (the first is 3,
// the state), without allocating.
func statFields(b []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		field := 2
		for len(b) > 0 {
			for len(b) > 0 && b[0] == ' ' {
				b = b[1:]
			}
			if len(b) == 0 {
				return
			}
			j := bytes.IndexByte(b, ' ')
			if j < 0 {
				j = len(b)
			}
			tok := bytes.TrimRight(b[:j], "\n")
			b = b[j:]
			field++
			if !yield(field, tok) {
				return
			}
		}
	}
}

// atoi parses a decimal integer (optionally negative) without allocating;
// invalid input gives 0.
func atoi(b []byte) int64 {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

var clockTicks = sync.OnceValues(readClockTicks)

// ClockTicksPerSecond is the kernel's USER_HZ, the unit of the CPU times in
// /proc/<pid>/stat: sysconf(_SC_CLK_TCK), which glibc answers from the
// AT_CLKTCK entry of the process's auxiliary vector. It is read from
// /proc/self/auxv; if that fails it returns 100 (the value on every Linux
// architecture Go supports) and an error saying so.
func ClockTicksPerSecond() (int64, error) { return clockTicks() }

func readClockTicks() (int64, error) {
	const atClkTck = 17 // AT_CLKTCK in <elf.h>
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100, fmt.Errorf("read auxv for clock ticks (assuming 100 Hz): %w", err)
	}
	word := int(unsafe.Sizeof(uintptr(0)))
	for i := 0; i+2*word <= len(b); i += 2 * word {
		var key, val uint64
		if word == 8 {
			key = binary.NativeEndian.Uint64(b[i:])
			val = binary.NativeEndian.Uint64(b[i+word:])
		} else {
			key = uint64(binary.NativeEndian.Uint32(b[i:]))
			val = uint64(binary.NativeEndian.Uint32(b[i+word:]))
		}
		if key == atClkTck && val > 0 {
			return int64(val), nil
		}
		if key == 0 {
			break
		}
	}
	return 100, errors.New("no AT_CLKTCK in auxv (assuming 100 Hz)")
}
