// Package profilestest builds small pprof profiles for tests: a CPU profile
// or a heap profile from stacks of function names, as the Go runtime would
// write them (gzipped profile.proto).
package profilestest

import (
	"bytes"
	"time"

	"github.com/google/pprof/profile"
)

// Stack is one sample: its frames from the leaf up, and its value
// (nanoseconds of CPU, or bytes retained).
type Stack struct {
	Frames []string
	Value  int64
}

// CPU builds a CPU profile (samples/count, cpu/nanoseconds).
func CPU(stacks ...Stack) []byte {
	return build([]*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}, stacks)
}

var heapTypes = []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
	{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}}

// Heap builds a heap profile whose inuse_space is the stacks' values.
func Heap(stacks ...Stack) []byte { return buildAt(heapTypes, 3, stacks) }

// Allocs builds a heap profile whose alloc_space (the bytes allocated
// since the process started) is the stacks' values.
func Allocs(stacks ...Stack) []byte { return buildAt(heapTypes, 1, stacks) }

func build(types []*profile.ValueType, stacks []Stack) []byte {
	return buildAt(types, len(types)-1, stacks)
}

// buildAt builds a profile whose sample value at index vi is the stacks'.
func buildAt(types []*profile.ValueType, vi int, stacks []Stack) []byte {
	p := &profile.Profile{SampleType: types, PeriodType: types[len(types)-1], Period: 1, TimeNanos: time.Now().UnixNano()}
	locs := map[string]*profile.Location{}
	for _, s := range stacks {
		var stack []*profile.Location
		for _, name := range s.Frames {
			loc := locs[name]
			if loc == nil {
				fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
				p.Function = append(p.Function, fn)
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
				p.Location = append(p.Location, loc)
				locs[name] = loc
			}
			stack = append(stack, loc)
		}
		v := make([]int64, len(types))
		v[vi] = s.Value
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: v})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		panic("profilestest: " + err.Error()) // only a bug in build can fail here
	}
	return b.Bytes()
}
