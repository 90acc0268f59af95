package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// comparisonDoc is what the doc column holds: the comparison without the
// fields that have columns of their own, and without its rounds.
func comparisonDoc(c Comparison) ([]byte, error) {
	c.Rounds = nil
	return json.Marshal(c)
}

func (s *sqlStore) PutComparison(ctx context.Context, c Comparison) error {
	if c.ID == "" {
		return errors.New("put comparison: empty id")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	doc, err := comparisonDoc(c)
	if err != nil {
		return fmt.Errorf("put comparison %s: encode: %w", c.ID, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put comparison %s: %w", c.ID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// ON CONFLICT ... DO UPDATE, not REPLACE: a REPLACE deletes the row
	// first, which would cascade to the rounds.
	_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO comparisons
		(id, name, status, reason, scenario, workflow_id, doc, created_ns, started_ns, ended_ns, schedule)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (id) DO UPDATE SET
			name = excluded.name, status = excluded.status, reason = excluded.reason,
			scenario = excluded.scenario, workflow_id = excluded.workflow_id, doc = excluded.doc,
			created_ns = excluded.created_ns, started_ns = excluded.started_ns, ended_ns = excluded.ended_ns,
			schedule = excluded.schedule`),
		c.ID, c.Name, string(c.Status), c.Reason, c.Scenario, c.WorkflowID, string(doc),
		toNanos(c.CreatedAt), toNanos(c.StartedAt), toNanos(c.EndedAt), c.Schedule)
	if err != nil {
		return fmt.Errorf("put comparison %s: %w", c.ID, err)
	}
	for _, r := range c.Rounds {
		if err := s.putRound(ctx, tx, c.ID, r); err != nil {
			return fmt.Errorf("put comparison %s: %w", c.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put comparison %s: %w", c.ID, err)
	}
	return nil
}

func (s *sqlStore) putRound(ctx context.Context, tx *sql.Tx, id string, r Round) error {
	if r.Index < 0 || r.Pair < 0 {
		return fmt.Errorf("round %d of pair %d: negative index", r.Index, r.Pair)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("round %d: encode: %w", r.Index, err)
	}
	var disturbed int64
	if r.Disturbed {
		disturbed = 1
	}
	_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO comparison_rounds
		(comparison_id, idx, pair_idx, side, run_id, status, disturbed, doc)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (comparison_id, idx) DO UPDATE SET
			pair_idx = excluded.pair_idx, side = excluded.side, run_id = excluded.run_id,
			status = excluded.status, disturbed = excluded.disturbed, doc = excluded.doc`),
		id, r.Index, r.Pair, string(r.Side), r.RunID, string(r.Status), disturbed, string(doc))
	if err != nil {
		if isForeignKeyViolation(err) {
			return fmt.Errorf("round %d: comparison %w (PutComparison first)", r.Index, ErrNotFound)
		}
		return fmt.Errorf("round %d: %w", r.Index, err)
	}
	return nil
}

func (s *sqlStore) PutRound(ctx context.Context, comparisonID string, r Round) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put round of comparison %s: %w", comparisonID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := s.putRound(ctx, tx, comparisonID, r); err != nil {
		return fmt.Errorf("put round of comparison %s: %w", comparisonID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put round of comparison %s: %w", comparisonID, err)
	}
	return nil
}

const comparisonColumns = `id, name, status, reason, scenario, workflow_id, doc, created_ns, started_ns, ended_ns, schedule`

func scanComparison(sc interface{ Scan(...any) error }) (Comparison, error) {
	var (
		c                        Comparison
		id, name, status, reason string
		scenario, workflowID     string
		schedule                 string
		doc                      []byte
		created, started, ended  int64
	)
	if err := sc.Scan(&id, &name, &status, &reason, &scenario, &workflowID, &doc, &created, &started, &ended, &schedule); err != nil {
		return c, err
	}
	if err := json.Unmarshal(doc, &c); err != nil {
		return c, fmt.Errorf("decode comparison %s: %w", id, err)
	}
	c.ID, c.Name, c.Status, c.Reason, c.Scenario, c.WorkflowID, c.Schedule = id, name, Status(status), reason, scenario, workflowID, schedule
	c.CreatedAt, c.StartedAt, c.EndedAt = fromNanos(created), fromNanos(started), fromNanos(ended)
	c.Rounds = nil
	return c, nil
}

