package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

// NodeSamplingIntervalMicros is the V8 CPU profiler's sampling interval
// that a Node.js target's CPU profiles are taken at (Profiler.
// setSamplingInterval): 1 ms, V8's own default.
const NodeSamplingIntervalMicros = 1000

// NodeHeapSamplingBytes is the sampling heap profiler's mean interval
// between sampled allocations (HeapProfiler.startSampling): 32 KiB, V8's
// default. V8 scales each sample up to an estimate of the bytes it stands
// for, so the profile's sizes are estimates of the bytes retained.
const NodeHeapSamplingBytes = 32 << 10

// maxInspectorProfileBytes bounds one inspector message carrying a profile.
const maxInspectorProfileBytes = 64 << 20

// inspectorProfiles takes a Node.js target's profiles through its inspector
// and converts them to pprof format, so that they are merged, diffed and
// drawn as a Go target's are:
//
//   - CPU: Profiler.start, then Profiler.stop after the profile's length.
//     V8 samples the JavaScript thread every NodeSamplingIntervalMicros;
//     each sample is charged the time to the next one. Samples of the idle
//     loop ("(idle)") are dropped: what remains is the main thread's busy
//     time, which the profile reads as CPU.
//   - Heap: the sampling heap profiler, started with the first heap
//     profile (and again after a reconnect, which stops it), read after a
//     forced GC (HeapProfiler.collectGarbage, then getSamplingProfile): the
//     sampled allocations still alive, by the stack that allocated them, as
//     inuse_space. Allocations made before sampling started are not in it,
//     so a heap profile shows what was retained since the first one.
type inspectorProfiles struct {
	c *InspectorClient

	mu       sync.Mutex
	sampling *cdpSession // the session the heap sampling runs in
}

func (s *inspectorProfiles) cpu(ctx context.Context, d time.Duration) ([]byte, error) {
	params, _ := json.Marshal(map[string]int{"interval": NodeSamplingIntervalMicros})
	for _, m := range []struct {
		method string
		params json.RawMessage
	}{{"Profiler.enable", nil}, {"Profiler.setSamplingInterval", params}, {"Profiler.start", nil}} {
		if _, _, err := s.c.callOn(ctx, m.method, m.params); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		// Stop the profiler anyway, or the next profile finds it running.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _, _ = s.c.callOn(stopCtx, "Profiler.stop", nil)
		return nil, ctx.Err()
	}
	res, _, err := s.c.callOn(ctx, "Profiler.stop", nil)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Profile v8CPUProfile `json:"profile"`
	}
	if err := json.Unmarshal(res, &ans); err != nil {
		return nil, fmt.Errorf("Profiler.stop: %w", err)
	}
	return v8CPUToPprof(ans.Profile, start)
}

func (s *inspectorProfiles) heap(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.c.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("inspector %s: %w", s.c.Addr, err)
	}
	if s.sampling != sess {
		params, _ := json.Marshal(map[string]int{"samplingInterval": NodeHeapSamplingBytes})
		if _, sess, err = s.c.callOn(ctx, "HeapProfiler.startSampling", params); err != nil {
			return nil, err
		}
		s.sampling = sess
	}
	if _, _, err := s.c.callOn(ctx, "HeapProfiler.collectGarbage", nil); err != nil {
		return nil, err
	}
	res, sess, err := s.c.callOn(ctx, "HeapProfiler.getSamplingProfile", nil)
	if err != nil {
		return nil, err
	}
	if sess != s.sampling {
		// The connection dropped in between: this session samples nothing.
		s.sampling = nil
		return nil, fmt.Errorf("inspector %s: the connection dropped; heap sampling restarts with the next profile", s.c.Addr)
	}
	var ans struct {
		Profile v8HeapProfile `json:"profile"`
	}
	if err := json.Unmarshal(res, &ans); err != nil {
		return nil, fmt.Errorf("HeapProfiler.getSamplingProfile: %w", err)
	}
	return v8HeapToPprof(ans.Profile, time.Now())
}

func (s *inspectorProfiles) close() { s.c.Close() }

// v8CallFrame is a Chrome DevTools Protocol Runtime.CallFrame.
type v8CallFrame struct {
	FunctionName string `json:"functionName"`
	URL          string `json:"url"`
	LineNumber   int    `json:"lineNumber"` // 0-based
}

// v8CPUProfile is a Profiler.Profile.
type v8CPUProfile struct {
	Nodes []struct {
		ID        int         `json:"id"`
		CallFrame v8CallFrame `json:"callFrame"`
		Children  []int       `json:"children"`
	} `json:"nodes"`
	StartTime  float64 `json:"startTime"` // µs
	EndTime    float64 `json:"endTime"`
	Samples    []int   `json:"samples"`
	TimeDeltas []int64 `json:"timeDeltas"` // µs
}

// v8HeapNode is a HeapProfiler.SamplingHeapProfileNode.
type v8HeapNode struct {
	CallFrame v8CallFrame  `json:"callFrame"`
	SelfSize  float64      `json:"selfSize"`
	ID        int          `json:"id"`
	Children  []v8HeapNode `json:"children"`
}

// v8HeapProfile is a HeapProfiler.SamplingHeapProfile.
type v8HeapProfile struct {
	Head    v8HeapNode `json:"head"`
	Samples []struct {
		NodeID int `json:"nodeId"`
	} `json:"samples"`
}

// pprofBuilder turns V8 call frames into pprof functions and locations.
type pprofBuilder struct {
	p     *profile.Profile
	funcs map[[2]string]*profile.Function
	locs  map[string]*profile.Location
}

