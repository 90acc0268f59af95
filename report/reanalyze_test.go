package report

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// analyzeStore keeps what Reanalyze stores.
type analyzeStore struct {
	ws       []window.Window
	findings []analysis.Finding
	stored   bool
	rs       []thresholds.Result
	failPut  bool
}

func (s *analyzeStore) Profiles(context.Context, string, store.ProfileQuery) ([]store.Profile, error) {
	return nil, nil
}

func (s *analyzeStore) Windows(context.Context, string, store.WindowQuery) ([]window.Window, error) {
	return s.ws, nil
}

func (s *analyzeStore) PutFindings(_ context.Context, _ string, fs []analysis.Finding) error {
	if s.failPut {
		return errors.New("read-only")
	}
	s.findings, s.stored = fs, true
	return nil
}

func (s *analyzeStore) PutThresholds(_ context.Context, _ string, rs []thresholds.Result) error {
	s.rs = rs
	return nil
}

// Reanalyze stores the findings and thresholds of a whole run; a partial
// one stores the thresholds only; what the user should know comes back as
// warnings.
func TestReanalyze(t *testing.T) {
	ctx := context.Background()
	maxP99 := 1.0
	ths := []scenarios.Threshold{{Metric: "p99_ms", Max: &maxP99}}
	run := store.Run{ID: "run-1", Status: store.Completed}

	st := &analyzeStore{ws: fixedWindows(t)}
	an, warnings, err := Reanalyze(ctx, st, run, ReanalyzeOptions{Thresholds: ths, Where: "db"})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Reanalyze: %v, warnings %q", err, warnings)
	}
	want := analysis.Analyze(st.ws, analysis.Options{}).Findings
	if an.RunID != "run-1" || an.Windows != 3 || !reflect.DeepEqual(an.Findings, want) || !st.stored || !reflect.DeepEqual(st.findings, want) {
		t.Errorf("analysis %+v; stored %v %+v", an, st.stored, st.findings)
	}
	if len(an.Thresholds) != 1 || an.Thresholds[0].OK || !reflect.DeepEqual(st.rs, an.Thresholds) {
		t.Errorf("thresholds %+v, stored %+v; want p99 failed", an.Thresholds, st.rs)
	}

	st = &analyzeStore{ws: fixedWindows(t)}
	run.Status = store.Running
	an, warnings, err = Reanalyze(ctx, st, run, ReanalyzeOptions{Windows: 1})
	wantWarnings := []string{"run run-1 is running: analysing the 3 windows stored so far", "analysing the first 1 of 3 windows; the findings are not stored"}
	if err != nil || !reflect.DeepEqual(warnings, wantWarnings) || an.Windows != 1 || st.stored {
		t.Errorf("partial: %v, warnings %q, %d windows, stored %v", err, warnings, an.Windows, st.stored)
	}

	st = &analyzeStore{ws: fixedWindows(t), failPut: true}
	if _, _, err := Reanalyze(ctx, st, store.Run{ID: "run-1", Status: store.Completed}, ReanalyzeOptions{Where: "db"}); err == nil || err.Error() != "store the findings of run run-1 in db: read-only" {
		t.Errorf("failing store: %v", err)
	}
}

func TestStoredScenario(t *testing.T) {
	demo, err := os.ReadFile("../scenarios/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		run        store.Run
		wantWarmup string
		wantNote   string
	}{
		{"stored", store.Run{ID: "r", Name: "demo", Scenario: string(demo)}, "20s", ""},
		{"none", store.Run{ID: "r"}, "0s", "run r has no stored scenario: no warm-up (set --warmup), no thresholds"},
		{"imported", store.Run{ID: "r", Kind: "imported"}, "0s", ""},
		{"unparsable", store.Run{ID: "r", Scenario: "load: ["}, "0s", "the stored scenario of run r does not parse: no warm-up (set --warmup), no thresholds"},
	} {
		sc, note := StoredScenario(tt.run)
		if got := sc.Load.Warmup.D().String(); got != tt.wantWarmup || note != tt.wantNote {
			t.Errorf("%s: warm-up %s, note %q; want %s, %q", tt.name, got, note, tt.wantWarmup, tt.wantNote)
		}
	}
}
