package interop

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/longhaul-dev/longhaul/window"
)

// K6Options tune ReadK6. The zero value is ready to use.
type K6Options struct {
	// Window is the length of the windows the points are cut into
	// (DefaultK6Window when 0).
	Window time.Duration
	// Horizon is how far behind the newest point a window stays open for
	// points that arrive out of order (k6 writes each VU's samples in
	// batches); DefaultK6Horizon when 0. Points older than that are
	// counted in K6Stats.LatePoints and left out.
	Horizon time.Duration
	// MaxOps bounds the distinct ops (DefaultK6MaxOps when 0); requests of
	// any further op are counted under the op "other".
	MaxOps int
	// MaxCustom bounds the distinct custom series (DefaultK6MaxCustom when 0).
	MaxCustom int
}

// Defaults of K6Options.
const (
	DefaultK6Window    = 10 * time.Second
	DefaultK6Horizon   = 5 * time.Second
	DefaultK6MaxOps    = 100
	DefaultK6MaxCustom = 50
	// maxLineBytes: a longer line is a bad line (k6's lines are < 1 KiB).
	maxLineBytes = 1 << 20
	// keptBadLines is how many bad line numbers K6Stats keeps.
	keptBadLines = 20
	otherOp      = "other"
)

// K6Stats says what ReadK6 read.
type K6Stats struct {
	Lines int64
	// Points counts the Point lines used; LatePoints those that arrived
	// after their window had closed (beyond Horizon), left out.
	Points, LatePoints int64
	// BadLines counts lines that are not k6 JSON output; BadLineNumbers
	// lists the first of them (1-based) with what was wrong.
	BadLines       int64
	BadLineNumbers []BadLine
	Windows        int
	Start, End     time.Time
	// Requests is the sum of http_reqs; Metrics lists every metric name
	// seen, sorted; Custom the ones kept as custom series.
	Requests int64
	Metrics  []string
	Custom   []string
	// Missing names the mapped metrics the file did not have (for example
	// http_req_failed in output of a k6 older than 0.31: errors then come
	// from the status tags).
	Missing []string
}

// BadLine is one line ReadK6 could not use.
type BadLine struct {
	Line int64  `json:"line"`
	Why  string `json:"why"`
}

func (b BadLine) String() string { return fmt.Sprintf("line %d: %s", b.Line, b.Why) }

// ErrNothingUsable is returned (wrapped) when a file has no http_reqs or
// http_req_duration point at all.
var ErrNothingUsable = errors.New("no usable k6 points")

// ErrTruncated is returned (wrapped) when the input cannot be read to its
// end; the windows read until then were handed to the sink.
var ErrTruncated = errors.New("k6 output ended early")

// mapped are the k6 metrics that become window fields.
var mapped = []string{"http_reqs", "http_req_duration", "http_req_failed", "vus", "dropped_iterations"}

// ReadK6 reads k6's JSON output (`k6 run --out json=FILE`: one JSON object
// per line, {"type":"Metric",...} declarations and {"type":"Point",...}
// samples), plain or gzip, and hands sink one window per Window of the
// points' timestamps, in order, from index 0 of incarnation 1:
//
//   - requests from http_reqs, latency (the HDR histogram) from
//     http_req_duration in ms, errors from http_req_failed classified by
//     the point's status and error_code tags (or, without http_req_failed,
//     from the status tags of http_reqs);
//   - ops from the name tag, or method and a URL template (numeric and
//     id-like path segments become {id}) when name is only the URL;
//   - VUs from vus (the last reading in the window), dropped starts from
//     dropped_iterations;
//   - every other metric as a custom series (Window.Custom): a counter's
//     sum, a gauge's last value, a rate's fraction, a trend's mean.
//
// It streams: memory stays constant whatever the file's size (a bounded
// number of open windows, ops and series). Lines that are not k6 output
// are counted, never fatal, unless nothing usable was found
// (ErrNothingUsable). A sink error stops it and is returned.
func ReadK6(ctx context.Context, r io.Reader, opts K6Options, sink func(window.Window) error) (K6Stats, error) {
	k := newK6Reader(opts, sink)
	in, err := maybeGunzip(r)
	if err != nil {
		return k.stats, err
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var long []byte
	for {
		if k.stats.Lines%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return k.stats, err
			}
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it (bounded), then judge it.
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				if len(long) < maxLineBytes {
					long = append(long, line...)
				}
			}
			line = long
		}
		if len(line) > 0 {
			k.stats.Lines++
			if len(line) >= maxLineBytes {
				k.bad("longer than 1 MiB")
			} else if err := k.line(bytes.TrimSpace(line)); err != nil {
				return k.stats, err
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// A truncated file (a copy cut short, a gzip without its
			// trailer): keep what was read.
			if ferr := k.finish(); ferr != nil {
				return k.stats, ferr
			}
			return k.stats, fmt.Errorf("%w at line %d: %v", ErrTruncated, k.stats.Lines+1, err)
		}
	}
	if err := k.finish(); err != nil {
		return k.stats, err
	}
	if k.stats.Points == 0 || (!k.seen["http_reqs"] && !k.seen["http_req_duration"]) {
		what := "no http_reqs or http_req_duration points"
		if k.stats.BadLines > 0 {
			what += fmt.Sprintf("; %d bad lines (first: %s)", k.stats.BadLines, k.stats.BadLineNumbers[0])
		}
		return k.stats, fmt.Errorf("%w: %s", ErrNothingUsable, what)
	}
	return k.stats, nil
}