func newPprofBuilder(types []*profile.ValueType, period int64, at time.Time) *pprofBuilder {
	return &pprofBuilder{
		p:     &profile.Profile{SampleType: types, PeriodType: types[len(types)-1], Period: period, TimeNanos: at.UnixNano()},
		funcs: map[[2]string]*profile.Function{},
		locs:  map[string]*profile.Location{},
	}
}

// v8FunctionName names a frame as the profiles' tables will: its function
// name; an anonymous function by its file and line ("(anonymous
// server.js:31)"), since a bare "(anonymous)" would lump every callback
// together; V8's own entries ("(program)", "(garbage collector)") as they
// are.
func v8FunctionName(f v8CallFrame) string {
	if f.FunctionName != "" {
		return f.FunctionName
	}
	if f.URL == "" {
		return "(anonymous)"
	}
	return "(anonymous " + path.Base(f.URL) + ":" + strconv.Itoa(f.LineNumber+1) + ")"
}

func (b *pprofBuilder) location(f v8CallFrame) *profile.Location {
	name := v8FunctionName(f)
	key := name + "\x00" + f.URL + "\x00" + strconv.Itoa(f.LineNumber)
	if l := b.locs[key]; l != nil {
		return l
	}
	fk := [2]string{name, f.URL}
	fn := b.funcs[fk]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: f.URL}
		b.p.Function = append(b.p.Function, fn)
		b.funcs[fk] = fn
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn, Line: int64(f.LineNumber + 1)}}}
	b.p.Location = append(b.p.Location, l)
	b.locs[key] = l
	return l
}

func (b *pprofBuilder) bytes() ([]byte, error) {
	if err := b.p.CheckValid(); err != nil {
		return nil, fmt.Errorf("convert the inspector's profile: %w", err)
	}
	var out bytes.Buffer
	if err := b.p.Write(&out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// isV8Root reports whether a frame is the profile's root, which pprof
// stacks leave out.
func isV8Root(f v8CallFrame) bool { return f.FunctionName == "(root)" && f.URL == "" }

// v8CPUToPprof converts a V8 CPU profile into a pprof CPU profile
// (samples/count, cpu/nanoseconds), each sample charged the time to the
// next one (the last, the time to the profile's end), idle samples left
// out.
func v8CPUToPprof(v v8CPUProfile, start time.Time) ([]byte, error) {
	b := newPprofBuilder([]*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		NodeSamplingIntervalMicros*1000, start)
	b.p.DurationNanos = int64((v.EndTime - v.StartTime) * 1000)
	parent := map[int]int{}
	frame := map[int]v8CallFrame{}
	for _, n := range v.Nodes {
		frame[n.ID] = n.CallFrame
		for _, c := range n.Children {
			parent[c] = n.ID
		}
	}
	stacks := map[int][]*profile.Location{}
	stackOf := func(id int) []*profile.Location {
		if s, ok := stacks[id]; ok {
			return s
		}
		var s []*profile.Location
		for n, ok := id, true; ok; n, ok = parent[n] {
			if f := frame[n]; !isV8Root(f) {
				s = append(s, b.location(f))
			}
		}
		stacks[id] = s
		return s
	}
	samples := map[int]*profile.Sample{} // by node: one sample per stack
	t := v.StartTime
	times := make([]float64, len(v.Samples))
	for i := range v.Samples {
		if i < len(v.TimeDeltas) {
			t += float64(v.TimeDeltas[i])
		}
		times[i] = t
	}
	for i, id := range v.Samples {
		f, ok := frame[id]
		if !ok || f.FunctionName == "(idle)" {
			continue
		}
		end := v.EndTime
		if i+1 < len(times) {
			end = times[i+1]
		}
		us := end - times[i]
		if us < 0 {
			us = 0
		}
		s := samples[id]
		if s == nil {
			stack := stackOf(id)
			if len(stack) == 0 {
				continue
			}
			s = &profile.Sample{Location: stack, Value: []int64{0, 0}}
			samples[id] = s
			b.p.Sample = append(b.p.Sample, s)
		}
		s.Value[0]++
		s.Value[1] += int64(us * 1000)
	}
	return b.bytes()
}

// v8HeapToPprof converts a V8 sampling heap profile into a pprof heap
// profile (inuse_objects/count, inuse_space/bytes): each node's self size
// (V8's estimate of the bytes its sampled allocations stand for) under the
// stack that allocated them, from the innermost frame with a script.
func v8HeapToPprof(v v8HeapProfile, at time.Time) ([]byte, error) {
	b := newPprofBuilder([]*profile.ValueType{{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		NodeHeapSamplingBytes, at)
	counts := map[int]int64{}
	for _, s := range v.Samples {
		counts[s.NodeID]++
	}
	// site is the node's allocation site: the node itself, or, for a V8
	// builtin without a script (String.prototype.padEnd, charCodeAt
	// flattening a string), the JavaScript function that called it — as a
	// Go heap profile names the function that called make, not the
	// runtime's allocator.
	var walk func(n *v8HeapNode, up []*profile.Location, site int)
	walk = func(n *v8HeapNode, up []*profile.Location, site int) {
		stack := up
		if !isV8Root(n.CallFrame) {
			stack = append([]*profile.Location{b.location(n.CallFrame)}, up...)
			if n.CallFrame.URL != "" || len(up) == 0 {
				site = len(stack)
			}
		}
		if n.SelfSize > 0 && len(stack) > 0 {
			s := stack[len(stack)-max(site, 1):]
			b.p.Sample = append(b.p.Sample, &profile.Sample{Location: s, Value: []int64{counts[n.ID], int64(n.SelfSize)}})
		}
		for i := range n.Children {
			walk(&n.Children[i], stack, site)
		}
	}
	walk(&v.Head, nil, 0)
	return b.bytes()
}
