package follow

import (
	"fmt"

	"github.com/longhaul-dev/longhaul/store"
)

// Session is where a submitted run or comparison runs, for what the user
// is told when they stop following it.
type Session struct {
	// Embedded: the Temporal server runs in this process, on DataDir, so
	// the workflow pauses when the process ends.
	Embedded bool
	DataDir  string
}

// Detached writes what `--detach` prints about a submitted run or
// comparison (what): its id and workflow, and where it goes on.
func (s Session) Detached(t Terminal, what, id, workflowID string) {
	fmt.Fprintf(t.Stdout, "%s %s submitted (workflow %s)\n", what, id, workflowID)
	if s.Embedded {
		fmt.Fprintf(t.Stderr, "longhaul: the embedded server stops with this process; the %s continues when 'longhaul dev --data %s' starts\n", what, s.DataDir)
	}
}

// DetachNote is what a second Ctrl-C leaves the user with (Run.DetachNote,
// Comparison.DetachNote).
func (s Session) DetachNote(what, id string) string {
	if s.Embedded {
		return fmt.Sprintf("%s %s is paused with the embedded server; it continues when 'longhaul dev --data %s' starts", what, id, s.DataDir)
	}
	return fmt.Sprintf("%s %s goes on (longhaul report %s)", what, id, id)
}

// BrowseLater tells a person where the run or comparison they followed
// (its UI page, such as /runs/ID) stays browsable once this process and its
// live UI are gone: `longhaul ui` with the --data and --store they gave.
// Nothing for JSON output: a program reads that.
func BrowseLater(t Terminal, format, data, storeDSN, page string) {
	if format != "text" {
		return
	}
	cmd := "longhaul ui"
	if data != "" {
		cmd += " --data " + data
	}
	if storeDSN != "" && !store.IsPostgres(storeDSN) {
		cmd += " --store " + storeDSN
	}
	fmt.Fprintf(t.Stderr, "browse it later: %s, then open %s\n", cmd, page)
}