// maybeGunzip returns r, or a gzip reader on it when it starts with gzip's magic bytes.
func maybeGunzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read gzip: %w", err)
		}
		return zr, nil
	}
	return br, nil
}

// k6Line is one line of k6's JSON output.
type k6Line struct {
	Type   string `json:"type"`
	Metric string `json:"metric"`
	Data   struct {
		// Metric lines: the metric's type (counter, gauge, rate, trend).
		Type string `json:"type"`
		// Point lines.
		Time  string   `json:"time"`
		Value *float64 `json:"value"`
		Tags  k6Tags   `json:"tags"`
	} `json:"data"`
}

// k6Tags are the tags ReadK6 reads; the others are skipped (decoding into
// a struct, not a map, is most of what keeps a point cheap).
type k6Tags struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Method    string `json:"method"`
	Status    string `json:"status"`
	ErrorCode string `json:"error_code"`
	Error     string `json:"error"`
}

type k6Reader struct {
	opts   K6Options
	sink   func(window.Window) error
	stats  K6Stats
	seen   map[string]bool
	kinds  map[string]string // metric name → k6 type
	start  time.Time         // window 0 starts here (the first point)
	newest time.Time
	// open windows by index, from next (the first not yet emitted) on.
	open map[int]*k6Window
	next int
	// ops and custom series seen (bounded), for the caps.
	ops, custom map[string]bool
	opNames     map[opKey]string
	pool        []*hdrhistogram.Histogram
	failedSeen  bool
}

func newK6Reader(opts K6Options, sink func(window.Window) error) *k6Reader {
	if opts.Window <= 0 {
		opts.Window = DefaultK6Window
	}
	if opts.Horizon <= 0 {
		opts.Horizon = DefaultK6Horizon
	}
	if opts.MaxOps <= 0 {
		opts.MaxOps = DefaultK6MaxOps
	}
	if opts.MaxCustom <= 0 {
		opts.MaxCustom = DefaultK6MaxCustom
	}
	return &k6Reader{
		opts: opts, sink: sink, seen: map[string]bool{}, kinds: map[string]string{},
		open: map[int]*k6Window{}, ops: map[string]bool{}, custom: map[string]bool{}, opNames: map[opKey]string{},
	}
}

func (k *k6Reader) bad(why string) {
	k.stats.BadLines++
	if len(k.stats.BadLineNumbers) < keptBadLines {
		k.stats.BadLineNumbers = append(k.stats.BadLineNumbers, BadLine{Line: k.stats.Lines, Why: why})
	}
}

