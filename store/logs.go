package store

import (
	"context"
	"fmt"
)

// TargetLog is the end of what one process of a run's environment printed
// (its stdout and stderr), kept with the run when the environment is torn
// down: the target's or its database's, per incarnation. Data is gzipped
// text with the scenario's secrets masked.
type TargetLog struct {
	RunID       string `json:"run_id"`
	Incarnation int    `json:"incarnation"`
	Source      string `json:"source"` // "target" or "database"
	// Bytes is the text's length (before gzip); Truncated says the process
	// printed more and only its end is kept.
	Bytes     int64 `json:"bytes"`
	Truncated bool  `json:"truncated"`
	// Data is left out by a query without withData.
	Data []byte `json:"-"`
}

// Logs keeps the output of a run's processes.
type Logs interface {
	// PutLog writes one log, replacing one with the same (run,
	// incarnation, source); ErrNotFound when the run does not exist.
	PutLog(ctx context.Context, l TargetLog) error
	// Logs returns the run's logs by incarnation, then source.
	Logs(ctx context.Context, runID string, withData bool) ([]TargetLog, error)
}

func (s *sqlStore) PutLog(ctx context.Context, l TargetLog) error {
	if l.Source == "" {
		return fmt.Errorf("put log of run %s: empty source", l.RunID)
	}
	_, err := s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO logs (run_id, incarnation, source, bytes, truncated, data)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (run_id, incarnation, source) DO UPDATE SET
			bytes = excluded.bytes, truncated = excluded.truncated, data = excluded.data`),
		l.RunID, l.Incarnation, l.Source, l.Bytes, boolInt(l.Truncated), l.Data)
	if err != nil {
		if isForeignKeyViolation(err) {
			return fmt.Errorf("put %s log of run %s: run %w", l.Source, l.RunID, ErrNotFound)
		}
		return fmt.Errorf("put %s log of run %s: %w", l.Source, l.RunID, err)
	}
	return nil
}

func (s *sqlStore) Logs(ctx context.Context, runID string, withData bool) ([]TargetLog, error) {
	data := "NULL"
	if withData {
		data = "data"
	}
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT incarnation, source, bytes, truncated, `+data+` FROM logs
		WHERE run_id = $1 ORDER BY incarnation, source`), runID)
	if err != nil {
		return nil, fmt.Errorf("read logs of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []TargetLog
	for rows.Next() {
		l := TargetLog{RunID: runID}
		var truncated int64
		if err := rows.Scan(&l.Incarnation, &l.Source, &l.Bytes, &truncated, &l.Data); err != nil {
			return nil, fmt.Errorf("read logs of run %s: %w", runID, err)
		}
		l.Truncated = truncated != 0
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read logs of run %s: %w", runID, err)
	}
	return out, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
