package follow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// fullStore is a store whose disk fills up: after room windows every
// write fails as SQLite's does; with endFails, the write of the run's end
// fails too (the last bytes went to the windows).
type fullStore struct {
	*activitiestest.Store
	room     int
	endFails bool
}

var errFull = errors.New("database or disk is full (13)")

func (s *fullStore) PutWindow(ctx context.Context, w window.Window) error {
	if s.room <= 0 {
		return errFull
	}
	s.room--
	return s.Store.PutWindow(ctx, w)
}

func (s *fullStore) SetStatus(ctx context.Context, id string, st store.Status, reason string, at time.Time) error {
	if (s.room <= 0 || s.endFails) && st.Done() {
		return errFull
	}
	return s.Store.SetStatus(ctx, id, st, reason, at)
}

func testDrive(t *testing.T, duration string) Drive {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "d.yaml")
	body := "name: d\nload: {vus: 2, duration: " + duration + ", window: 200ms}\nops:\n  - {name: get, weight: 1, request: {path: /}}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	return Drive{Scenario: s, Source: []byte(body), Plan: plan, Load: s.Load, Target: u, Format: report.Text, Where: "/data/longhaul.db"}
}

// A store that fills up: the drive stops, says which store and what was
// not written, keeps what was stored, and exits 1 — never "completed".
func TestFollowDriveStoreFull(t *testing.T) {
	for _, tt := range []struct {
		name     string
		room     int
		endFails bool
		want     []string
	}{
		{"full mid-run", 2, false, []string{"longhaul: the store /data/longhaul.db could not take window 2: database or disk is full (13); stopping the run", ": 2 windows stored in /data/longhaul.db"}},
		{"full at the end", 100, true, []string{"longhaul: the store /data/longhaul.db could not record that run ", " completed: database or disk is full (13); its ", " windows stored before are kept, and it shows as running there"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &fullStore{Store: &activitiestest.Store{}, room: tt.room, endFails: tt.endFails}
			term := newTerminal()
			err := FollowDrive(context.Background(), term.Terminal, st, testDrive(t, "1s"))
			if err != (Exit{ExitFailed}) {
				t.Fatalf("FollowDrive = %v, want exit 1; stderr:\n%s", err, term.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(term.stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, term.stderr)
				}
			}
			runs, _ := st.ListRuns(context.Background(), store.ListOptions{})
			if len(runs) != 1 {
				t.Fatalf("%d runs", len(runs))
			}
			ws, _ := st.Windows(context.Background(), runs[0].ID, store.AllWindows)
			if want := min(tt.room, len(ws)); len(ws) != want || len(ws) < 2 || !strings.Contains(term.stderr.String(), fmt.Sprintf(": %d windows stored in", len(ws))) {
				t.Errorf("%d windows stored (room %d); stderr:\n%s", len(ws), tt.room, term.stderr)
			}
		})
	}
}
