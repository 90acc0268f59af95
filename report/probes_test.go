package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/window"
)

func failing(index int, gap bool, fs ...window.ProbeFailure) window.Window {
	return window.Window{Index: index, Gap: gap, ProbeFailures: fs}
}

var (
	inspectorDown = window.ProbeFailure{Probe: "heap.inspector", Error: "connect: connection refused"}
	inspectorGone = window.ProbeFailure{Probe: "heap.inspector", Error: "inspector connection dropped"}
	dbDown        = window.ProbeFailure{Probe: "database", Error: "pg: timeout"}
)

func TestProbeProblems(t *testing.T) {
	tests := []struct {
		name string
		ws   []window.Window
		want []ProbeProblem
	}{
		{"none", []window.Window{failing(0, false), failing(1, false)}, nil},
		{"no windows", nil, nil},
		{"one probe throughout, last error wins", []window.Window{
			failing(0, false, inspectorDown), failing(1, false, inspectorDown), failing(2, false, inspectorGone),
		}, []ProbeProblem{{Probe: "heap.inspector", Windows: 3, Of: 3, FirstWindow: 0, LastWindow: 2, Error: "inspector connection dropped"}}},
		{"two probes, sorted, gaps not counted", []window.Window{
			failing(0, false), failing(1, false, inspectorDown, dbDown), failing(2, true), failing(3, false, dbDown), failing(4, false),
		}, []ProbeProblem{
			{Probe: "database", Windows: 2, Of: 4, FirstWindow: 1, LastWindow: 3, Error: "pg: timeout"},
			{Probe: "heap.inspector", Windows: 1, Of: 4, FirstWindow: 1, LastWindow: 1, Error: "connect: connection refused"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProbeProblems(tt.ws); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestWriteProbeProblems(t *testing.T) {
	tests := []struct {
		name string
		ps   []ProbeProblem
		want string
	}{
		{"none", nil, ""},
		{"one window and a span", []ProbeProblem{
			{Probe: "database", Windows: 1, Of: 30, FirstWindow: 7, LastWindow: 7, Error: "pg: timeout"},
			{Probe: "heap.inspector", Windows: 30, Of: 30, FirstWindow: 0, LastWindow: 29, Error: "refused\nmore detail"},
		}, "probe problems:\n" +
			"  database: failing in 1 of 30 windows (window 7): pg: timeout\n" +
			"  heap.inspector: failing in 30 of 30 windows (windows 0-29): refused ...\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			WriteProbeProblems(&b, tt.ps)
			if got := b.String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func fixedAnalysis() Analysis {
	return Analysis{
		RunID: "run-1", Windows: 30, Warmup: 6 * time.Second,
		ProbeProblems: ProbeProblems([]window.Window{failing(0, false, dbDown), failing(1, false)}),
		Findings:      fixedFindings(),
	}
}

func TestAnalysisTextGolden(t *testing.T) {
	var out bytes.Buffer
	if err := WriteAnalysisText(&out, fixedAnalysis()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "analysis.txt.golden", out.Bytes())
}

func TestAnalysisJSON(t *testing.T) {
	tests := []struct {
		name string
		an   Analysis
	}{
		{"findings and problems", fixedAnalysis()},
		{"nothing found", Analysis{RunID: "run-2", Windows: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := WriteAnalysisJSON(&out, tt.an); err != nil {
				t.Fatal(err)
			}
			if strings.Count(out.String(), "\n") != 1 {
				t.Errorf("want one line, got %q", out.String())
			}
			var got AnalysisObject
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Type != "analysis" || got.RunID != tt.an.RunID || got.Windows != tt.an.Windows || got.WarmupSeconds != tt.an.Warmup.Seconds() {
				t.Errorf("header %+v does not match %+v", got, tt.an)
			}
			if len(got.Findings) != len(tt.an.Findings) || len(got.ProbeProblems) != len(tt.an.ProbeProblems) {
				t.Errorf("%d findings, %d problems; want %d, %d", len(got.Findings), len(got.ProbeProblems), len(tt.an.Findings), len(tt.an.ProbeProblems))
			}
			// Arrays, never null, so a reader can always iterate.
			if !strings.Contains(out.String(), `"findings":[`) || !strings.Contains(out.String(), `"probe_problems":[`) {
				t.Errorf("findings or probe_problems not an array: %s", out.String())
			}
		})
	}
}

func TestRunReportProbeProblems(t *testing.T) {
	ws := fixedWindows(t)
	ws[1].ProbeFailures = []window.ProbeFailure{dbDown}
	rep, err := NewRunReport(fixedRun(), ws, []analysis.Finding{})
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := WriteRunText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if want := "probe problems:\n  database: failing in 1 of 2 windows (window 1): pg: timeout\nno findings\n"; !strings.HasSuffix(text.String(), want) {
		t.Errorf("text report ends\n%s\nwant it to end\n%s", text.String(), want)
	}
	if err := WriteRunJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `{"type":"probe_problem","probe":"database","windows":1,"of":2,"first_window":1,"last_window":1,"error":"pg: timeout"}`) ||
		!strings.Contains(js.String(), `"probe_failures":[{"probe":"database","error":"pg: timeout"}]`) {
		t.Errorf("JSON report lacks the probe problem or the window's failure:\n%s", js.String())
	}
}
