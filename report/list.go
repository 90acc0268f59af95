package report

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/longhaul-dev/longhaul/store"
)

// Listing is what `longhaul runs` or `longhaul comparisons` lists.
type Listing string

const (
	ListRuns        Listing = "runs"
	ListComparisons Listing = "comparisons"
)

// Lister is the part of a store a listing reads.
type Lister interface {
	ListRuns(ctx context.Context, opts store.ListOptions) ([]store.Run, error)
	ListComparisons(ctx context.Context, opts store.ListOptions) ([]store.Comparison, error)
}

// WriteList writes the runs or comparisons of st that opts select, newest
// first, as a table (the runs' ages as of now) or one JSON object a line.
func WriteList(ctx context.Context, w io.Writer, st Lister, l Listing, format Format, opts store.ListOptions, now time.Time) error {
	if l == ListComparisons {
		cs, err := st.ListComparisons(ctx, opts)
		if err != nil {
			return fmt.Errorf("list comparisons: %w", err)
		}
		if format == JSON {
			return WriteComparisonsJSON(w, cs)
		}
		return WriteComparisonsText(w, cs)
	}
	rs, err := st.ListRuns(ctx, opts)
	if err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	if format == JSON {
		return WriteRunsJSON(w, rs)
	}
	return WriteRunsText(w, rs, now)
}
