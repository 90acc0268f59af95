package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ProfileKind says what a stored profile measured.
type ProfileKind string

// Profile kinds: a CPU profile of a few seconds, and a heap profile (Go's
// inuse_space after a forced GC, or a Node.js sampling heap profile).
const (
	ProfileCPU  ProfileKind = "cpu"
	ProfileHeap ProfileKind = "heap"
)

// Profile is one profile of a run's target, in pprof format (a gzipped
// profile.proto, as `go tool pprof` reads it), keyed by (run, kind,
// incarnation, window index).
type Profile struct {
	RunID       string      `json:"run_id"`
	Kind        ProfileKind `json:"kind"`
	Incarnation int         `json:"incarnation"`
	// Index is the window the profile was taken in (a CPU profile starts
	// when the window before it closes).
	Index int       `json:"index"`
	Start time.Time `json:"start"`
	// Duration is how long a CPU profile sampled (0 for a heap profile).
	Duration time.Duration `json:"duration_ns"`
	// Requests is how many requests the target served while a CPU
	// profile sampled (the windows' counts pro rata over the profile's
	// span), so that its CPU can be read per request; 0 when unknown.
	Requests float64 `json:"requests"`
	// Data is the profile itself; left out by a query without WithData.
	Data []byte `json:"-"`
}

// ProfileQuery selects a run's profiles: of Kind ("" any), window index in
// [FromIndex, ToIndex) (ToIndex 0: to the end); WithData reads the profiles'
// bytes too (listings need only their keys).
type ProfileQuery struct {
	Kind               ProfileKind
	FromIndex, ToIndex int
	WithData           bool
}

// Profiles keeps the run's profiles.
type Profiles interface {
	// PutProfile writes one profile, replacing one with the same key;
	// ErrNotFound when the run does not exist.
	PutProfile(ctx context.Context, p Profile) error
	// Profiles returns the run's profiles that q selects, ordered by
	// kind, then window index, then incarnation.
	Profiles(ctx context.Context, runID string, q ProfileQuery) ([]Profile, error)
	// DeleteProfile removes one profile (none there is not an error).
	DeleteProfile(ctx context.Context, runID string, kind ProfileKind, incarnation, index int) error
}

func (s *sqlStore) PutProfile(ctx context.Context, p Profile) error {
	if p.Kind == "" {
		return fmt.Errorf("put profile of run %s: empty kind", p.RunID)
	}
	_, err := s.w.ExecContext(ctx, s.d.rebind(`INSERT INTO profiles
		(run_id, kind, incarnation, idx, start_ns, duration_ns, requests, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (run_id, kind, incarnation, idx) DO UPDATE SET
			start_ns = excluded.start_ns, duration_ns = excluded.duration_ns,
			requests = excluded.requests, data = excluded.data`),
		p.RunID, string(p.Kind), p.Incarnation, p.Index, toNanos(p.Start), int64(p.Duration), p.Requests, p.Data)
	if err != nil {
		if isForeignKeyViolation(err) {
			return fmt.Errorf("put %s profile of run %s: run %w", p.Kind, p.RunID, ErrNotFound)
		}
		return fmt.Errorf("put %s profile of run %s: %w", p.Kind, p.RunID, err)
	}
	return nil
}

func (s *sqlStore) Profiles(ctx context.Context, runID string, q ProfileQuery) ([]Profile, error) {
	data := "NULL"
	if q.WithData {
		data = "data"
	}
	query := `SELECT kind, incarnation, idx, start_ns, duration_ns, requests, ` + data + ` FROM profiles
		WHERE run_id = $1 AND ($2 = '' OR kind = $2) AND idx >= $3 AND ($4 <= 0 OR idx < $4)
		ORDER BY kind, idx, incarnation`
	rows, err := s.r.QueryContext(ctx, s.d.rebind(query), runID, string(q.Kind), q.FromIndex, q.ToIndex)
	if err != nil {
		return nil, fmt.Errorf("read profiles of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []Profile
	for rows.Next() {
		p := Profile{RunID: runID}
		var kind string
		var start, dur int64
		var blob []byte
		if err := rows.Scan(&kind, &p.Incarnation, &p.Index, &start, &dur, &p.Requests, &blob); err != nil {
			return nil, fmt.Errorf("read profiles of run %s: %w", runID, err)
		}
		p.Kind, p.Start, p.Duration, p.Data = ProfileKind(kind), fromNanos(start), time.Duration(dur), blob
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read profiles of run %s: %w", runID, err)
	}
	return out, nil
}

func (s *sqlStore) DeleteProfile(ctx context.Context, runID string, kind ProfileKind, incarnation, index int) error {
	_, err := s.w.ExecContext(ctx, s.d.rebind(`DELETE FROM profiles WHERE run_id = $1 AND kind = $2 AND incarnation = $3 AND idx = $4`),
		runID, string(kind), incarnation, index)
	if err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("delete %s profile %d of run %s: %w", kind, index, runID, err)
	}
	return nil
}
