package store

import (
	"context"
	"encoding/json"
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
	// Windows says which lines of the text each window's time printed
	// (byte ranges of the text before gzip), for the windows whose output
	// is known.
	Windows []LogWindow `json:"windows,omitempty"`
	// Cursor is where the process's output was read to (the provider's
	// own, opaque): the database's next incarnation starts there.
	Cursor string `json:"cursor,omitempty"`
	// Data is left out by a query without withData.
	Data []byte `json:"-"`
}

// LogWindow is the part of a kept log printed during window Index:
// text[From:To], whole lines (From == To: nothing).
type LogWindow struct {
	Index int `json:"index"`
	From  int `json:"from"`
	To    int `json:"to"`
}

// Window returns the span of window index, and whether the log has it.
func (l TargetLog) Window(index int) (LogWindow, bool) {
	for _, w := range l.Windows {
		if w.Index == index {
			return w, true
		}
	}
	return LogWindow{}, false
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
	var windows []byte
	if len(l.Windows) > 0 {
		var err error
		if windows, err = json.Marshal(l.Windows); err != nil {
			return fmt.Errorf("put %s log of run %s: %w", l.Source, l.RunID, err)
		}
	}
	_, err := s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO logs (run_id, incarnation, source, bytes, truncated, data, windows, read_to)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (run_id, incarnation, source) DO UPDATE SET
			bytes = excluded.bytes, truncated = excluded.truncated, data = excluded.data,
			windows = excluded.windows, read_to = excluded.read_to`),
		l.RunID, l.Incarnation, l.Source, l.Bytes, boolInt(l.Truncated), l.Data, string(windows), l.Cursor)
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
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT incarnation, source, bytes, truncated, windows, read_to, `+data+` FROM logs
		WHERE run_id = $1 ORDER BY incarnation, source`), runID)
	if err != nil {
		return nil, fmt.Errorf("read logs of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []TargetLog
	for rows.Next() {
		l := TargetLog{RunID: runID}
		var (
			truncated int64
			windows   string
		)
		if err := rows.Scan(&l.Incarnation, &l.Source, &l.Bytes, &truncated, &windows, &l.Cursor, &l.Data); err != nil {
			return nil, fmt.Errorf("read logs of run %s: %w", runID, err)
		}
		if windows != "" {
			if err := json.Unmarshal([]byte(windows), &l.Windows); err != nil {
				return nil, fmt.Errorf("read logs of run %s: windows of the %s log of incarnation %d: %w", runID, l.Source, l.Incarnation, err)
			}
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
