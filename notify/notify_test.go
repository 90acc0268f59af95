package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/notify"
	"github.com/longhaul-dev/longhaul/store"
)

func TestEvents(t *testing.T) {
	fs := []analysis.Finding{{Kind: "leak", Severity: analysis.Critical, Summary: "heap grows"}, {Kind: "limit", Severity: analysis.Info, Summary: "limit"}}
	cp := []analysis.RunChangePoint{{Metric: "p99_ms"}}
	tests := []struct {
		name     string
		run      store.Run
		fs       []analysis.Finding
		cp       []analysis.RunChangePoint
		gate     []string
		want     []string
		findings int
	}{
		{"quiet", store.Run{Status: store.Completed}, fs[1:], nil, nil, nil, 0},
		{"critical", store.Run{Status: store.Completed}, fs, nil, nil, []string{notify.EventFindings}, 1},
		{"failed", store.Run{Status: store.Failed}, nil, nil, []string{"the run failed"}, []string{notify.EventFailed}, 0},
		{"gate", store.Run{Status: store.Completed}, nil, nil, []string{"threshold p99_ms < 250 failed"}, []string{notify.EventGateFailed}, 0},
		{"all", store.Run{Status: store.Cancelled}, fs, cp, nil, []string{notify.EventFindings, notify.EventFailed, notify.EventChangePoint}, 1},
	}
	for _, tt := range tests {
		got, worth := notify.Events(tt.run, tt.fs, tt.cp, tt.gate)
		if !reflect.DeepEqual(got, tt.want) || len(worth) != tt.findings {
			t.Errorf("%s: Events = %v, %d findings; want %v, %d", tt.name, got, len(worth), tt.want, tt.findings)
		}
	}
}

func TestCompareEvents(t *testing.T) {
	worse := analysis.Verdict{Metric: analysis.MetricCPUMicrosPerReq, Outcome: analysis.Worse, Ratio: 1.15, Pairs: 3, Summary: "cpu: B lost 3/3 pairs"}
	quiet := []analysis.Verdict{
		{Metric: analysis.MetricP50Ms, Outcome: analysis.NoDifference},
		{Metric: analysis.MetricRPS, Outcome: analysis.Better},
		{Metric: analysis.MetricP99Ms, Outcome: analysis.Inconclusive},
	}
	cp := []analysis.RunChangePoint{{Metric: analysis.MetricCPUMicrosPerReq}}
	tests := []struct {
		name  string
		c     store.Comparison
		cp    []analysis.RunChangePoint
		want  []string
		worse int
	}{
		{"clean", store.Comparison{Status: store.Completed, Verdicts: quiet}, nil, nil, 0},
		{"worse", store.Comparison{Status: store.Completed, Verdicts: append(quiet, worse)}, nil, []string{notify.EventWorse}, 1},
		{"failed", store.Comparison{Status: store.Failed}, nil, []string{notify.EventFailed}, 0},
		{"cancelled", store.Comparison{Status: store.Cancelled}, nil, []string{notify.EventFailed}, 0},
		{"change point", store.Comparison{Status: store.Completed, Verdicts: quiet}, cp, []string{notify.EventChangePoint}, 0},
		{"worse and a point", store.Comparison{Status: store.Completed, Verdicts: []analysis.Verdict{worse}}, cp, []string{notify.EventWorse, notify.EventChangePoint}, 1},
	}
	for _, tt := range tests {
		got, vs := notify.CompareEvents(tt.c, tt.cp)
		if !reflect.DeepEqual(got, tt.want) || len(vs) != tt.worse {
			t.Errorf("%s: CompareEvents = %v, %d verdicts; want %v, %d", tt.name, got, len(vs), tt.want, tt.worse)
		}
		if len(vs) > 0 && (vs[0].Metric != worse.Metric || vs[0].Ratio != 1.15 || vs[0].Summary != worse.Summary) {
			t.Errorf("%s: verdict %+v, want the cpu one", tt.name, vs[0])
		}
	}
}

func TestPost(t *testing.T) {
	var got notify.Payload
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s with %q", r.Method, r.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	ctx := context.Background()
	p := notify.Payload{Events: []string{notify.EventFailed}, Schedule: "nightly", RunID: "r1", Status: store.Failed, URL: "http://ui/runs/r1"}
	if err := notify.Post(ctx, nil, srv.URL, p); err != nil {
		t.Fatal(err)
	}
	if got.Type != notify.Type || got.Schedule != "nightly" || got.RunID != "r1" || got.Findings == nil || got.ChangePoints == nil {
		t.Errorf("received %+v", got)
	}
	status = http.StatusServiceUnavailable
	if err := notify.Post(ctx, nil, srv.URL, p); err == nil || errors.Is(err, notify.ErrRejected) {
		t.Errorf("503: %v, want a retryable error", err)
	}
	status = http.StatusNotFound
	if err := notify.Post(ctx, nil, srv.URL, p); !errors.Is(err, notify.ErrRejected) {
		t.Errorf("404: %v, want ErrRejected", err)
	}
	if err := notify.Post(ctx, nil, "http://127.0.0.1:1/closed", p); err == nil || errors.Is(err, notify.ErrRejected) {
		t.Errorf("closed port: %v, want a retryable error", err)
	}
}
