package report

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/longhaul-dev/longhaul/store"
)

// ErrNoLogs is returned by WriteLogs when the run has no kept output of
// the asked process and incarnation.
var ErrNoLogs = errors.New("no kept output")

// LogQuery selects a run's kept output: of Source ("target" or
// "database") and Incarnation (0: every incarnation).
type LogQuery struct {
	Source      string
	Incarnation int
}

// WriteLogs writes the kept output of a run's processes to out. With
// several incarnations each starts with a header line; a log whose start
// was cut says so first.
func WriteLogs(ctx context.Context, st store.Logs, runID string, q LogQuery, out io.Writer) error {
	ls, err := st.Logs(ctx, runID, true)
	if err != nil {
		return err
	}
	var picked []store.TargetLog
	for _, l := range ls {
		if l.Source == q.Source && (q.Incarnation == 0 || l.Incarnation == q.Incarnation) {
			picked = append(picked, l)
		}
	}
	if len(picked) == 0 {
		return fmt.Errorf("%w of the %s of run %s%s (kept when a provisioned environment is torn down; none for a target.url)", ErrNoLogs, q.Source, runID, incarnationSuffix(q.Incarnation))
	}
	for _, l := range picked {
		if len(picked) > 1 {
			fmt.Fprintf(out, "==> %s output, incarnation %d <==\n", l.Source, l.Incarnation)
		}
		if l.Truncated {
			fmt.Fprintf(out, "[… only the last %d bytes of its output were kept]\n", l.Bytes)
		}
		zr, err := gzip.NewReader(bytes.NewReader(l.Data))
		if err != nil {
			return fmt.Errorf("%s output of run %s, incarnation %d: %w", l.Source, runID, l.Incarnation, err)
		}
		if _, err := io.Copy(out, zr); err != nil {
			return fmt.Errorf("%s output of run %s, incarnation %d: %w", l.Source, runID, l.Incarnation, err)
		}
	}
	return nil
}

func incarnationSuffix(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", incarnation %d", n)
}
