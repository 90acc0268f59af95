package probes

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want procStat
		ok   bool
	}{
		{
			name: "plain",
			in:   "1234 (node) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 10 5 20 0 11 0 5000 1000000 2048 18446744073709551615\n",
			want: procStat{ppid: 1, pgrp: 1234, utime: 250, stime: 75, cutime: 10, cstime: 5, rssPages: 2048},
			ok:   true,
		},
		{
			name: "name with spaces and parentheses",
			in:   "77 (my (odd) proc) R 70 70 70 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 1 1 9",
			want: procStat{ppid: 70, pgrp: 70, utime: 1, stime: 2, cutime: 3, cstime: 4, rssPages: 9},
			ok:   true,
		},
		{name: "truncated", in: "77 (x) R 70 70 70 0 -1 0 0 0 0 0 1 2", ok: false},
		{name: "no name", in: "77 x R 70", ok: false},
		{name: "empty", in: "", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat([]byte(tt.in))
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseStat = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestClockTicksPerSecond(t *testing.T) {
	hz, err := ClockTicksPerSecond()
	if err != nil {
		t.Fatalf("ClockTicksPerSecond: %v", err)
	}
	// USER_HZ is 100 on every Linux architecture Go supports; the point of
	// the test is that auxv was read, not assumed.
	if got, want := hz, int64(100); got != want {
		t.Errorf("ClockTicksPerSecond = %d, want %d", got, want)
	}
}

// TestProcessTreeCPU burns 4 × helperBurn of CPU in a process tree: the root,
// a child it reaps (cutime), a live child, and a grandchild reparented out of
// the tree but still in the root's process group.
func TestProcessTreeCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("burns ~1 s of CPU")
	}
	c, in, out := startHelperTree(t, "tree")
	pt, err := NewProcessTree(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	waitForProcs(t, pt, 1)
	before, err := pt.Read()
	if err != nil {
		t.Fatalf("Read before: %v", err)
	}
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if line, _ := out.ReadString('\n'); strings.TrimSpace(line) != "done" {
		t.Fatalf("helper said %q, want done", line)
	}
	after, err := pt.Read()
	if err != nil {
		t.Fatalf("Read after: %v", err)
	}
	got := after.CPUSeconds - before.CPUSeconds
	want := 4 * helperBurn.Seconds()
	// Lower bound: every process burned at least helperBurn (minus one clock
	// tick of rounding each). Upper bound: plus start-up of three processes.
	if got < want-0.04 || got > want+0.35 {
		t.Errorf("tree CPU delta = %.3f s, want %.2f s (-0.04/+0.35)", got, want)
	}
	if got, want := after.Processes, 3; got != want { // root, burn-stay, reparented burn-stay
		t.Errorf("processes = %d, want %d", got, want)
	}
	if after.RSSBytes < 3<<20 {
		t.Errorf("RSS = %d bytes, want at least 3 MiB for three Go processes", after.RSSBytes)
	}
	t.Logf("tree: %.3f s CPU (want %.2f), %d processes, RSS %d KiB", got, want, after.Processes, after.RSSBytes>>10)
}

func waitForProcs(t *testing.T, pt *ProcessTree, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r, err := pt.Read(); err == nil && r.Processes >= n {
			return
		}
	}
	t.Fatalf("process tree never reached %d processes", n)
}

func TestProcessTreeGone(t *testing.T) {
	c := helperCmd("burn-exit")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	pt, err := NewProcessTree(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pt.Read(); !errors.Is(err, ErrProcessGone) {
		t.Errorf("Read of a reaped process: err = %v, want ErrProcessGone", err)
	}
}

func TestProcessTreeSelf(t *testing.T) {
	pt, err := NewProcessTree(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r, err := pt.Read()
	if err != nil {
		t.Fatal(err)
	}
	if r.RSSBytes <= 0 || r.Processes < 1 {
		t.Errorf("Read(self) = %+v, want RSS > 0 and at least 1 process", r)
	}
}

func BenchmarkProcessTreeRead(b *testing.B) {
	pt, err := NewProcessTree(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pt.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
