package report

import (
	"context"
	"errors"
	"fmt"
	"io"

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
