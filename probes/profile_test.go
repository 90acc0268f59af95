package probes

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// pprofServer serves this test process's own net/http/pprof.
func pprofServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestProfilerTakesCPUAndHeap(t *testing.T) {
	srv := pprofServer(t)
	p, err := NewProfiler(ProfilerConfig{TargetURL: srv.URL, Spec: scenarios.Profile{Pprof: "/debug/pprof", Seconds: 1, Every: 2, HeapEvery: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // something to sample
		x := 1
		for {
			select {
			case <-stop:
				return
			default:
				x = x*31 + 7
			}
		}
	}()
	var got []TakenProfile
	start := time.Now()
	for i := range 6 {
		time.Sleep(1200 * time.Millisecond)
		end := time.Now()
		got = append(got, p.Window(window.Window{Index: i, Start: start, End: end, Requests: 1200})...)
		start = end
	}
	got = append(got, p.Finish()...)
	var cpu, heap int
	for _, tp := range got {
		prof, err := profile.Parse(bytes.NewReader(tp.Data))
		if err != nil {
			t.Fatalf("%s profile %d: %v", tp.Kind, tp.Index, err)
		}
		switch tp.Kind {
		case ProfileKindCPU:
			cpu++
			if tp.Index%2 != 0 || tp.Duration != time.Second {
				t.Errorf("CPU profile index %d duration %s, want an even index and 1s", tp.Index, tp.Duration)
			}
			// 1,200 requests in each ~1.2 s window: ~1,000 in the profile's second.
			if tp.Requests < 800 || tp.Requests > 1200 {
				t.Errorf("CPU profile %d: requests %.0f, want ~1000", tp.Index, tp.Requests)
			}
			if len(prof.Sample) == 0 {
				t.Errorf("CPU profile %d has no samples", tp.Index)
			}
		case ProfileKindHeap:
			heap++
			if tp.Index%2 != 1 {
				t.Errorf("heap profile at window %d, want an odd window (every 2nd closes)", tp.Index)
			}
			if prof.SampleType[len(prof.SampleType)-1].Type != "inuse_space" {
				t.Errorf("heap profile sample types %v", prof.SampleType)
			}
		}
	}
	// CPU profiles start after windows 1, 3 and 5 (into windows 2, 4 and
	// 6); each is handed over once the window it ran in has closed: the
	// one in window 6 never. Heap profiles after windows 1, 3 and 5 (the
	// last window's: Finish takes none again).
	if cpu != 2 || heap != 3 {
		t.Errorf("got %d CPU and %d heap profiles, want 2 and 3", cpu, heap)
	}
}

func TestProfilerFailureIsDropped(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	p, err := NewProfiler(ProfilerConfig{TargetURL: srv.URL, Spec: scenarios.Profile{Pprof: "/debug/pprof", Seconds: 1, Every: 1, HeapEvery: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	var got []TakenProfile
	for i := range 3 {
		time.Sleep(1100 * time.Millisecond)
		end := time.Now()
		got = append(got, p.Window(window.Window{Index: i, Start: start, End: end, Requests: 10})...)
		start = end
	}
	if len(got) != 0 || p.fails == 0 {
		t.Errorf("got %d profiles and %d failures from a target without pprof, want none and some", len(got), p.fails)
	}
}

func TestNewProfilerBadConfig(t *testing.T) {
	for _, sp := range []scenarios.Profile{
		{Seconds: 1, Every: 1, HeapEvery: 1},
		{Pprof: "/debug/pprof", Seconds: 0, Every: 1, HeapEvery: 1},
	} {
		if _, err := NewProfiler(ProfilerConfig{TargetURL: "http://127.0.0.1:1", Spec: sp}); err == nil {
			t.Errorf("NewProfiler(%+v) = nil error", sp)
		}
	}
}
