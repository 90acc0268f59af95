package profiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/longhaul-dev/longhaul/store"
)

// Reader is the part of store.Store that Select reads.
type Reader interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	GetComparison(ctx context.Context, id string) (store.Comparison, error)
	Profiles(ctx context.Context, runID string, q store.ProfileQuery) ([]store.Profile, error)
}

// Selection names stored profiles: those of a run, or of one side of a
// comparison (the completed rounds the verdicts count), of one kind, within
// a range of window indexes.
type Selection struct {
	// ID is a run's or a comparison's id.
	ID string
	// Side is the comparison's side (A or B); it must be empty for a run.
	Side store.Side
	// Kind is the kind of profile; "" means CPU.
	Kind store.ProfileKind
	// FromIndex and ToIndex bound the windows: [FromIndex, ToIndex),
	// ToIndex 0 meaning to the end.
	FromIndex, ToIndex int
}

// ErrBadSelection wraps the errors of a selection that cannot be right
// (a side for a run, none for a comparison): the user's mistake, not the
// store's.
var ErrBadSelection = errors.New("bad profile selection")

// Select reads the profiles sel names, with their bytes. A selection that
// matches nothing is not an error: the result is empty.
func Select(ctx context.Context, st Reader, sel Selection) ([]store.Profile, error) {
	if sel.Kind == "" {
		sel.Kind = store.ProfileCPU
	}
	q := store.ProfileQuery{Kind: sel.Kind, FromIndex: sel.FromIndex, ToIndex: sel.ToIndex, WithData: true}
	_, err := st.GetRun(ctx, sel.ID)
	switch {
	case err == nil:
		if sel.Side != "" {
			return nil, fmt.Errorf("%w: %s is a run, not a comparison: leave out the side", ErrBadSelection, sel.ID)
		}
		return st.Profiles(ctx, sel.ID, q)
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	c, err := st.GetComparison(ctx, sel.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no run or comparison %s", ErrBadSelection, sel.ID)
	}
	if err != nil {
		return nil, err
	}
	side := store.Side(strings.ToUpper(string(sel.Side)))
	if side != store.SideA && side != store.SideB {
		return nil, fmt.Errorf("%w: %s is a comparison: say which side's profiles, A or B", ErrBadSelection, sel.ID)
	}
	var out []store.Profile
	for _, r := range RoundRuns(c, side) {
		ps, err := st.Profiles(ctx, r, q)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// RoundRuns are the runs of a comparison's side that its verdicts count:
// completed rounds that were not superseded.
func RoundRuns(c store.Comparison, side store.Side) []string {
	var ids []string
	for _, r := range c.Rounds {
		if r.Side == side && !r.Superseded && r.Status == store.Completed && r.RunID != "" {
			ids = append(ids, r.RunID)
		}
	}
	return ids
}

// Write merges the profiles sel names and writes them to w as a gzipped
// profile.proto (`go tool pprof` opens it). It returns how many it merged;
// ErrNone when there are none.
func Write(ctx context.Context, st Reader, sel Selection, w io.Writer) (int, error) {
	ps, err := Select(ctx, st, sel)
	if err != nil {
		return 0, err
	}
	m, err := Merge(ps)
	if err != nil {
		return 0, err
	}
	return m.Count, m.Write(w)
}

// WindowRange is `longhaul profile`'s choice of windows: Window alone
// (when set), or From to To, both included (To < 0: to the end).
type WindowRange struct {
	Window, From, To          int
	HasWindow, HasFrom, HasTo bool
}

// NewSelection checks a command line's choice of profiles of id: kind
// (cpu or heap), side and the windows.
func NewSelection(id, side, kind string, r WindowRange) (Selection, error) {
	sel := Selection{ID: id, Side: store.Side(side), Kind: store.ProfileKind(kind), FromIndex: r.From}
	if sel.Kind != store.ProfileCPU && sel.Kind != store.ProfileHeap {
		return sel, fmt.Errorf("--kind is cpu or heap, got %q", kind)
	}
	switch {
	case r.HasWindow && (r.HasFrom || r.HasTo):
		return sel, errors.New("--window excludes --from and --to")
	case r.HasWindow && r.Window < 0, r.From < 0:
		return sel, errors.New("window indexes are ≥ 0")
	case r.HasWindow:
		sel.FromIndex, sel.ToIndex = r.Window, r.Window+1
	case r.HasTo && r.To < r.From:
		return sel, fmt.Errorf("--to %d is before --from %d", r.To, r.From)
	case r.HasTo:
		sel.ToIndex = r.To + 1
	}
	return sel, nil
}
