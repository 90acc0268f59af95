package interop

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/golden"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/window"
)

// k6Out writes lines in k6's documented JSON output format (one object per
// line: {"type":"Metric",...} declarations and {"type":"Point",...}
// samples), written here by the tests, never copied from k6.
type k6Out struct {
	w  io.Writer
	t0 time.Time
}

var k6T0 = time.Date(2026, 5, 9, 14, 34, 45, 0, time.FixedZone("", 2*3600))

func (k k6Out) metric(name, kind, contains string) {
	fmt.Fprintf(k.w, `{"type":"Metric","data":{"type":%q,"contains":%q,"tainted":null,"thresholds":[],"submetrics":null},"metric":%q}`+"\n", kind, contains, name)
}

// point writes a sample at offset after t0 (k6 writes local times with an offset).
func (k k6Out) point(name string, offset time.Duration, value float64, tags map[string]string) {
	tj := []byte("null")
	if tags != nil {
		tj, _ = json.Marshal(tags)
	}
	fmt.Fprintf(k.w, `{"type":"Point","data":{"time":%q,"value":%v,"tags":%s},"metric":%q}`+"\n",
		k.t0.Add(offset).Format(time.RFC3339Nano), value, tj, name)
}

// request writes one HTTP request's http_reqs, http_req_duration and
// http_req_failed points, tagged as k6 tags them.
func (k k6Out) request(offset time.Duration, ms float64, failed bool, tags map[string]string) {
	k.point("http_reqs", offset, 1, tags)
	k.point("http_req_duration", offset, ms, tags)
	f := 0.0
	if failed {
		f = 1
	}
	k.point("http_req_failed", offset, f, tags)
}

func reqTags(method, url, name, status string, extra ...string) map[string]string {
	t := map[string]string{"method": method, "url": url, "name": name, "status": status, "proto": "HTTP/1.1", "scenario": "default", "group": ""}
	if status == "200" {
		t["expected_response"] = "true"
	} else {
		t["expected_response"] = "false"
	}
	for i := 0; i+1 < len(extra); i += 2 {
		t[extra[i]] = extra[i+1]
	}
	return t
}

const itemURL = "http://127.0.0.1:8080/items/42"

// fixture is three 1 s windows using every mapped metric and a few custom ones.
func fixture() []byte {
	var b bytes.Buffer
	k := k6Out{w: &b, t0: k6T0}
	for _, m := range [][3]string{
		{"vus", "gauge", "default"}, {"vus_max", "gauge", "default"},
		{"http_reqs", "counter", "default"}, {"http_req_duration", "trend", "time"},
		{"http_req_failed", "rate", "default"}, {"dropped_iterations", "counter", "default"},
		{"iterations", "counter", "default"}, {"checks", "rate", "default"},
		{"data_received", "counter", "data"}, {"http_req_waiting", "trend", "time"},
	} {
		k.metric(m[0], m[1], m[2])
	}
	k.point("vus", 0, 4, nil)
	k.point("vus_max", 0, 10, nil)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Window 0: 10 list requests at 5 ms (a name tag), 5 gets at 20 ms
	// whose name is only their URL (k6's default): op "GET /items/{id}".
	for i := range 10 {
		k.request(ms(50+i*50), 5, false, reqTags("GET", "http://127.0.0.1:8080/items?page="+fmt.Sprint(i), "list", "200"))
		k.point("http_req_waiting", ms(50+i*50), 4, nil)
		k.point("iterations", ms(50+i*50), 1, nil)
		k.point("checks", ms(50+i*50), 1, nil)
	}
	for i := range 5 {
		k.request(ms(100+i*100), 20, false, reqTags("GET", itemURL, itemURL, "200"))
		k.point("data_received", ms(100+i*100), 512, nil)
	}
	// Window 1: failures of every kind, dropped iterations, 8 VUs.
	k.point("vus", ms(1000), 8, nil)
	k.request(ms(1100), 30, true, reqTags("POST", "http://127.0.0.1:8080/items", "create", "503"))
	k.request(ms(1150), 30, true, reqTags("POST", "http://127.0.0.1:8080/items", "create", "503"))
	k.request(ms(1200), 10, true, reqTags("GET", itemURL, itemURL, "404"))
	k.request(ms(1300), 3000, true, reqTags("GET", itemURL, itemURL, "0", "error_code", "1050", "error", "request timeout"))
	k.request(ms(1400), 1, true, reqTags("GET", itemURL, itemURL, "0", "error_code", "1212", "error", "dial: connection refused"))
	k.request(ms(1450), 1, true, reqTags("GET", itemURL, itemURL, "0", "error_code", "1220", "error", "read: connection reset by peer"))
	k.request(ms(1500), 2, true, reqTags("GET", "http://127.0.0.1:8080/items?page=1", "list", "200"))
	k.request(ms(1600), 6, false, reqTags("GET", "http://127.0.0.1:8080/items?page=2", "list", "200"))
	k.point("checks", ms(1600), 0, nil)
	k.point("checks", ms(1610), 1, nil)
	k.point("dropped_iterations", ms(1700), 2, nil)
	k.point("dropped_iterations", ms(1800), 1, nil)
	// A point that arrives late, but within the horizon, for window 0.
	k.request(ms(900), 7, false, reqTags("GET", "http://127.0.0.1:8080/items?page=3", "list", "200"))
	// Window 2: three list requests and the last VU count.
	for i := range 3 {
		k.request(ms(2000+i*200), 8, false, reqTags("GET", "http://127.0.0.1:8080/items?page=4", "list", "200"))
	}
	k.point("vus", ms(2500), 2, nil)
	return b.Bytes()
}

