package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// importResult is an import with every optional part: bad lines beyond
// those listed, late points, missing and custom series, a finding.
func importResult() ImportResult {
	t0 := time.Date(2026, 4, 1, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	return ImportResult{
		Run: store.Run{ID: "0199a3c4-0000-7000-8000-000000000001", Name: "checkout", Kind: KindImported},
		Stats: K6Stats{
			Lines: 1900, Points: 1800, LatePoints: 4, BadLines: 3,
			BadLineNumbers: []BadLine{{Line: 905, Why: "not JSON"}, {Line: 1200, Why: "no metric"}},
			Windows:        6, Start: t0, End: t0.Add(30 * time.Second), Requests: 600,
			Missing: []string{"vus", "dropped_iterations"}, Custom: []string{"checks", "iterations"},
		},
		Findings: []analysis.Finding{{Kind: "missing_evidence", Severity: analysis.Info, Summary: "no server-side probes: leaks and CPU cannot be judged", Evidence: analysis.Evidence{LastWindow: 5}}},
	}
}

func TestWriteImportText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteImportText(&b, importResult(), "/data/longhaul.db", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "import.txt.golden", b.Bytes())

	// Nothing optional: the first and last lines only (and the findings').
	res := importResult()
	res.Stats.BadLines, res.Stats.BadLineNumbers, res.Stats.LatePoints, res.Stats.Missing, res.Stats.Custom, res.Findings = 0, nil, 0, nil, nil, nil
	b.Reset()
	if err := WriteImportText(&b, res, "/data/longhaul.db", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); !strings.HasPrefix(lines[0], "imported run ") || !strings.HasPrefix(lines[len(lines)-1], "longhaul report ") ||
		strings.Contains(b.String(), "bad lines") || strings.Contains(b.String(), "custom series") {
		t.Errorf("plain import:\n%s", b.String())
	}
}

func TestWriteImportJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteImportJSON(&b, importResult()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "import.json.golden", b.Bytes())

	// No findings is [], not null; empty lists are left out.
	res := importResult()
	res.Findings, res.Stats.BadLineNumbers, res.Stats.Missing, res.Stats.Custom = nil, nil, nil, nil
	b.Reset()
	if err := WriteImportJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.HasSuffix(s, `"findings":[]}`+"\n") || strings.Contains(s, "first_bad_lines") || strings.Contains(s, "missing") {
		t.Errorf("JSON without findings: %s", s)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteImportWriteError(t *testing.T) {
	if err := WriteImportText(failWriter{}, importResult(), "db", time.Second); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("text: %v", err)
	}
	if err := WriteImportJSON(failWriter{}, importResult()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("JSON: %v", err)
	}
}

func TestImportError(t *testing.T) {
	created := ImportResult{Run: store.Run{ID: "r1"}}
	tests := []struct {
		name string
		res  ImportResult
		err  error
		want string
		bad  bool
	}{
		{"missing", ImportResult{}, &fs.PathError{Op: "open", Path: "/x/k6.json", Err: fs.ErrNotExist}, "import k6.json: file does not exist", true},
		{"unreadable", ImportResult{}, &fs.PathError{Op: "open", Path: "/x/k6.json", Err: os.ErrPermission}, "import k6.json: permission denied", true},
		{"nothing usable", ImportResult{}, fmt.Errorf("%w: no requests in 0 points", ErrNothingUsable), "import k6.json: no usable k6 points: no requests in 0 points (is it k6 run --out json output?)", true},
		{"read error before the run", ImportResult{}, errors.New("gzip: invalid header"), "import k6.json: gzip: invalid header", true},
		{"after the run was created", created, errors.New("store window 3: locked"), "import k6.json into run r1: store window 3: locked", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ImportError("k6.json", tt.res, tt.err)
			if got == nil || got.Error() != tt.want || errors.Is(got, ErrBadInput) != tt.bad {
				t.Errorf("ImportError = %v (bad input %v); want %q (bad input %v)", got, errors.Is(got, ErrBadInput), tt.want, tt.bad)
			}
			if !errors.Is(got, tt.err) && !tt.bad {
				t.Errorf("ImportError does not wrap %v", tt.err)
			}
		})
	}
	if ImportError("k6.json", ImportResult{}, nil) != nil {
		t.Error("ImportError(nil) != nil")
	}
}

// fakeStore has one run ("r", with a scenario) and one comparison ("c").
type fakeStore struct {
	runs  map[string]store.Run
	cmps  map[string]store.Comparison
	ws    map[string][]window.Window
	err   error
	asked []string
}

