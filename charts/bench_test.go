package charts

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
)

// benchStore returns a SQLite store holding one fixture run of n windows
// (10 s each), written through PutWindow as a soak writes them (so its
// rollups are the ones a real run has). The file is kept in the system's
// temporary directory and reused by later runs: writing 60,480 windows
// takes minutes.
func benchStore(b *testing.B, n int) (store.Store, string) {
	b.Helper()
	id := fmt.Sprintf("bench-%d", n)
	path := filepath.Join(os.TempDir(), fmt.Sprintf("longhaul-charts-bench-v2-%d.db", n))
	done := path + ".done"
	if _, err := os.Stat(done); err != nil {
		os.Remove(path)
		st, err := store.Open(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		fixture{ID: id, Name: id, Windows: n, Window: 10 * time.Second}.seed(b, st, newHistograms(b))
		st.Close()
		b.Logf("wrote %d windows in %v", n, time.Since(t0))
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	st, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st, id
}

func get(b *testing.B, h http.Handler, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8099"+path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	return rec
}

func gzipSize(b []byte) int {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Len()
}

// BenchmarkRunPage is the server time of a run page (store read, merging,
// six charts, the table) for a day at 1-minute windows (1,440), a day at
// 10 s (8,640) and a week at 10 s (60,480).
func BenchmarkRunPage(b *testing.B) {
	for _, n := range []int{1440, 8640, 60480} {
		b.Run(fmt.Sprintf("windows=%d", n), func(b *testing.B) {
			st, id := benchStore(b, n)
			h := New(Options{Store: st}).Handler()
			rec := get(b, h, "/runs/"+id)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				get(b, h, "/runs/"+id)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(rec.Body.Len())/1000, "page-kB")
			b.ReportMetric(float64(gzipSize(rec.Body.Bytes()))/1000, "gzip-kB")
		})
	}
}

// BenchmarkRunPageZoom is a zoomed range of 1,000 windows of the week-long
// run, at full resolution.
func BenchmarkRunPageZoom(b *testing.B) {
	st, id := benchStore(b, 60480)
	h := New(Options{Store: st}).Handler()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		get(b, h, "/runs/"+id+"?from=30000&to=31000")
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkReadWindows1440 is the baseline: reading 1,440 whole windows
// (histograms included) as the reports do, before any chart is drawn.
func BenchmarkReadWindows1440(b *testing.B) {
	st, id := benchStore(b, 1440)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := st.Windows(context.Background(), id, store.AllWindows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkRunsList is the runs page over 10,000 runs.
func BenchmarkRunsList(b *testing.B) {
	path := filepath.Join(b.TempDir(), "runs.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for i := range 10000 {
		r := store.Run{ID: fmt.Sprintf("run-%05d", i), Name: fmt.Sprintf("nightly-%d", i%20), Kind: "soak", Status: store.Completed,
			CreatedAt: fixtureT0.Add(time.Duration(i) * time.Minute), StartedAt: fixtureT0.Add(time.Duration(i) * time.Minute),
			EndedAt: fixtureT0.Add(time.Duration(i)*time.Minute + 30*time.Second)}
		if err := st.PutRun(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	h := New(Options{Store: st}).Handler()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		get(b, h, "/?page=37")
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user+system CPU time: on a machine shared with
// other jobs a steadier figure than wall time, which includes waiting for
// a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
