package window

import (
	"fmt"
	"syscall"
	"time"
)

// Event kinds.
const (
	// EventTargetExit: the target process or container stopped.
	EventTargetExit = "target_exit"
	// EventDatabaseExit: the target's database process or container stopped.
	EventDatabaseExit = "database_exit"
	// EventStoreBehind: the results store did not take windows for a
	// while; they waited in the worker's memory and were written late, in
	// order. Kept in the first window written late.
	EventStoreBehind = "store_behind"
)

// Event is a fault noticed when a window closed: the target (or its
// database) stopped, or the results store fell behind. It is kept in the window it was noticed in, so a crash
// is stored with the measurements around it and analysis can explain it.
type Event struct {
	Kind string `json:"kind"`
	// At is when it stopped, as the process's reaper or the container's
	// state says; zero when that is not known (then the window's end bounds it).
	At time.Time `json:"at,omitzero"`
	// PID or Container identify what stopped.
	PID       int    `json:"pid,omitempty"`
	Container string `json:"container,omitempty"`
	// ExitCode is set when it exited by itself; Signal (the number) when a
	// signal ended it. Neither is set when the exit status is unknown (a
	// process that was not this worker's child).
	ExitCode *int `json:"exit_code,omitempty"`
	Signal   int  `json:"signal,omitempty"`
	// OOMKilled: killed for running out of memory; OOMSource says who
	// said so ("container state", "kernel log").
	OOMKilled bool   `json:"oom_killed,omitempty"`
	OOMSource string `json:"oom_source,omitempty"`
	// Restarted: longhaul started it again in place after this stop (a
	// database it runs for the soak; see activities.MaxDatabaseRestarts).
	Restarted bool `json:"restarted,omitempty"`
	// RestartedElsewhere: something other than longhaul (an operator's
	// docker restart) started it again before a check saw it stopped.
	RestartedElsewhere bool `json:"restarted_elsewhere,omitempty"`
	// Detail is one line a person reads: "the target process 19419 exited
	// (signal 9: killed)".
	Detail string `json:"detail"`
	// Output holds the last lines it printed (stdout and stderr), secrets
	// masked; oldest first.
	Output []string `json:"output,omitempty"`
}

// How says in a few words how it stopped: "signal 9: killed", "exit code 2"
// or "exit status unknown", followed by ", out of memory (kernel log)" when
// it was killed for running out of memory.
func (e Event) How() string {
	var s string
	switch {
	case e.Signal != 0:
		s = fmt.Sprintf("signal %d: %s", e.Signal, syscall.Signal(e.Signal))
	case e.ExitCode != nil:
		s = fmt.Sprintf("exit code %d", *e.ExitCode)
	default:
		s = "exit status unknown"
	}
	if e.OOMKilled {
		s += ", out of memory"
		if e.OOMSource != "" {
			s += " (" + e.OOMSource + ")"
		}
	}
	return s
}
