package probes

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
)

// maxMetricsBytes bounds how much of a metrics page is read.
const maxMetricsBytes = 8 << 20

// newHTTPClient returns the client probes use to talk to the target: no
// proxy (the target is on loopback), a couple of kept-alive connections,
// opened by dial (Config.Dial) when it is not nil.
func newHTTPClient(dial DialFunc) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dial,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     2 * time.Minute,
			// An https target's own metrics on loopback, often with a
			// certificate made for the run: checking it is the driver's job.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// MetricScraper reads one gauge from a target's Prometheus-format metrics
// page, and with ReadRuntime, from the same fetch, a Go target's GC pauses
// and cumulative runtime counters (GoCounters). It reuses its read buffer,
// so it is not safe for concurrent use.
type MetricScraper struct {
	URL  string // the metrics page, e.g. http://127.0.0.1:8080/metrics
	Name string // the metric, e.g. go_gc_heap_live_bytes

	client *http.Client
	buf    bytes.Buffer
}

// NewMetricScraper returns a scraper of metric name at url.
func NewMetricScraper(url, name string) *MetricScraper {
	return &MetricScraper{URL: url, Name: name, client: newHTTPClient(nil)}
}

// Read fetches the page and returns the metric's value (the sum over its
// label sets), rounded to an integer.
func (m *MetricScraper) Read(ctx context.Context) (int64, error) {
	n, _, err := m.ReadPauses(ctx)
	return n, err
}

// ReadPauses is Read that also returns the page's GC pause histogram
// (GCPauseMetric), nil when the page has none.
func (m *MetricScraper) ReadPauses(ctx context.Context) (int64, []Bucket, error) {
	r, err := m.ReadRuntime(ctx)
	return r.Heap, r.Pauses, err
}

// MetricReading is everything one scrape of a metrics page gives: the heap
// metric, and from a Go target's page its GC pause histogram and cumulative
// runtime counters.
type MetricReading struct {
	Heap   int64
	Pauses []Bucket // GCPauseMetric's buckets; nil when the page has none
	Go     GoCounters
}

// ReadRuntime fetches the page once and returns the metric's value (as Read
// does), the GC pause histogram (as ReadPauses does) and the Go runtime
// counters (ParseGoCounters). Only the metric is required: a page without
// the others is not an error.
func (m *MetricScraper) ReadRuntime(ctx context.Context) (MetricReading, error) {
	n, err := m.read(ctx)
	if err != nil {
		return MetricReading{}, err
	}
	b, _ := ParseHistogram(m.buf.Bytes(), GCPauseMetric)
	return MetricReading{Heap: n, Pauses: b, Go: ParseGoCounters(m.buf.Bytes())}, nil
}

func (m *MetricScraper) read(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL, nil)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", m.URL, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := m.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", m.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return 0, fmt.Errorf("scrape %s: status %s", m.URL, resp.Status)
	}
	m.buf.Reset()
	if _, err := m.buf.ReadFrom(io.LimitReader(resp.Body, maxMetricsBytes)); err != nil {
		return 0, fmt.Errorf("scrape %s: read: %w", m.URL, err)
	}
	v, _, err := ParseMetric(m.buf.Bytes(), m.Name)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", m.URL, err)
	}
	return toBytes(v)
}

func toBytes(v float64) (int64, error) {
	if v < 0 || v > math.MaxInt64/2 {
		return 0, fmt.Errorf("heap bytes out of range: %v", v)
	}
	return int64(math.Round(v)), nil
}

// GCHookClient forces a garbage collection in the target through an HTTP
// POST that answers with the live heap after it, as JSON
// {"heap_bytes": N} (the demo target's POST /debug/gc). It is safe for
// concurrent use.
type GCHookClient struct {
	URL    string
	client *http.Client
}

// NewGCHookClient returns a client of the hook at url.
func NewGCHookClient(url string) *GCHookClient {
	return &GCHookClient{URL: url, client: newHTTPClient(nil)}
}

// ErrNoHeapBytes is returned when a GC hook's answer lacks "heap_bytes".
var ErrNoHeapBytes = errors.New(`answer has no "heap_bytes"`)

// Collect forces a GC and returns the post-GC heap in bytes.
func (g *GCHookClient) Collect(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, nil)
	if err != nil {
		return 0, fmt.Errorf("gc hook %s: %w", g.URL, err)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("gc hook %s: %w", g.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, fmt.Errorf("gc hook %s: read: %w", g.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return 0, fmt.Errorf("gc hook %s: status %s", g.URL, resp.Status)
	}
	var out struct {
		HeapBytes *float64 `json:"heap_bytes"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return 0, fmt.Errorf("gc hook %s: decode %.100q: %w", g.URL, body, err)
	}
	if out.HeapBytes == nil {
		return 0, fmt.Errorf("gc hook %s: %w", g.URL, ErrNoHeapBytes)
	}
	n, err := toBytes(*out.HeapBytes)
	if err != nil {
		return 0, fmt.Errorf("gc hook %s: %w", g.URL, err)
	}
	return n, nil
}
