package probes

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestParseMetric(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		metric     string
		wantSum    float64
		wantSeries int
		wantErr    error
	}{
		{
			name:       "plain gauge with help and type",
			body:       "# HELP go_gc_heap_live_bytes Live heap.\n# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes 1234567\n",
			metric:     "go_gc_heap_live_bytes",
			wantSum:    1234567,
			wantSeries: 1,
		},
		{
			name:       "exponent",
			body:       "heap 5.6e+07\n",
			metric:     "heap",
			wantSum:    5.6e7,
			wantSeries: 1,
		},
		{
			name:       "labels summed, prefix-named metrics skipped",
			body:       "heap_total 9\nheap{space=\"old\"} 10\nheap{space=\"new\"} 5\nheap_bytes 100\nheapx 3\n",
			metric:     "heap",
			wantSum:    15,
			wantSeries: 2,
		},
		{
			name:       "label value with escaped quote, brace and newline",
			body:       `m{a="x\"}y",b="q\\",c="l\nl"} 7` + "\n",
			metric:     "m",
			wantSum:    7,
			wantSeries: 1,
		},
		{
			name:       "timestamp and CRLF and tabs",
			body:       "m\t42 1700000000000\r\nother 1\r\n",
			metric:     "m",
			wantSum:    42,
			wantSeries: 1,
		},
		{
			name:       "openmetrics with EOF and float timestamp",
			body:       "# TYPE m gauge\nm 8 1700000000.5\n# EOF\n",
			metric:     "m",
			wantSum:    8,
			wantSeries: 1,
		},
		{
			name:       "no trailing newline, leading spaces",
			body:       "a 1\n   m 3",
			metric:     "m",
			wantSum:    3,
			wantSeries: 1,
		},
		{
			name:    "name appears only in comments",
			body:    "# HELP m help\n# TYPE m gauge\n",
			metric:  "m",
			wantErr: ErrMetricNotFound,
		},
		{name: "empty body", body: "", metric: "m", wantErr: ErrMetricNotFound},
		{name: "NaN", body: "m NaN\n", metric: "m", wantErr: ErrMetricNaN},
		{name: "+Inf", body: "m +Inf\n", metric: "m", wantErr: ErrMetricNaN},
		{name: "-Inf", body: "m{a=\"b\"} -Inf\n", metric: "m", wantErr: ErrMetricNaN},
		{name: "garbage value", body: "m 12abc\n", metric: "m", wantErr: ErrExposition},
		{name: "unclosed labels", body: "m{a=\"b\" 12\n", metric: "m", wantErr: ErrExposition},
		{name: "missing value", body: "m{a=\"b\"}\n", metric: "m", wantErr: ErrExposition},
		{name: "bad timestamp", body: "m 1 soon\n", metric: "m", wantErr: ErrExposition},
		{
			name:       "malformed lines of other metrics are ignored",
			body:       "other{ 1\nm 2\n",
			metric:     "m",
			wantSum:    2,
			wantSeries: 1,
		},
		{
			name:       "exemplar after timestamp",
			body:       "m 5 1700000000 # {trace_id=\"a\"} 1\n",
			metric:     "m",
			wantSum:    5,
			wantSeries: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, n, err := ParseMetric([]byte(tt.body), tt.metric)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if sum != tt.wantSum || n != tt.wantSeries {
				t.Errorf("got %v over %d series, want %v over %d", sum, n, tt.wantSum, tt.wantSeries)
			}
		})
	}
}

func TestValidMetricName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"go_gc_heap_live_bytes", true},
		{"nodejs:heap_used", true},
		{"_x", true},
		{"", false},
		{"9lives", false},
		{"go-heap", false},
		{"heap bytes", false},
		{"héap", false},
	}
	for _, tt := range tests {
		if got := ValidMetricName(tt.name); got != tt.want {
			t.Errorf("ValidMetricName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzParseMetric(f *testing.F) {
	f.Add([]byte("# TYPE m gauge\nm 1\n"), "m")
	f.Add([]byte(`m{a="x\"}y"} 7 123`+"\n"), "m")
	f.Add([]byte("m NaN\nm +Inf\n"), "m")
	f.Add([]byte("m{a=\"\\"), "m")
	f.Add([]byte("mm 1e400\n"), "mm")
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		if !ValidMetricName(name) {
			return
		}
		sum, n, err := ParseMetric(body, name)
		if err != nil {
			if sum != 0 {
				t.Errorf("error %v with sum %v", err, sum)
			}
			return
		}
		if n < 1 || math.IsNaN(sum) {
			t.Errorf("success with %d series and sum %v", n, sum)
		}
		// Every series found is a line that starts with the name.
		if !strings.Contains(string(body), name) {
			t.Errorf("found %s in a body that does not contain it", name)
		}
	})
}

// A metrics page the size of the demo target's (VictoriaMetrics process and
// Go metrics, per-route counters and histograms).
func demoMetricsPage(routes int) []byte {
	var b strings.Builder
	for i := range routes {
		for _, le := range []string{"0.001", "0.01", "0.1", "1", "+Inf"} {
			fmt.Fprintf(&b, "http_request_duration_seconds_bucket{route=\"/r%d\",le=\"%s\"} %d\n", i, le, i*100)
		}
		fmt.Fprintf(&b, "http_requests_total{route=\"/r%d\",code=\"200\"} %d\n", i, i*1000)
	}
	b.WriteString("# HELP go_gc_heap_live_bytes Live heap after the last GC.\n# TYPE go_gc_heap_live_bytes gauge\ngo_gc_heap_live_bytes 5.6623104e+07\n")
	b.WriteString("process_resident_memory_bytes 1.2e+08\n")
	return []byte(b.String())
}

func BenchmarkParseMetric(b *testing.B) {
	page := demoMetricsPage(20)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseMetric(page, "go_gc_heap_live_bytes"); err != nil {
			b.Fatal(err)
		}
	}
}
