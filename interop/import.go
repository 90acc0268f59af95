package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// KindImported is the kind of a run brought in from another tool.
const KindImported = "imported"

// ImportStore is what ImportK6 needs of a store (store.Store has it).
type ImportStore interface {
	PutRun(ctx context.Context, r store.Run) error
	PutWindow(ctx context.Context, w window.Window) error
	Windows(ctx context.Context, runID string, q store.WindowQuery) ([]window.Window, error)
	PutFindings(ctx context.Context, runID string, fs []analysis.Finding) error
}

// ImportOptions tune ImportK6.
type ImportOptions struct {
	K6Options
	// Name names the run (default: the file's name without its extensions).
	Name string
	// Now is the clock for the run's creation time (time.Now when nil).
	Now func() time.Time
}

// ImportResult is a finished import.
type ImportResult struct {
	Run      store.Run
	Stats    K6Stats
	Findings []analysis.Finding
}

// maxPending bounds the windows held back before the first one with
// requests (a file that starts with minutes of vus points alone).
const maxPending = 10_000

// ImportK6 reads the k6 JSON output at path (ReadK6) and stores it as a
// completed run of kind "imported": its windows as they are cut, then the
// analysis' findings (which say what evidence is missing: k6 measures the
// client side only). Nothing is stored when the file has nothing usable
// (the error wraps ErrNothingUsable); a file that ends early keeps what was
// read, and the run's reason says so. The error wraps os.ErrNotExist and
// the like when the file cannot be opened.
func ImportK6(ctx context.Context, st ImportStore, path string, opts ImportOptions) (ImportResult, error) {
	var res ImportResult
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	name := opts.Name
	if name == "" {
		name = baseName(path)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return res, fmt.Errorf("new run id: %w", err)
	}
	run := store.Run{ID: id.String(), Name: name, Kind: KindImported, Status: store.Running, Incarnations: 1, CreatedAt: now()}

	// The run is created with the first window that has requests, so a
	// file with nothing usable leaves nothing behind.
	created := false
	var pending []window.Window
	put := func(w window.Window) error {
		w.RunID = run.ID
		if err := st.PutWindow(ctx, w); err != nil {
			return fmt.Errorf("store window %d: %w", w.Index, err)
		}
		return nil
	}
	sink := func(w window.Window) error {
		if !created {
			if w.Requests == 0 && len(pending) < maxPending {
				pending = append(pending, w)
				return nil
			}
			run.StartedAt = w.Start
			if len(pending) > 0 {
				run.StartedAt = pending[0].Start
			}
			if err := st.PutRun(ctx, run); err != nil {
				return fmt.Errorf("record the run: %w", err)
			}
			created = true
			for _, p := range pending {
				if err := put(p); err != nil {
					return err
				}
			}
			pending = nil
		}
		return put(w)
	}
	stats, readErr := ReadK6(ctx, f, opts.K6Options, sink)
	res.Stats = stats
	if !created {
		if readErr == nil {
			readErr = fmt.Errorf("%w: no requests in %d points", ErrNothingUsable, stats.Points)
		}
		return res, readErr
	}
	var truncated error
	if readErr != nil {
		if !errors.Is(readErr, ErrTruncated) {
			// The windows stored so far stay; the run says why it stopped.
			run.Status, run.Reason, run.EndedAt = store.Failed, "import stopped: "+readErr.Error(), now()
			_ = st.PutRun(context.WithoutCancel(ctx), run)
			res.Run = run
			return res, readErr
		}
		truncated = readErr
	}

	run.Status, run.EndedAt = store.Completed, stats.End
	run.Reason = importReason(path, stats, truncated)
	if err := st.PutRun(ctx, run); err != nil {
		return res, fmt.Errorf("record the run: %w", err)
	}
	res.Run = run
	ws, err := st.Windows(ctx, run.ID, store.AllWindows)
	if err != nil {
		return res, fmt.Errorf("read the windows back: %w", err)
	}
	res.Findings = analysis.Analyze(ws, analysis.Options{}).Findings
	if err := st.PutFindings(ctx, run.ID, res.Findings); err != nil {
		return res, fmt.Errorf("store the findings: %w", err)
	}
	return res, nil
}

// importReason is the run's one-line provenance: "imported from k6 output
// results.json.gz: 1000000 points; 3 bad lines (first: line 17: not JSON)".
func importReason(path string, s K6Stats, truncated error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "imported from k6 output %s: %d points", filepath.Base(path), s.Points)
	if s.LatePoints > 0 {
		fmt.Fprintf(&b, "; %d late points left out", s.LatePoints)
	}
	if s.BadLines > 0 {
		fmt.Fprintf(&b, "; %d bad lines (first: %s)", s.BadLines, s.BadLineNumbers[0])
	}
	if truncated != nil {
		fmt.Fprintf(&b, "; %v", truncated)
	}
	return b.String()
}

// baseName is a file's name without its extensions: "results" for
// "/tmp/results.json.gz".
func baseName(path string) string {
	b := filepath.Base(path)
	if i := strings.IndexByte(b, '.'); i > 0 {
		return b[:i]
	}
	return b
}
