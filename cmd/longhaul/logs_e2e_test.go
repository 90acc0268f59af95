package main

import (
	"strings"
	"testing"
)

// TestLogsKept: a run's target output is kept with the run when its
// environment is torn down, and `longhaul logs` prints it; what was not
// kept (no database here) is one line and exit 2. --window N prints what
// the target printed during window N (the soak target prints its start
// before the first window, nothing after: the windows are known and
// quiet); a window the run does not have is one line and exit 2.
func TestLogsKept(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run")
	}
	data := t.TempDir()
	code, rep, stderr := runReport(t, localScenario(t, 2), "--data", data)
	if code != exitOK {
		t.Fatalf("run: exit %d; stderr:\n%s", code, stderr)
	}
	code, out, errOut := runCommand(t, "logs", rep.RunID, "--data", data)
	if code != exitOK || !strings.Contains(out, "soaktarget: listening on 127.0.0.1:") {
		t.Errorf("logs: exit %d, stdout %q, stderr %q; want the target's start line", code, out, errOut)
	}
	code, _, errOut = runCommand(t, "logs", rep.RunID, "--data", data, "--database")
	if code != exitBadInput || !strings.Contains(errOut, "no kept output of the database of run "+rep.RunID) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("logs --database: exit %d, stderr %q; want one line and exit 2", code, errOut)
	}
	code, _, errOut = runCommand(t, "logs", "no-such-run", "--data", data)
	if code != exitBadInput || !strings.Contains(errOut, "no run no-such-run in") {
		t.Errorf("logs of an unknown run: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut = runCommand(t, "logs", rep.RunID, "--data", data, "--window", "1")
	if code != exitOK || out != "[the target printed nothing during window 1]\n" {
		t.Errorf("logs --window 1: exit %d, stdout %q, stderr %q; want the window known and quiet", code, out, errOut)
	}
	code, _, errOut = runCommand(t, "logs", rep.RunID, "--data", data, "--window", "99")
	if code != exitBadInput || !strings.Contains(errOut, "the run has windows 0–") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("logs --window 99: exit %d, stderr %q; want one line and exit 2", code, errOut)
	}
	code, _, errOut = runCommand(t, "logs", rep.RunID, "--data", data, "--window", "1", "--follow")
	if code != exitBadInput {
		t.Errorf("logs --window --follow: exit %d, stderr %q; want exit 2", code, errOut)
	}
}
