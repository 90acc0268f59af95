package report

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/store"
)

// ComparisonReader reads a stored comparison and its notifications.
type ComparisonReader interface {
	GetComparison(ctx context.Context, id string) (store.Comparison, error)
	ComparisonNotifications(ctx context.Context, id string) ([]store.Notification, error)
}

// WriteStoredComparison writes the stored comparison id (longhaul report
// ID) with its notifications, as text or JSON. found is false when there
// is no such comparison (and nothing was written).
func WriteStoredComparison(ctx context.Context, st ComparisonReader, id string, format Format, out io.Writer) (found bool, err error) {
	cmp, err := st.GetComparison(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("read comparison %s: %w", id, err)
	}
	ns, err := st.ComparisonNotifications(ctx, id)
	if err != nil {
		return true, fmt.Errorf("read notifications of comparison %s: %w", id, err)
	}
	if format == JSON {
		if err := WriteComparisonJSON(out, cmp); err != nil {
			return true, err
		}
		return true, WriteNotificationsJSON(out, ns)
	}
	if err := WriteComparisonText(out, cmp); err != nil {
		return true, err
	}
	if len(ns) > 0 {
		fmt.Fprintln(out)
		WriteNotifications(out, ns)
	}
	return true, nil
}

// ErrNotStored is WriteStored's error when the store has no run and no
// comparison of that id.
var ErrNotStored = errors.New("no such run or comparison")

// StoredReader is what WriteStored reads (store.Store has it).
type StoredReader interface {
	RunSource
	ComparisonReader
	GetRun(ctx context.Context, id string) (store.Run, error)
}

// WriteStored writes the stored run or comparison id as `longhaul report
// ID` prints it, as text or JSON. A run's gate is judged with failOn when it
// is not nil, else with the run's own --fail-on.
func WriteStored(ctx context.Context, out io.Writer, st StoredReader, id string, format Format, failOn *analysis.Severity) error {
	run, err := st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		found, err := WriteStoredComparison(ctx, st, id, format, out)
		if !found && err == nil {
			return ErrNotStored
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("read run %s: %w", id, err)
	}
	if failOn != nil {
		run.FailOn = string(*failOn)
	}
	rep, err := LoadRun(ctx, st, run)
	if err != nil {
		return err
	}
	if format == JSON {
		return WriteRunJSON(out, rep)
	}
	return WriteRunText(out, rep)
}
