package report

import (
	"fmt"

	"github.com/longhaul-dev/longhaul/store"
)

// ListFilter is the filters of longhaul runs and longhaul comparisons as
// given on the command line.
type ListFilter struct {
	Format, Status, Name, Schedule string
	Limit                          int
}

// ParseList checks f and returns its output format and the store's list
// options. Its errors are one line that names the flag and what to pass.
func ParseList(f ListFilter) (Format, store.ListOptions, error) {
	format, err := ParseFormat(f.Format)
	if err != nil {
		return "", store.ListOptions{}, fmt.Errorf("--format: %v", err)
	}
	switch store.Status(f.Status) {
	case "", store.Queued, store.Pending, store.Running, store.Completed, store.Failed, store.Cancelled, store.Skipped:
	default:
		return "", store.ListOptions{}, fmt.Errorf("--status %q: use queued, pending, running, completed, failed, cancelled or skipped", f.Status)
	}
	if f.Limit < 1 {
		return "", store.ListOptions{}, fmt.Errorf("--limit must be ≥ 1, got %d", f.Limit)
	}
	return format, store.ListOptions{Status: store.Status(f.Status), Name: f.Name, Schedule: f.Schedule, Limit: f.Limit}, nil
}

// Check refuses options no analysis can have: a negative warm-up, window
// count or time. Its errors are one line that names the flag.
func (o ReanalyzeOptions) Check() error {
	if o.Warmup < 0 {
		return fmt.Errorf("--warmup must be ≥ 0, got %s", o.Warmup)
	}
	if o.Windows < 0 {
		return fmt.Errorf("--windows must be ≥ 1, got %d", o.Windows)
	}
	if o.Until < 0 {
		return fmt.Errorf("--until must be > 0, got %s", o.Until)
	}
	return nil
}
