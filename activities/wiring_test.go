package activities

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

func TestPublishedPorts(t *testing.T) {
	tests := []struct {
		name string
		spec scenarios.Probes
		want []int
	}{
		{"no heap probe", scenarios.Probes{}, nil},
		{"heap metric only", scenarios.Probes{Heap: &scenarios.Heap{Metric: &scenarios.HeapMetric{}}}, nil},
		{"inspector, default port", scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{}}}, []int{9229}},
		{"inspector on 9339", scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: 9339}}}, []int{9339}},
		{"profiles through the inspector", scenarios.Probes{Profile: &scenarios.Profile{Inspector: true}}, []int{9229}},
		{"profiles through the heap probe's inspector", scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Port: 9339}},
			Profile: &scenarios.Profile{Inspector: true}}, []int{9339}},
		{"profiles from pprof", scenarios.Probes{Profile: &scenarios.Profile{Pprof: "/debug/pprof"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PublishedPorts(tt.spec); !slices.Equal(got, tt.want) {
				t.Errorf("PublishedPorts = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestProfileInspectorAddr: the profiler takes the heap probe's inspector
// address (as inspectorOnHost left it), else the default port — a
// container's published one when reached from the host.
func TestProfileInspectorAddr(t *testing.T) {
	container := Environment{ContainerID: "0123456789abcdef", Ports: map[int]int{9229: 32768}}
	heap := scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Host: "127.0.0.1", Port: 40001}}}
	tests := []struct {
		name   string
		env    Environment
		spec   scenarios.Probes
		onHost bool
		want   string
		err    bool
	}{
		{"local, default", Environment{PID: 1}, scenarios.Probes{}, true, "127.0.0.1:9229", false},
		{"the heap probe's", Environment{PID: 1}, heap, true, "127.0.0.1:40001", false},
		{"container, published", container, scenarios.Probes{}, true, "127.0.0.1:32768", false},
		{"container, in its namespace", container, scenarios.Probes{}, false, "127.0.0.1:9229", false},
		{"container, not published", Environment{ContainerID: "0123456789abcdef"}, scenarios.Probes{}, true, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := profileInspectorAddr(tt.env, tt.spec, tt.onHost)
			if got != tt.want || (err != nil) != tt.err {
				t.Errorf("profileInspectorAddr = %q, %v; want %q (error %v)", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestInspectorOnHost(t *testing.T) {
	inspector := func() scenarios.Probes {
		return scenarios.Probes{Heap: &scenarios.Heap{Inspector: &scenarios.Inspector{Host: "127.0.0.1", Port: 9229, Every: 1}}}
	}
	withMetric := func() scenarios.Probes {
		s := inspector()
		s.Heap.Metric = &scenarios.HeapMetric{Path: "/metrics"}
		return s
	}
	tests := []struct {
		name        string
		env         Environment
		spec        scenarios.Probes
		wantAddr    string // host:port the inspector probe talks to; "" none
		wantMetric  bool
		wantFailure bool
	}{
		{"local target: as written", Environment{PID: 42}, inspector(), "127.0.0.1:9229", false, false},
		{"container, published", Environment{ContainerID: "c0ffee", Ports: map[int]int{9229: 32801}}, inspector(), "127.0.0.1:32801", false, false},
		{"container, not published", Environment{ContainerID: "c0ffee"}, inspector(), "", false, true},
		{"container, not published, metric kept", Environment{ContainerID: "c0ffee", Ports: map[int]int{8080: 1}}, withMetric(), "", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := *tt.spec.Heap.Inspector
			got, failure := inspectorOnHost(tt.env, tt.spec)
			if *tt.spec.Heap.Inspector != orig {
				t.Errorf("the scenario's inspector was changed to %+v", *tt.spec.Heap.Inspector)
			}
			var addr string
			if got.Heap != nil && got.Heap.Inspector != nil {
				addr = got.Heap.Inspector.Host + ":" + strconv.Itoa(got.Heap.Inspector.Port)
			}
			if addr != tt.wantAddr {
				t.Errorf("inspector at %q, want %q", addr, tt.wantAddr)
			}
			if hasMetric := got.Heap != nil && got.Heap.Metric != nil; hasMetric != tt.wantMetric {
				t.Errorf("heap metric kept = %v, want %v", hasMetric, tt.wantMetric)
			}
			if (failure != nil) != tt.wantFailure {
				t.Fatalf("failure %+v, want one: %v", failure, tt.wantFailure)
			}
			if failure != nil && (failure.Probe != "heap.inspector" || !strings.Contains(failure.Error, "port 9229 of container c0ffee is not published")) {
				t.Errorf("failure %+v", failure)
			}
		})
	}
}

// TestServerProbesRecordsFailures: a probe that fails leaves its reading
// empty and is named in the window's ProbeFailures until it recovers; a
// failure known at start (an unpublished inspector) is in every window.
func TestServerProbesRecordsFailures(t *testing.T) {
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes 1.2345e+07\n")
	}))
	defer srv.Close()

	off := false
	spec := scenarios.Probes{Process: &off, Heap: &scenarios.Heap{
		Metric:    &scenarios.HeapMetric{Path: "/metrics", Name: "go_gc_heap_live_bytes"},
		Inspector: &scenarios.Inspector{Host: "127.0.0.1", Port: 9229, Every: 1},
	}}
	env := Environment{TargetURL: srv.URL, ContainerID: "c0ffee"} // inspector not published
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	p, err := ServerProbes(logger)(ctx, env, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	t0 := time.Now()
	sample := func(i int) window.Window {
		w := window.Window{Index: i, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second), Requests: 100}
		p.Sample(ctx, &w)
		return w
	}
	probesOf := func(w window.Window) []string {
		var names []string
		for _, f := range w.ProbeFailures {
			names = append(names, f.Probe)
		}
		return names
	}

	w := sample(0)
	if got, want := probesOf(w), []string{"heap.metric", "heap.inspector"}; !slices.Equal(got, want) {
		t.Errorf("window 0 failures %v, want %v", got, want)
	}
	if w.Probes.HeapBytes != nil {
		t.Errorf("window 0 heap %d, want none (the metric failed)", *w.Probes.HeapBytes)
	}
	if !strings.Contains(w.ProbeFailures[0].Error, "503") {
		t.Errorf("metric failure %q does not say why", w.ProbeFailures[0].Error)
	}

	up.Store(true)
	w = sample(1)
	if got, want := probesOf(w), []string{"heap.inspector"}; !slices.Equal(got, want) {
		t.Errorf("window 1 failures %v, want %v (the metric recovered)", got, want)
	}
	if w.Probes.HeapBytes == nil || *w.Probes.HeapBytes != 12345000 {
		t.Errorf("window 1 heap %v, want 12345000", w.Probes.HeapBytes)
	}
}

func TestSQLiteProbePath(t *testing.T) {
	local := Environment{Provider: "local", RunID: "r1", Incarnation: 2, PID: 42, EnvDir: "/data/provision/r1-2"}
	docker := Environment{Provider: "docker", ContainerID: "abc", EnvDir: "/var/lib/docker/volumes/longhaul-r1-2-env/_data"}
	for _, tt := range []struct {
		tmpl    string
		env     Environment
		want    string
		wantErr string
	}{
		{"", local, "", ""},
		{"/srv/app.db", local, "/srv/app.db", ""},
		{"{{.EnvDir}}/pb_data/data.db", local, "/data/provision/r1-2/pb_data/data.db", ""},
		{"/tmp/{{.RunID}}-{{.Incarnation}}.db", local, "/tmp/r1-2.db", ""},
		{"{{.EnvDir}}/demo.db", docker, docker.EnvDir + "/demo.db", ""},
		{"/tmp/demo.db", docker, "", "keep it under {{.EnvDir}}"},
		{"{{.EnvDir}}/x.db", Environment{Provider: "url"}, "", "has no directory of its own"},
		{"{{.Nope}}", local, "", "probes.database.sqlite"},
	} {
		got, err := sqliteProbePath(tt.tmpl, tt.env)
		if got != tt.want || (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("sqliteProbePath(%q, %s) = %q, %v; want %q, error with %q", tt.tmpl, tt.env.Provider, got, err, tt.want, tt.wantErr)
		}
	}
}
