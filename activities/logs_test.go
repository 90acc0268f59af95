package activities_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/window"
)

// loggingProvisioner is a provisioner whose environments printed
// something; it records what it was asked to read.
type loggingProvisioner struct {
	activitiestest.Provisioner
	outs []activities.Output
	reqs []activities.OutputRequest
}

func (p *loggingProvisioner) ReadOutput(_ context.Context, _ activities.Environment, req activities.OutputRequest) ([]activities.Output, error) {
	p.reqs = append(p.reqs, req)
	return p.outs, nil
}

// Teardown keeps what the target printed with the run, secrets masked,
// before the environment goes.
func TestTeardownKeepsLogs(t *testing.T) {
	t.Setenv("LONGHAUL_TEST_API_TOKEN", "s3cr3t-token")
	st := &activitiestest.Store{}
	scenario := "name: s\nops:\n  - {name: get, weight: 1, request: {path: /, headers: {Authorization: \"${env:LONGHAUL_TEST_API_TOKEN}\"}}}\n"
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "s", Scenario: scenario})
	prov := &loggingProvisioner{outs: []activities.Output{
		{Source: "target", Text: []byte("listening\nauth with s3cr3t-token failed\n"), Truncated: true},
		{Source: "database", Text: nil}, // printed nothing: nothing kept
	}}
	a := &activities.Activities{Store: st, Provisioner: prov}
	env := newEnv(a)
	if _, err := env.ExecuteActivity(a.Teardown, activities.Environment{ID: "r1-1", RunID: "r1", Incarnation: 1}); err != nil {
		t.Fatal(err)
	}
	ls, err := st.Logs(context.Background(), "r1", true)
	if err != nil || len(ls) != 1 {
		t.Fatalf("logs %+v, %v; want the target's", ls, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(ls[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(zr)
	if string(text) != "listening\nauth with *** failed\n" || !ls[0].Truncated || ls[0].Incarnation != 1 || ls[0].Source != "target" {
		t.Errorf("kept %q (%+v), want the output with the secret masked", text, ls[0])
	}
}

// The kept output is cut by window: the provisioner is given the
// incarnation's windows, and the spans it returns are kept with the text,
// moved where masking a secret changed the text's length. The database's
// output of a later incarnation is read from where the one before left it.
func TestKeepLogsByWindow(t *testing.T) {
	t.Setenv("LONGHAUL_TEST_API_TOKEN", "s3cr3t-token")
	ctx := context.Background()
	st := &activitiestest.Store{}
	scenario := "name: s\nops:\n  - {name: get, weight: 1, request: {path: /, headers: {Authorization: \"${env:LONGHAUL_TEST_API_TOKEN}\"}}}\n"
	_ = st.PutRun(ctx, store.Run{ID: "r1", Name: "s", Scenario: scenario})
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	for i := range 3 {
		_ = st.PutWindow(ctx, window.Window{RunID: "r1", Incarnation: 2, Index: 4 + i, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second), Requests: 1, OK: 1})
	}
	_ = st.PutLog(ctx, store.TargetLog{RunID: "r1", Incarnation: 1, Source: "database", Cursor: "offset:77", Data: []byte{1}})

	text := "up\nwindow 4: token s3cr3t-token sent\nwindow 5: ok\n"
	w4 := strings.Index(text, "window 4")
	w5 := strings.Index(text, "window 5")
	prov := &loggingProvisioner{outs: []activities.Output{
		{Source: "target", Text: []byte(text), Cursor: "offset:999",
			Windows: []store.LogWindow{{Index: 4, From: w4, To: w5}, {Index: 5, From: w5, To: len(text)}, {Index: 6, From: len(text), To: len(text)}}},
		{Source: "database", Text: []byte("checkpoint\n"), Cursor: "offset:88"},
	}}
	a := &activities.Activities{Store: st, Provisioner: prov}
	if _, err := newEnv(a).ExecuteActivity(a.Teardown, activities.Environment{ID: "r1-1", RunID: "r1", Incarnation: 2}); err != nil {
		t.Fatal(err)
	}
	if len(prov.reqs) != 1 {
		t.Fatalf("read the output %d times, want once", len(prov.reqs))
	}
	req := prov.reqs[0]
	if req.MaxBytes != activities.MaxLogBytes || req.DatabaseFrom != "offset:77" || len(req.Windows) != 3 ||
		req.Windows[0] != (activities.WindowTime{Index: 4, Start: t0, End: t0.Add(time.Second)}) {
		t.Errorf("asked for %+v; want the incarnation's 3 windows and the database from incarnation 1's cursor", req)
	}
	ls, _ := st.Logs(ctx, "r1", true)
	var target, db store.TargetLog
	for _, l := range ls {
		switch {
		case l.Source == "target" && l.Incarnation == 2:
			target = l
		case l.Source == "database" && l.Incarnation == 2:
			db = l
		}
	}
	if db.Cursor != "offset:88" {
		t.Errorf("database log of incarnation 2 read to %q, want offset:88 (for incarnation 3)", db.Cursor)
	}
	got := gunzip(t, target.Data)
	for _, c := range []struct {
		index int
		want  string
	}{{4, "window 4: token *** sent\n"}, {5, "window 5: ok\n"}, {6, ""}} {
		w, ok := target.Window(c.index)
		if !ok || got[w.From:w.To] != c.want {
			t.Errorf("window %d: %+v (%v) = %q, want %q", c.index, w, ok, got[w.From:w.To], c.want)
		}
	}
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// markingProvisioner records the drive's marks in its environments' output.
type markingProvisioner struct {
	activitiestest.Provisioner
	mu    sync.Mutex
	marks []string
}

func (p *markingProvisioner) MarkOutput(_ context.Context, _ activities.Environment, index int, end bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marks = append(p.marks, fmt.Sprintf("%d %v", index, end))
	return nil
}

// A drive marks the output where its first window starts and where each
// window ends, so that its kept output can be cut by window.
func TestDriveMarksOutput(t *testing.T) {
	st := &activitiestest.Store{}
	_ = st.PutRun(context.Background(), store.Run{ID: "r1", Name: "hello", Scenario: "name: hello\nops:\n  - {name: get, weight: 1, request: {path: /}}\n"})
	prov := &markingProvisioner{}
	envDesc, _ := prov.Provision(context.Background(), activities.ProvisionRequest{RunID: "r1", Incarnation: 1})
	a := &activities.Activities{Store: st, Provisioner: prov, Driver: &activitiestest.Driver{}}
	in := activities.DriveInput{RunID: "r1", Incarnation: 1, FirstIndex: 2, Total: 5,
		Overrides: activities.Overrides{Duration: 5e9, Window: 1e9}, Env: envDesc}
	if _, err := newEnv(a).ExecuteActivity(a.Drive, in); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(prov.marks, ","), "2 false,2 true,3 true,4 true"; got != want {
		t.Errorf("marks %s, want %s", got, want)
	}
}