func (s *sqlStore) rounds(ctx context.Context, id string) ([]Round, error) {
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT doc FROM comparison_rounds WHERE comparison_id = $1 ORDER BY idx`), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var rs []Round
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		var r Round
		if err := json.Unmarshal(doc, &r); err != nil {
			return nil, fmt.Errorf("decode round: %w", err)
		}
		rs = append(rs, r)
	}
	return rs, rows.Err()
}

func (s *sqlStore) GetComparison(ctx context.Context, id string) (Comparison, error) {
	row := s.r.QueryRowContext(ctx, s.d.rebind(`SELECT `+comparisonColumns+` FROM comparisons WHERE id = $1`), id)
	c, err := scanComparison(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Comparison{}, fmt.Errorf("get comparison %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Comparison{}, fmt.Errorf("get comparison %s: %w", id, err)
	}
	if c.Rounds, err = s.rounds(ctx, id); err != nil {
		return Comparison{}, fmt.Errorf("get comparison %s: rounds: %w", id, err)
	}
	return c, nil
}

// comparisonFilter is the WHERE clause of ListComparisons and
// CountComparisons: status, name and schedule, each ignored when empty.
const comparisonFilter = ` WHERE ($1 = '' OR status = $1) AND ($2 = '' OR name = $2) AND ($3 = '' OR schedule = $3)`

func (s *sqlStore) ListComparisons(ctx context.Context, opts ListOptions) ([]Comparison, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + comparisonColumns + ` FROM comparisons` + comparisonFilter + ` ORDER BY created_ns DESC, id DESC LIMIT $4 OFFSET $5`
	rows, err := s.r.QueryContext(ctx, s.d.rebind(q), string(opts.Status), opts.Name, opts.Schedule, limit, max(opts.Offset, 0))
	if err != nil {
		return nil, fmt.Errorf("list comparisons: %w", err)
	}
	var cs []Comparison
	for rows.Next() {
		c, err := scanComparison(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list comparisons: %w", err)
		}
		cs = append(cs, c)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("list comparisons: %w", err)
	}
	for i := range cs {
		if cs[i].Rounds, err = s.rounds(ctx, cs[i].ID); err != nil {
			return nil, fmt.Errorf("list comparisons: rounds of %s: %w", cs[i].ID, err)
		}
	}
	return cs, nil
}

func (s *sqlStore) CountComparisons(ctx context.Context, opts ListOptions) (int, error) {
	var n int
	q := `SELECT COUNT(*) FROM comparisons` + comparisonFilter
	if err := s.r.QueryRowContext(ctx, s.d.rebind(q), string(opts.Status), opts.Name, opts.Schedule).Scan(&n); err != nil {
		return 0, fmt.Errorf("count comparisons: %w", err)
	}
	return n, nil
}

func (s *sqlStore) SetComparisonStatus(ctx context.Context, id string, st Status, reason string, at time.Time) error {
	return s.setStatus(ctx, "comparisons", "comparison", id, st, reason, at)
}

func (s *sqlStore) RoundOfRun(ctx context.Context, runID string) (string, Round, error) {
	var (
		id  string
		doc []byte
	)
	err := s.r.QueryRowContext(ctx, s.d.rebind(`SELECT comparison_id, doc FROM comparison_rounds WHERE run_id = $1 ORDER BY idx LIMIT 1`), runID).Scan(&id, &doc)
	if errors.Is(err, sql.ErrNoRows) || runID == "" {
		return "", Round{}, fmt.Errorf("round of run %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return "", Round{}, fmt.Errorf("round of run %s: %w", runID, err)
	}
	var r Round
	if err := json.Unmarshal(doc, &r); err != nil {
		return "", Round{}, fmt.Errorf("round of run %s: decode: %w", runID, err)
	}
	return id, r, nil
}