// line takes one line; only a sink error is returned.
func (k *k6Reader) line(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var l k6Line
	if err := json.Unmarshal(b, &l); err != nil {
		k.bad("not JSON: " + shorten(err.Error()))
		return nil
	}
	if l.Metric == "" {
		k.bad("no metric name")
		return nil
	}
	switch l.Type {
	case "Metric":
		if len(k.kinds) < 10_000 {
			k.kinds[l.Metric] = l.Data.Type
		}
		k.note(l.Metric)
		return nil
	case "Point":
	default:
		k.bad(fmt.Sprintf("type %q is neither Metric nor Point", l.Type))
		return nil
	}
	if l.Data.Value == nil || math.IsNaN(*l.Data.Value) || math.IsInf(*l.Data.Value, 0) {
		k.bad("point without a finite value")
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, l.Data.Time)
	if err != nil {
		k.bad(fmt.Sprintf("time %q is not RFC 3339", shorten(l.Data.Time)))
		return nil
	}
	k.note(l.Metric)
	return k.point(l.Metric, t, *l.Data.Value, &l.Data.Tags)
}

// note records a metric name (bounded: a hostile file cannot grow the set).
func (k *k6Reader) note(metric string) {
	if !k.seen[metric] && len(k.seen) < 10_000 {
		k.seen[metric] = true
	}
}

func (k *k6Reader) point(metric string, t time.Time, v float64, tags *k6Tags) error {
	if k.start.IsZero() {
		k.start = t
		k.stats.Start = t
	}
	if t.After(k.newest) {
		k.newest = t
	}
	if t.After(k.stats.End) {
		k.stats.End = t
	}
	idx := int(t.Sub(k.start) / k.opts.Window)
	if t.Before(k.start) || idx < k.next {
		k.stats.LatePoints++
		return k.closeUpTo()
	}
	k.stats.Points++
	w := k.window(idx)
	switch metric {
	case "http_reqs":
		n := int64(math.Round(v))
		k.stats.Requests += n
		op := w.op(k.opName(tags), k)
		w.requests += n
		op.requests += n
		if class := statusClass(tags); class != window.OK {
			w.statusErrs.Add(class, n)
			op.statusErrs.Add(class, n)
		}
	case "http_req_duration":
		us := int64(math.Round(v * 1000))
		window.Record(w.hist, us)
		window.Record(w.op(k.opName(tags), k).hist, us)
	case "http_req_failed":
		k.failedSeen = true
		w.failedSeen = true
		if v != 0 {
			class := failureClass(tags)
			w.failed.Add(class, 1)
			w.op(k.opName(tags), k).failed.Add(class, 1)
		}
	case "vus":
		w.vus = int(math.Round(v))
		w.vusSeen = true
	case "dropped_iterations":
		w.dropped += int64(math.Round(v))
	default:
		k.customPoint(w, metric, v)
	}
	return k.closeUpTo()
}

func (k *k6Reader) customPoint(w *k6Window, metric string, v float64) {
	if !k.custom[metric] {
		if len(k.custom) >= k.opts.MaxCustom {
			return
		}
		k.custom[metric] = true
	}
	s := w.series[metric]
	if s == nil {
		if w.series == nil {
			w.series = map[string]*series{}
		}
		s = &series{}
		w.series[metric] = s
	}
	s.sum += v
	s.last = v
	s.n++
	if v != 0 {
		s.nonzero++
	}
}

// window returns the open window idx, opening it (and any before it).
func (k *k6Reader) window(idx int) *k6Window {
	if w := k.open[idx]; w != nil {
		return w
	}
	w := &k6Window{index: idx, hist: k.histogram()}
	k.open[idx] = w
	return w
}

func (k *k6Reader) histogram() *hdrhistogram.Histogram {
	if n := len(k.pool); n > 0 {
		h := k.pool[n-1]
		k.pool = k.pool[:n-1]
		h.Reset()
		return h
	}
	return window.NewHistogram()
}

// closeUpTo emits every window that ended more than Horizon before the
// newest point.
func (k *k6Reader) closeUpTo() error {
	for {
		end := k.start.Add(time.Duration(k.next+1) * k.opts.Window)
		if k.newest.Sub(end) <= k.opts.Horizon {
			return nil
		}
		if err := k.emit(k.next, end); err != nil {
			return err
		}
	}
}

