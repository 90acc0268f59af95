package report

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
)

// listStore returns its runs and comparisons and remembers the options.
type listStore struct {
	runs []store.Run
	cs   []store.Comparison
	opts store.ListOptions
	err  error
}

func (s *listStore) ListRuns(_ context.Context, opts store.ListOptions) ([]store.Run, error) {
	s.opts = opts
	return s.runs, s.err
}

func (s *listStore) ListComparisons(_ context.Context, opts store.ListOptions) ([]store.Comparison, error) {
	s.opts = opts
	return s.cs, s.err
}

func TestWriteList(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	st := &listStore{
		runs: []store.Run{{ID: "run-1", Name: "demo", Status: store.Completed, CreatedAt: now.Add(-time.Hour)}},
		cs:   []store.Comparison{{ID: "cmp-1", Name: "demo-ab", Status: store.Running, CreatedAt: now}},
	}
	opts := store.ListOptions{Status: store.Completed, Limit: 5}
	tests := []struct {
		l      Listing
		format Format
		want   []string // in the output
		not    string   // not in it
	}{
		{ListRuns, Text, []string{"ID", "STATUS", "run-1", "demo", "completed"}, "cmp-1"},
		{ListRuns, JSON, []string{`"id":"run-1"`}, "cmp-1"},
		{ListComparisons, Text, []string{"ID", "VERDICTS", "cmp-1", "demo-ab", "running"}, "run-1"},
		{ListComparisons, JSON, []string{`"id":"cmp-1"`}, "run-1"},
	}
	for _, tt := range tests {
		t.Run(string(tt.l)+"/"+string(tt.format), func(t *testing.T) {
			var b strings.Builder
			if err := WriteList(context.Background(), &b, st, tt.l, tt.format, opts, now); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			if strings.Contains(b.String(), tt.not) {
				t.Errorf("output has %q:\n%s", tt.not, b.String())
			}
			if st.opts != opts {
				t.Errorf("listed with %+v, want %+v", st.opts, opts)
			}
		})
	}
	st.err = errors.New("disk on fire")
	if err := WriteList(context.Background(), new(strings.Builder), st, ListComparisons, Text, opts, now); err == nil || err.Error() != "list comparisons: disk on fire" {
		t.Errorf("store error: %v, want it wrapped as list comparisons", err)
	}
}
