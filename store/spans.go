package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/longhaul-dev/longhaul/window"
)

// Rollups: level L merges rollupFactor^L consecutive window indexes. Level 3
// (512 windows) keeps a chart of a million windows under 2,000 points.
const (
	rollupFactor   = 8
	maxRollupLevel = 3
)

func bucketSize(level int) int {
	n := 1
	for range level {
		n *= rollupFactor
	}
	return n
}

// rollUp writes the rollups that the window at idx completes: the level-1
// bucket once all its windows are stored, then the level-2 bucket once all
// its level-1 rollups are, and so on. A window written again (replaced)
// rewrites the rollups above it.
func (s *sqlStore) rollUp(ctx context.Context, runID string, idx int) error {
	for level := 1; level <= maxRollupLevel; level++ {
		b := idx / bucketSize(level)
		var (
			n   int
			err error
		)
		if level == 1 {
			err = s.w.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM windows WHERE run_id = $1 AND idx >= $2 AND idx < $3`),
				runID, b*rollupFactor, (b+1)*rollupFactor).Scan(&n)
		} else {
			err = s.w.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM window_rollups WHERE run_id = $1 AND level = $2 AND bucket >= $3 AND bucket < $4`),
				runID, level-1, b*rollupFactor, (b+1)*rollupFactor).Scan(&n)
		}
		if err != nil {
			return fmt.Errorf("roll up run %s: %w", runID, err)
		}
		if n < rollupFactor {
			return nil
		}
		lo, hi := b*bucketSize(level), (b+1)*bucketSize(level)
		var children []Span
		if level == 1 {
			children, err = s.rawSpans(ctx, s.w, runID, lo, hi, true)
		} else {
			children, err = s.storedRollups(ctx, s.w, runID, level-1, lo, hi, true)
		}
		if err != nil {
			return err
		}
		sp, err := combineSpans(children)
		if err != nil {
			return fmt.Errorf("roll up run %s: %w", runID, err)
		}
		if err := s.putRollup(ctx, level, b, sp); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) putRollup(ctx context.Context, level, bucket int, sp Span) error {
	w := sp.Window
	ops := encodeOps(w.Ops)
	w.Ops = nil // in the blob
	doc, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("put rollup: encode: %w", err)
	}
	_, err = s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO window_rollups
		(run_id, level, bucket, first_idx, last_idx, last_incarnation, windows, gaps, start_ns, end_ns, doc, histogram, ops)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (run_id, level, bucket) DO UPDATE SET
			first_idx = excluded.first_idx, last_idx = excluded.last_idx, last_incarnation = excluded.last_incarnation,
			windows = excluded.windows, gaps = excluded.gaps, start_ns = excluded.start_ns, end_ns = excluded.end_ns,
			doc = excluded.doc, histogram = excluded.histogram, ops = excluded.ops`),
		w.RunID, level, bucket, w.Index, sp.LastIndex, sp.LastIncarnation, sp.Windows, sp.Gaps,
		toNanos(w.Start), toNanos(w.End), string(doc), nullBytes(w.Histogram), ops)
	if err != nil {
		return fmt.Errorf("put rollup %s/%d/%d: %w", w.RunID, level, bucket, err)
	}
	return nil
}

// combineSpans merges consecutive spans into one.
func combineSpans(sps []Span) (Span, error) {
	ws := make([]window.Window, len(sps))
	out := Span{}
	for i, sp := range sps {
		ws[i] = sp.Window
		out.Windows += sp.Windows
		out.Gaps += sp.Gaps
	}
	w, err := window.Combine(ws)
	if err != nil {
		return out, err
	}
	last := sps[len(sps)-1]
	out.Window, out.LastIndex, out.LastIncarnation = w, last.LastIndex, last.LastIncarnation
	return out, nil
}

// querier is *sql.DB: rollUp reads through the writer (on SQLite the reader
// pool may not see the window just committed yet), Spans through the reader.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// rawSpans reads the windows with index in [lo, hi) as one-window spans,
// with their histograms (overall and per op) when hist is set, without
// them (and without ops) otherwise.
func (s *sqlStore) rawSpans(ctx context.Context, db querier, runID string, lo, hi int, hist bool) ([]Span, error) {
	return s.rawSpansOps(ctx, db, runID, lo, hi, hist, hist)
}

func (s *sqlStore) rawSpansOps(ctx context.Context, db querier, runID string, lo, hi int, hist, ops bool) ([]Span, error) {
	cols := `start_ns, end_ns, doc, NULL, NULL, NULL`
	switch {
	case hist:
		cols = `start_ns, end_ns, doc, histogram, ops, op_histograms`
	case ops:
		cols = `start_ns, end_ns, doc, NULL, ops, op_histograms`
	}
	rows, err := db.QueryContext(ctx, s.d.rebind(`SELECT `+cols+` FROM windows WHERE run_id = $1 AND idx >= $2 AND idx < $3 ORDER BY idx`), runID, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []Span
	for rows.Next() {
		var (
			start, end int64
			doc        []byte
			h, o, o1   []byte
			w          window.Window
		)
		if err := rows.Scan(&start, &end, &doc, &h, &o, &o1); err != nil {
			return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
		}
		if ops {
			w, err = decodeWindow(doc, o, o1)
		} else {
			var d windowDoc // skips the ops in the document
			err = json.Unmarshal(doc, &d)
			w = d.Window
		}
		if err != nil {
			return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
		}
		w.Start, w.End = fromNanos(start), fromNanos(end)
		w.Histogram = nil
		if hist && len(h) > 0 {
			w.Histogram = h
		}
		if !hist {
			for name, op := range w.Ops {
				op.Histogram = nil
				w.Ops[name] = op
			}
		}
		sp := Span{Window: w, LastIndex: w.Index, LastIncarnation: w.Incarnation, Windows: 1}
		if w.Gap {
			sp.Gaps = 1
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
	}
	return out, nil
}

// storedRollups reads the level's rollups whose buckets lie inside [lo, hi)
// (window indexes), ordered by bucket.
func (s *sqlStore) storedRollups(ctx context.Context, db querier, runID string, level, lo, hi int, hist bool) ([]Span, error) {
	return s.storedRollupsOps(ctx, db, runID, level, lo, hi, hist, hist)
}

func (s *sqlStore) storedRollupsOps(ctx context.Context, db querier, runID string, level, lo, hi int, hist, ops bool) ([]Span, error) {
	size := bucketSize(level)
	cols := `last_idx, last_incarnation, windows, gaps, start_ns, end_ns, doc, NULL, NULL`
	switch {
	case hist:
		cols = `last_idx, last_incarnation, windows, gaps, start_ns, end_ns, doc, histogram, ops`
	case ops:
		cols = `last_idx, last_incarnation, windows, gaps, start_ns, end_ns, doc, NULL, ops`
	}
	rows, err := db.QueryContext(ctx, s.d.rebind(`SELECT `+cols+` FROM window_rollups
		WHERE run_id = $1 AND level = $2 AND bucket >= $3 AND bucket < $4 ORDER BY bucket`),
		runID, level, (lo+size-1)/size, hi/size)
	if err != nil {
		return nil, fmt.Errorf("read rollups of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []Span
	for rows.Next() {
		var (
			sp         Span
			start, end int64
			doc, h, o  []byte
		)
		if err := rows.Scan(&sp.LastIndex, &sp.LastIncarnation, &sp.Windows, &sp.Gaps, &start, &end, &doc, &h, &o); err != nil {
			return nil, fmt.Errorf("read rollups of run %s: %w", runID, err)
		}
		if err := json.Unmarshal(doc, &sp.Window); err != nil {
			return nil, fmt.Errorf("read rollups of run %s: %w", runID, err)
		}
		if ops && len(o) > 0 {
			if sp.Window.Ops, err = decodeOps(o); err != nil {
				return nil, fmt.Errorf("read rollups of run %s: %w", runID, err)
			}
			if !hist {
				for name, op := range sp.Window.Ops {
					op.Histogram = nil
					sp.Window.Ops[name] = op
				}
			}
		}
		sp.Start, sp.End = fromNanos(start), fromNanos(end)
		sp.Histogram = nil
		if hist && len(h) > 0 {
			sp.Histogram = h
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rollups of run %s: %w", runID, err)
	}
	return out, nil
}

func (s *sqlStore) Spans(ctx context.Context, runID string, q SpanQuery) ([]Span, error) {
	maxPoints := q.MaxPoints
	if maxPoints <= 0 {
		maxPoints = DefaultMaxPoints
	}
	hi := q.ToIndex
	if hi <= 0 {
		var last sql.NullInt64
		if err := s.r.QueryRowContext(ctx, s.d.rebind(`SELECT MAX(idx) FROM windows WHERE run_id = $1`), runID).Scan(&last); err != nil {
			return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
		}
		if !last.Valid {
			return nil, nil
		}
		hi = int(last.Int64) + 1
	}
	lo := max(q.FromIndex, 0)
	if hi <= lo {
		return nil, nil
	}
	level := 0
	for level < maxRollupLevel && (hi-lo+bucketSize(level)-1)/bucketSize(level) > maxPoints {
		level++
	}
	return s.cover(ctx, runID, level, lo, hi, false, q.Ops)
}

// cover returns spans of the given level for indexes [lo, hi): a stored
// rollup for each bucket that lies wholly inside the range and has one, and
// for every other bucket (cut by the range's ends, or not rolled up yet:
// the run's last, still filling) one span merged from the level below.
func (s *sqlStore) cover(ctx context.Context, runID string, level, lo, hi int, hist, ops bool) ([]Span, error) {
	if level == 0 {
		return s.rawSpansOps(ctx, s.r, runID, lo, hi, hist, ops || hist)
	}
	stored, err := s.storedRollupsOps(ctx, s.r, runID, level, lo, hi, hist, ops || hist)
	if err != nil {
		return nil, err
	}
	size := bucketSize(level)
	var out []Span
	next := 0 // into stored
	for b := lo / size; b*size < hi; b++ {
		from, to := max(b*size, lo), min((b+1)*size, hi)
		if next < len(stored) && stored[next].Index == b*size && from == b*size && to == (b+1)*size {
			out = append(out, stored[next])
			next++
			continue
		}
		for next < len(stored) && stored[next].Index < to {
			next++ // a rollup whose first window is missing: not this bucket's
		}
		parts, err := s.cover(ctx, runID, level-1, from, to, true, true)
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			continue
		}
		sp, err := combineSpans(parts)
		if err != nil {
			return nil, fmt.Errorf("read windows of run %s: %w", runID, err)
		}
		if !hist {
			sp.Histogram = nil
			if !ops {
				sp.Ops = nil
			} else {
				for name, op := range sp.Ops {
					op.Histogram = nil
					sp.Ops[name] = op
				}
			}
		}
		out = append(out, sp)
	}
	return out, nil
}