// finish emits the windows still open; the last one ends at the last point.
func (k *k6Reader) finish() error {
	if k.start.IsZero() {
		return nil
	}
	last := int(k.newest.Sub(k.start) / k.opts.Window)
	for k.next <= last {
		end := k.start.Add(time.Duration(k.next+1) * k.opts.Window)
		if k.next == last {
			// The last window ends with the last point (1 ms on, so a
			// window of one instant still has a length).
			end = k.newest.Add(time.Millisecond)
		}
		if err := k.emit(k.next, end); err != nil {
			return err
		}
	}
	k.finishStats()
	return nil
}

func (k *k6Reader) finishStats() {
	for m := range k.seen {
		k.stats.Metrics = append(k.stats.Metrics, m)
	}
	sort.Strings(k.stats.Metrics)
	for m := range k.custom {
		k.stats.Custom = append(k.stats.Custom, m)
	}
	sort.Strings(k.stats.Custom)
	for _, m := range mapped {
		if !k.seen[m] {
			k.stats.Missing = append(k.stats.Missing, m)
		}
	}
}

// emit turns open window idx (or an empty one) into a window.Window for the sink.
func (k *k6Reader) emit(idx int, end time.Time) error {
	w := k.open[idx]
	delete(k.open, idx)
	k.next = idx + 1
	if w == nil {
		w = &k6Window{index: idx, hist: k.histogram()}
	}
	out, err := w.build(k, k.start.Add(time.Duration(idx)*k.opts.Window), end)
	k.release(w)
	if err != nil {
		return err
	}
	k.stats.Windows++
	if err := k.sink(out); err != nil {
		return fmt.Errorf("window %d: %w", idx, err)
	}
	return nil
}

func (k *k6Reader) release(w *k6Window) {
	k.pool = append(k.pool, w.hist)
	for _, o := range w.ops {
		k.pool = append(k.pool, o.hist)
	}
}

// k6Window accumulates one window's points.
type k6Window struct {
	index      int
	requests   int64
	dropped    int64
	vus        int
	vusSeen    bool
	hist       *hdrhistogram.Histogram
	statusErrs window.Errors // from http_reqs status tags
	failed     window.Errors // from http_req_failed
	failedSeen bool
	ops        map[string]*k6Op
	series     map[string]*series
}

type k6Op struct {
	requests   int64
	hist       *hdrhistogram.Histogram
	statusErrs window.Errors
	failed     window.Errors
}

type series struct {
	sum, last  float64
	n, nonzero int64
}

func (w *k6Window) op(name string, k *k6Reader) *k6Op {
	if !k.ops[name] {
		if len(k.ops) >= k.opts.MaxOps {
			name = otherOp
		}
		k.ops[name] = true
	}
	o := w.ops[name]
	if o == nil {
		if w.ops == nil {
			w.ops = map[string]*k6Op{}
		}
		o = &k6Op{hist: k.histogram()}
		w.ops[name] = o
	}
	return o
}

func (w *k6Window) build(k *k6Reader, start, end time.Time) (window.Window, error) {
	out := window.Window{Incarnation: 1, Index: w.index, Start: start, End: end, Requests: w.requests, Dropped: w.dropped}
	secs := end.Sub(start).Seconds()
	// http_req_failed is k6's own verdict (it honours the script's
	// expected statuses); a window without it falls back to the status tags.
	useFailed := w.failedSeen || k.failedSeen
	errs := w.statusErrs
	if useFailed {
		errs = w.failed
	}
	out.Errors = errs
	out.OK = max(out.Requests-errs.Total(), 0)
	if secs > 0 {
		out.RPS = float64(out.Requests) / secs
	}
	if w.vusSeen {
		out.VUs = w.vus
	}
	var err error
	if out.Histogram, err = window.EncodeHistogram(w.hist); err != nil {
		return out, err
	}
	out.LatencyMs = window.LatencyOf(w.hist)
	if len(w.ops) > 0 {
		out.Ops = make(map[string]window.OpStats, len(w.ops))
	}
	for name, o := range w.ops {
		oe := o.statusErrs
		if useFailed {
			oe = o.failed
		}
		st := window.OpStats{Requests: o.requests, Errors: oe, OK: max(o.requests-oe.Total(), 0), LatencyMs: window.LatencyOf(o.hist)}
		if secs > 0 {
			st.RPS = float64(o.requests) / secs
		}
		if st.Histogram, err = window.EncodeHistogram(o.hist); err != nil {
			return out, err
		}
		out.Ops[name] = st
	}
	if len(w.series) > 0 {
		out.Custom = make(map[string]float64, len(w.series))
		for name, s := range w.series {
			out.Custom[name] = s.value(k.kinds[name])
		}
	}
	return out, nil
}

