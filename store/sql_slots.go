package store

import (
	"context"
	"errors"
	"fmt"
)

func (s *sqlStore) ClaimSlot(ctx context.Context, sl Slot, n int) (bool, []Slot, error) {
	if sl.Holder == "" || sl.Host == "" {
		return false, nil, errors.New("claim slot: empty holder or host")
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, nil, fmt.Errorf("claim slot on %s: %w", sl.Host, err)
	}
	defer tx.Rollback()
	if s.d.slotLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.slotLock); err != nil {
			return false, nil, fmt.Errorf("claim slot on %s: lock: %w", sl.Host, err)
		}
	}
	held, err := s.hostSlots(ctx, tx, sl.Host)
	if err != nil {
		return false, nil, fmt.Errorf("claim slot on %s: %w", sl.Host, err)
	}
	for _, h := range held {
		if h.Holder == sl.Holder {
			return true, held, nil
		}
	}
	if len(held) >= n {
		return false, held, nil
	}
	// A slot the holder still has elsewhere is given up: it moved host.
	if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM slots WHERE holder = $1`), sl.Holder); err != nil {
		return false, nil, fmt.Errorf("claim slot on %s: %w", sl.Host, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO slots (holder, host, workflow_id, claimed_ns) VALUES ($1, $2, $3, $4)`),
		sl.Holder, sl.Host, sl.WorkflowID, toNanos(sl.ClaimedAt)); err != nil {
		return false, nil, fmt.Errorf("claim slot on %s: %w", sl.Host, err)
	}
	if err := tx.Commit(); err != nil {
		return false, nil, fmt.Errorf("claim slot on %s: %w", sl.Host, err)
	}
	return true, append(held, sl), nil
}

func (s *sqlStore) ReleaseSlot(ctx context.Context, holder string) error {
	if _, err := s.w.ExecContext(ctx, s.d.rebind(`DELETE FROM slots WHERE holder = $1`), holder); err != nil {
		return fmt.Errorf("release slot of %s: %w", holder, err)
	}
	return nil
}

func (s *sqlStore) HostSlots(ctx context.Context, host string) ([]Slot, error) {
	return s.hostSlots(ctx, s.r, host)
}

// hostSlots reads the slots of host ("" for all) through q (the reader, or
// a claim's transaction).
func (s *sqlStore) hostSlots(ctx context.Context, q querier, host string) ([]Slot, error) {
	rows, err := q.QueryContext(ctx, s.d.rebind(`SELECT holder, host, workflow_id, claimed_ns FROM slots
		WHERE $1 = '' OR host = $1 ORDER BY claimed_ns, holder`), host)
	if err != nil {
		return nil, fmt.Errorf("read slots: %w", err)
	}
	defer rows.Close()
	var out []Slot
	for rows.Next() {
		var (
			sl Slot
			ns int64
		)
		if err := rows.Scan(&sl.Holder, &sl.Host, &sl.WorkflowID, &ns); err != nil {
			return nil, fmt.Errorf("read slots: %w", err)
		}
		sl.ClaimedAt = fromNanos(ns)
		out = append(out, sl)
	}
	return out, rows.Err()
}