func (f *fakeStore) GetRun(_ context.Context, id string) (store.Run, error) {
	if f.err != nil {
		return store.Run{}, f.err
	}
	r, ok := f.runs[id]
	if !ok {
		return r, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r, nil
}

func (f *fakeStore) GetComparison(_ context.Context, id string) (store.Comparison, error) {
	c, ok := f.cmps[id]
	if !ok {
		return c, fmt.Errorf("comparison %s: %w", id, store.ErrNotFound)
	}
	return c, nil
}

func (f *fakeStore) Windows(_ context.Context, runID string, _ store.WindowQuery) ([]window.Window, error) {
	f.asked = append(f.asked, runID)
	return f.ws[runID], nil
}

func newFakeStore(t *testing.T) *fakeStore {
	return &fakeStore{
		runs: map[string]store.Run{"r": {ID: "r", Scenario: "name: x\n"}, "plain": {ID: "plain"}},
		cmps: map[string]store.Comparison{
			"c":     {ID: "c", Rounds: []store.Round{{Index: 0, Side: store.SideA, RunID: "r", Status: store.Completed}}},
			"empty": {ID: "empty"},
		},
		ws: map[string][]window.Window{"r": exportWindows(t, 1), "plain": exportWindows(t, 1)},
	}
}

// ExportID writes what Export and ExportRounds write; what the user is to
// fix matches ErrBadInput with the command's line.
func TestExportID(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore(t)
	var warmupOf []string
	warmup := func(r store.Run) time.Duration { warmupOf = append(warmupOf, r.ID); return 10 * time.Second }

	var b bytes.Buffer
	w, err := ExportID(ctx, &b, st, "r", IDOptions{Format: FormatBenchstat, Op: "post", Where: "db", Warmup: warmup})
	want := export(t, exportWindows(t, 1), FormatBenchstat, ExportOptions{Op: "post", Warmup: 10 * time.Second})
	if err != nil || w != nil || !bytes.Equal(b.Bytes(), want) || len(warmupOf) != 1 {
		t.Errorf("run: %v, warnings %v, warm-up asked for %v\n%s\nwant\n%s", err, w, warmupOf, b.Bytes(), want)
	}
	// A run without a stored scenario has no warm-up; its scenario is not asked for.
	b.Reset()
	if _, err := ExportID(ctx, &b, st, "plain", IDOptions{Format: FormatCSV, Warmup: warmup}); err != nil || len(warmupOf) != 1 || !bytes.Equal(b.Bytes(), export(t, exportWindows(t, 1), FormatCSV, ExportOptions{})) {
		t.Errorf("run without scenario: %v, warm-up asked for %v", err, warmupOf)
	}

	b.Reset()
	w, err = ExportID(ctx, &b, st, "c", IDOptions{Format: FormatBenchstat, Side: "a"})
	if err != nil || w != nil || strings.Count(b.String(), "BenchmarkSoak/op=all ") != 1 {
		t.Errorf("comparison: %v, %v\n%s", err, w, b.String())
	}
	b.Reset()
	w, err = ExportID(ctx, &b, st, "empty", IDOptions{Format: FormatBenchstat, Side: "B"})
	if err != nil || len(w) != 1 || w[0] != "comparison empty has no completed round of side B yet" || !strings.HasPrefix(b.String(), "Unit ") {
		t.Errorf("comparison without rounds: %v, %q\n%s", err, w, b.String())
	}

	for _, tt := range []struct {
		id   string
		opts IDOptions
		want string
	}{
		{"nope", IDOptions{Format: FormatCSV, Where: "/data/longhaul.db"}, "no run or comparison nope in /data/longhaul.db (see longhaul runs)"},
		{"r", IDOptions{Format: FormatCSV, Side: "A"}, "--side is for a comparison; r is a run"},
		{"r", IDOptions{Format: FormatCSV, Op: "delete"}, "--op delete: run r has no such op (ops: get items, post)"},
		{"c", IDOptions{Format: FormatCSV, Side: "A"}, "c is a comparison: export one side's rounds with --format benchstat --side A (or B)"},
		{"c", IDOptions{Format: FormatBenchstat, Side: "C"}, "c is a comparison: export one side's rounds with --format benchstat --side A (or B)"},
	} {
		b.Reset()
		_, err := ExportID(ctx, &b, st, tt.id, tt.opts)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrBadInput) || b.Len() != 0 {
			t.Errorf("ExportID(%s, %+v) = %v (output %q); want bad input %q", tt.id, tt.opts, err, b.String(), tt.want)
		}
	}

	// A store that fails is not the user's to fix.
	st.err = errors.New("database is locked")
	if _, err := ExportID(ctx, &b, st, "r", IDOptions{Format: FormatCSV}); err == nil || errors.Is(err, ErrBadInput) || err.Error() != "read run r: database is locked" {
		t.Errorf("failing store: %v", err)
	}
}

func TestParseImportFlags(t *testing.T) {
	tests := []struct {
		format  string
		window  time.Duration
		wantErr string
	}{
		{"text", 10 * time.Second, ""},
		{"json", time.Second, ""},
		{"yaml", time.Second, `--format: unknown format "yaml": use text or json`},
		{"text", 0, "--window must be > 0, got 0s"},
		{"text", -time.Second, "--window must be > 0, got -1s"},
	}
	for _, tt := range tests {
		f, err := ParseImportFlags(tt.format, tt.window)
		if tt.wantErr == "" {
			if err != nil || string(f) != tt.format {
				t.Errorf("%s %s: got %q, %v", tt.format, tt.window, f, err)
			}
			continue
		}
		if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrBadInput) {
			t.Errorf("%s %s: err %v, want %q matching ErrBadInput", tt.format, tt.window, err, tt.wantErr)
		}
	}
}