// value is the window's reading of a custom series by the k6 metric type.
func (s *series) value(kind string) float64 {
	switch kind {
	case "counter":
		return s.sum
	case "gauge":
		return s.last
	case "rate":
		return float64(s.nonzero) / float64(s.n)
	}
	return s.sum / float64(s.n) // trend (or undeclared): the mean
}

// statusClass classifies a request by its status tag (http_reqs without
// http_req_failed): OK for 1xx-3xx, 4xx, 5xx, and the network failures
// (status 0) by error_code.
func statusClass(tags *k6Tags) window.Class {
	status, _ := strconv.Atoi(tags.Status)
	switch {
	case status >= 500:
		return window.Status5xx
	case status >= 400:
		return window.Status4xx
	case status > 0:
		return window.OK
	}
	if tags.Status == "" && tags.ErrorCode == "" {
		return window.OK // no status tag at all: nothing says it failed
	}
	return networkClass(tags)
}

// failureClass classifies a request http_req_failed counted as failed.
func failureClass(tags *k6Tags) window.Class {
	switch c := statusClass(tags); c {
	case window.OK:
		// A response k6 was told not to expect (a 2xx/3xx outside the
		// script's expected statuses), or no status tag at all.
		if tags.Status == "" {
			return networkClass(tags)
		}
		return window.Unexpected
	default:
		return c
	}
}

// networkClass classifies a failure without a response by k6's error_code
// tag (1050 request timeout, 1211 dial timeout, 1212 connection refused,
// 1201 broken pipe and 1220 reset by peer), else by its error tag's text.
func networkClass(tags *k6Tags) window.Class {
	switch tags.ErrorCode {
	case "1050", "1211":
		return window.Timeout
	case "1212":
		return window.Refused
	case "1201", "1220":
		return window.Reset
	}
	msg := strings.ToLower(tags.Error)
	switch {
	case strings.Contains(msg, "timeout"), strings.Contains(msg, "deadline exceeded"):
		return window.Timeout
	case strings.Contains(msg, "refused"):
		return window.Refused
	case strings.Contains(msg, "reset"), strings.Contains(msg, "broken pipe"), strings.Contains(msg, "eof"):
		return window.Reset
	}
	return window.Other
}

// opName is the op of a request: its name tag, unless that is only the
// URL (k6's default), then its method and URL template.
func (k *k6Reader) opName(tags *k6Tags) string {
	key := opKey{tags.Name, tags.URL, tags.Method}
	if op, ok := k.opNames[key]; ok {
		return op
	}
	op := opNameOf(tags)
	if len(k.opNames) >= 4096 {
		clear(k.opNames) // many distinct URLs: a bounded cache
	}
	k.opNames[key] = op
	return op
}

// opKey is what an op name depends on.
type opKey struct{ name, url, method string }

func opNameOf(tags *k6Tags) string {
	name, u := tags.Name, tags.URL
	if name != "" && name != u {
		return name
	}
	if u == "" {
		u = name
	}
	method := tags.Method
	tmpl := URLTemplate(u)
	switch {
	case method == "" && tmpl == "":
		return "requests"
	case method == "":
		return tmpl
	case tmpl == "":
		return method
	}
	return method + " " + tmpl
}

var idSegment = regexp.MustCompile(`^(?:[0-9]+|[0-9a-fA-F]{8,}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)

// URLTemplate is the path of a URL with numeric and id-like segments (hex
// of 8 or more characters, UUIDs) replaced by {id}, and no query:
// "http://127.0.0.1:8080/items/42?x=1" → "/items/{id}".
func URLTemplate(raw string) string {
	if raw == "" {
		return ""
	}
	path := raw
	if u, err := url.Parse(raw); err == nil {
		path = u.Path
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if idSegment.MatchString(s) {
			segs[i] = "{id}"
		}
	}
	if p := strings.Join(segs, "/"); p != "" {
		return p
	}
	return "/"
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