func readAll(t *testing.T, data []byte, opts K6Options) ([]window.Window, K6Stats, error) {
	t.Helper()
	var ws []window.Window
	st, err := ReadK6(context.Background(), bytes.NewReader(data), opts, func(w window.Window) error {
		ws = append(ws, w)
		return nil
	})
	return ws, st, err
}

func ndjson(t *testing.T, ws []window.Window) []byte {
	t.Helper()
	var b bytes.Buffer
	j := report.NewJSON(&b)
	for _, w := range ws {
		if err := j.Window(w); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestReadK6Fixture maps every k6 metric it knows onto windows; the golden
// file pins the windows down, the checks below say what they must show.
func TestReadK6Fixture(t *testing.T) {
	ws, st, err := readAll(t, fixture(), K6Options{Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "k6-fixture.ndjson.golden", ndjson(t, ws))
	if len(ws) != 3 || st.Windows != 3 {
		t.Fatalf("%d windows (%d in stats), want 3", len(ws), st.Windows)
	}
	w0, w1, w2 := ws[0], ws[1], ws[2]
	if w0.Requests != 16 || w0.OK != 16 || w0.VUs != 4 || w0.Incarnation != 1 || !w0.Start.Equal(k6T0) {
		t.Errorf("window 0: %d requests, %d ok, %d VUs, incarnation %d, start %v", w0.Requests, w0.OK, w0.VUs, w0.Incarnation, w0.Start)
	}
	if got := w0.Ops["list"].Requests; got != 11 {
		t.Errorf("window 0: list has %d requests, want 11 (10 + the late one)", got)
	}
	if got := w0.Ops["GET /items/{id}"]; got.Requests != 5 || got.LatencyMs.P50 < 19.9 || got.LatencyMs.P50 > 20.1 {
		t.Errorf("window 0: GET /items/{id} = %+v, want 5 requests at 20 ms", got)
	}
	if w0.Custom["iterations"] != 10 || w0.Custom["checks"] != 1 || w0.Custom["data_received"] != 2560 || w0.Custom["http_req_waiting"] != 4 || w0.Custom["vus_max"] != 10 {
		t.Errorf("window 0 custom series = %v", w0.Custom)
	}
	want := window.Errors{Status4xx: 1, Status5xx: 2, Timeout: 1, Refused: 1, Reset: 1, Unexpected: 1}
	if w1.Errors != want || w1.Requests != 8 || w1.OK != 1 || w1.Dropped != 3 || w1.VUs != 8 {
		t.Errorf("window 1: errors %+v (want %+v), %d requests, %d ok, %d dropped, %d VUs", w1.Errors, want, w1.Requests, w1.OK, w1.Dropped, w1.VUs)
	}
	if w1.Custom["checks"] != 0.5 {
		t.Errorf("window 1: checks = %v, want 0.5 (one of two passed)", w1.Custom["checks"])
	}
	if w1.LatencyMs.Max < 2990 {
		t.Errorf("window 1: max latency %v ms, want the 3 s timeout", w1.LatencyMs.Max)
	}
	if w2.Requests != 3 || w2.VUs != 2 || !w2.End.Equal(k6T0.Add(2501*time.Millisecond)) || w2.RPS < 5.9 || w2.RPS > 6.1 {
		t.Errorf("window 2: %d requests, %d VUs, end %v, %.2f req/s; want 3, 2, t0+2.501s, 6 (3 in 0.501 s)", w2.Requests, w2.VUs, w2.End, w2.RPS)
	}
	if st.Requests != 27 || st.BadLines != 0 || st.LatePoints != 0 || len(st.Missing) != 0 {
		t.Errorf("stats %+v", st)
	}
	if got := strings.Join(st.Custom, ","); got != "checks,data_received,http_req_waiting,iterations,vus_max" {
		t.Errorf("custom series %s", got)
	}
}

// TestReadK6Gzip: the same output gzipped gives the same windows.
func TestReadK6Gzip(t *testing.T) {
	plain, _, err := readAll(t, fixture(), K6Options{Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(fixture())
	zw.Close()
	zipped, _, err := readAll(t, z.Bytes(), K6Options{Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ndjson(t, plain), ndjson(t, zipped)) {
		t.Error("gzip input gives other windows than plain input")
	}
	// A gzip file cut short keeps the windows read so far.
	cut := z.Bytes()[:z.Len()*2/3]
	ws, _, err := readAll(t, cut, K6Options{Window: time.Second})
	if !errors.Is(err, ErrTruncated) || len(ws) == 0 {
		t.Errorf("truncated gzip: %d windows, error %v; want some windows and ErrTruncated", len(ws), err)
	}
}

// TestReadK6BadLines: lines that are not k6 output are counted and named
// by line number; the rest is imported.
func TestReadK6BadLines(t *testing.T) {
	data := fixture()
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	insert := map[int]string{
		12: `{"type":"Point","data":{"time":"2026-05-09T14:34:45.3+02:00","value":1,"tags":{}},"metric":"http_reqs"` + "\x00garbage",
		20: `{"type":"Point","data":{"time":"yesterday","value":1},"metric":"http_reqs"}`,
		30: `{"type":"Point","data":{"time":"2026-05-09T14:34:45.3+02:00","tags":{}},"metric":"http_reqs"}`,
		40: `{"type":"Sample","data":{},"metric":"http_reqs"}`,
		41: `not json at all`,
		42: `{"type":"Point","data":{"time":"2026-05-09T14:34:45.3+02:00","value":1}}`,
	}
	var b bytes.Buffer
	for i, l := range lines {
		if s, ok := insert[i]; ok {
			b.WriteString(s + "\n")
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	b.WriteString(strings.Repeat("x", maxLineBytes+10) + "\n")
	ws, st, err := readAll(t, b.Bytes(), K6Options{Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, bl := range st.BadLineNumbers {
		got = append(got, bl.String())
	}
	want := []string{
		"line 13: not JSON: invalid character '\\x00' after object key:value pair",
		`line 22: time "yesterday" is not RFC 3339`,
		"line 33: point without a finite value",
		`line 44: type "Sample" is neither Metric nor Point`,
		"line 46: not JSON: invalid character 'o' in literal null (expecting 'u')",
		"line 48: no metric name",
		fmt.Sprintf("line %d: longer than 1 MiB", len(lines)+7),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || st.BadLines != 7 {
		t.Errorf("bad lines (%d)\n got %q\nwant %q", st.BadLines, got, want)
	}
	if len(ws) != 3 || st.Requests != 27 {
		t.Errorf("%d windows, %d requests; want the fixture's 3 and 27", len(ws), st.Requests)
	}
}

func TestReadK6NothingUsable(t *testing.T) {
	var b bytes.Buffer
	k := k6Out{w: &b, t0: k6T0}
	k.point("vus", 0, 1, nil)
	b.WriteString("garbage\n")
	_, st, err := readAll(t, b.Bytes(), K6Options{})
	if !errors.Is(err, ErrNothingUsable) || !strings.Contains(err.Error(), "1 bad lines (first: line 2: not JSON") {
		t.Errorf("error %v, want ErrNothingUsable naming the bad line", err)
	}
	if st.Points != 1 {
		t.Errorf("points %d, want 1", st.Points)
	}
	if _, _, err := readAll(t, nil, K6Options{}); !errors.Is(err, ErrNothingUsable) {
		t.Errorf("empty input: %v, want ErrNothingUsable", err)
	}
}

// TestReadK6LateAndCaps: a point older than the horizon is counted as late
// and left out; ops beyond MaxOps are counted under "other"; without
// http_req_failed, errors come from the status tags.
func TestReadK6LateAndCaps(t *testing.T) {
	var b bytes.Buffer
	k := k6Out{w: &b, t0: k6T0}
	for i := range 4 {
		tags := reqTags("GET", fmt.Sprintf("http://127.0.0.1/op%d", i), fmt.Sprintf("op%d", i), "200")
		if i == 3 {
			tags["status"] = "500"
		}
		k.point("http_reqs", time.Duration(i)*time.Second, 1, tags)
		k.point("http_req_duration", time.Duration(i)*time.Second, 1, tags)
	}
	k.point("http_reqs", 10*time.Second, 1, reqTags("GET", "http://127.0.0.1/op0", "op0", "200"))
	k.point("http_reqs", 500*time.Millisecond, 1, reqTags("GET", "http://127.0.0.1/op0", "op0", "200"))
	ws, st, err := readAll(t, b.Bytes(), K6Options{Window: time.Second, Horizon: 2 * time.Second, MaxOps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st.LatePoints != 1 || st.Points != 9 {
		t.Errorf("late %d, points %d; want 1 and 9", st.LatePoints, st.Points)
	}
	if len(ws) != 11 {
		t.Fatalf("%d windows, want 11 (0..10 s, empty ones included)", len(ws))
	}
	if _, ok := ws[2].Ops["other"]; !ok {
		t.Errorf("window 2 ops %v: op2 is beyond MaxOps 2 and belongs to other", ws[2].Ops)
	}
	if ws[3].Errors.Status5xx != 1 || ws[3].OK != 0 {
		t.Errorf("window 3: errors %+v, ok %d; want the 500 from its status tag", ws[3].Errors, ws[3].OK)
	}
	if got := strings.Join(st.Missing, ","); got != "http_req_failed,vus,dropped_iterations" {
		t.Errorf("missing %s", got)
	}
}

func TestURLTemplate(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080/items/42?x=1":              "/items/{id}",
		"http://h/users/5f2b9c1e/orders/7":                "/users/{id}/orders/{id}",
		"http://h/u/123e4567-e89b-12d3-a456-426614174000": "/u/{id}",
		"http://h/":         "/",
		"http://h":          "/",
		"http://h/v2/items": "/v2/items",
		"/plain/9":          "/plain/{id}",
		"":                  "",
	} {
		if got := URLTemplate(in); got != want {
			t.Errorf("URLTemplate(%q) = %q, want %q", in, got, want)
		}
	}
}

// k6Stream writes n requests' points (3 points each) over n/perSecond
// seconds to w, as a long k6 run would.
func k6Stream(w io.Writer, points, perSecond int) error {
	bw := &countingWriter{w: w}
	k := k6Out{w: bw, t0: k6T0}
	k.metric("http_reqs", "counter", "default")
	k.metric("http_req_duration", "trend", "time")
	k.metric("http_req_failed", "rate", "default")
	ops := []string{"list", "get", "create", "update"}
	step := time.Second / time.Duration(perSecond)
	for i := 0; i < points/3; i++ {
		at := time.Duration(i) * step
		tags := reqTags("GET", "http://127.0.0.1:8080/items", ops[i%len(ops)], "200")
		k.request(at, float64(1+i%50), i%100 == 0, tags)
		if i%1000 == 0 {
			k.point("vus", at, 16, nil)
		}
		if bw.err != nil {
			return bw.err
		}
	}
	return nil
}

type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// TestReadK6ConstantMemory streams 300,000 points (the big measurement is
// bench/interop) through ReadK6 without a file: the live heap after the
// windows are handed on stays small and does not grow with the input.
func TestReadK6ConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 330,000 points")
	}
	const points = 300_000
	heapAt := func(n int) (peak uint64) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(k6Stream(pw, n, 5000)) }()
		var ms runtime.MemStats
		windows := 0
		_, err := ReadK6(context.Background(), pr, K6Options{Window: time.Second}, func(w window.Window) error {
			windows++
			if windows%5 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return peak
	}
	small, large := heapAt(points/10), heapAt(points)
	t.Logf("live heap: %.1f MB streaming 30k points, %.1f MB streaming 300k points", float64(small)/1e6, float64(large)/1e6)
	if large > 32<<20 {
		t.Errorf("live heap reached %d bytes streaming %d points; want under 32 MiB", large, points)
	}
	if large > small+8<<20 {
		t.Errorf("live heap grew from %d to %d bytes with 10x the points: not constant", small, large)
	}
}

// BenchmarkReadK6 reads k6 output from memory: the cost per point.
func BenchmarkReadK6(b *testing.B) {
	var buf bytes.Buffer
	if err := k6Stream(&buf, 30_000, 5000); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadK6(context.Background(), bytes.NewReader(data), K6Options{Window: time.Second}, func(window.Window) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/30_000, "ns/point")
}
