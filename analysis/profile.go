package analysis

import (
	"fmt"
	"math"
	"strings"
)

// FunctionCost is one function's CPU per request in two sets of profiles
// (the A and B sides of a comparison, or a run's early and late windows):
// its own (flat) CPU time in µs per request, and its share of the target's
// profiled CPU. Package profiles computes them from stored profiles.
type FunctionCost struct {
	Function      string  `json:"function"`
	AUsPerRequest float64 `json:"a_us_per_request"`
	BUsPerRequest float64 `json:"b_us_per_request"`
	// DeltaUsPerRequest is B − A.
	DeltaUsPerRequest float64 `json:"delta_us_per_request"`
	// AShare and BShare are the function's share of each side's profiled
	// CPU (0.61 is 61 %).
	AShare float64 `json:"a_share"`
	BShare float64 `json:"b_share"`
}

// Sentence says what moved, with subject naming side B:
// "B spends +58 µs/request more in main.spin (0 → 61 % of the target's CPU)".
func (f FunctionCost) Sentence(subject string) string {
	return subject + " spends " + f.Moved()
}

// Moved is the sentence without its subject: "+58 µs/request more in
// main.spin (0 → 61 % of the target's CPU)".
func (f FunctionCost) Moved() string {
	amount, more := signedMicros(f.DeltaUsPerRequest), "more"
	if f.DeltaUsPerRequest < 0 {
		amount, more = strings.TrimPrefix(amount, "−"), "less"
	}
	return fmt.Sprintf("%s µs/request %s in %s (%s → %s %% of the target's CPU)",
		amount, more, f.Function, percent(f.AShare), percent(f.BShare))
}

// AllocationCost is one function's bytes allocated per request on the A
// and B sides of a comparison (alloc_space of their heap profiles), and its
// share of each side's sampled allocations. Package profiles computes them.
type AllocationCost struct {
	Function         string  `json:"function"`
	ABytesPerRequest float64 `json:"a_bytes_per_request"`
	BBytesPerRequest float64 `json:"b_bytes_per_request"`
	// DeltaBytesPerRequest is B − A.
	DeltaBytesPerRequest float64 `json:"delta_bytes_per_request"`
	AShare               float64 `json:"a_share"`
	BShare               float64 `json:"b_share"`
}

// Sentence says what moved, with subject naming side B: "B allocates
// +4.0 KiB/request more at main.allocGarbage (0 → 61 % of the target's
// allocations)".
func (c AllocationCost) Sentence(subject string) string {
	amount, more := "+"+fmtBytes(c.DeltaBytesPerRequest), "more"
	if c.DeltaBytesPerRequest < 0 {
		amount, more = fmtBytes(-c.DeltaBytesPerRequest), "less"
	}
	return fmt.Sprintf("%s allocates %s/request %s at %s (%s → %s %% of the target's allocations)",
		subject, amount, more, c.Function, percent(c.AShare), percent(c.BShare))
}

// AllocationSite is a place whose retained heap grew between two heap
// profiles (inuse_space), the start and the end of a leak's range.
type AllocationSite struct {
	Function    string `json:"function"`
	BeforeBytes int64  `json:"before_bytes"`
	AfterBytes  int64  `json:"after_bytes"`
	GrowthBytes int64  `json:"growth_bytes"`
	// Share is GrowthBytes over the growth of the whole profile (0.98 is 98 %).
	Share float64 `json:"share"`
}

// Sentence: "retained +412 MiB at main.(*leakedMemory).retain (98 % of the growth)".
func (s AllocationSite) Sentence() string {
	b := fmtBytes(float64(s.GrowthBytes))
	if s.GrowthBytes >= 0 {
		b = "+" + b
	}
	return fmt.Sprintf("retained %s at %s (%s %% of the growth)", b, s.Function, percent(s.Share))
}

// signedMicros formats µs with a sign and no more precision than reads well.
func signedMicros(us float64) string {
	sign := "+"
	if us < 0 {
		sign, us = "−", -us
	}
	switch {
	case us >= 10:
		return fmt.Sprintf("%s%.0f", sign, us)
	case us >= 1:
		return fmt.Sprintf("%s%.1f", sign, us)
	}
	return fmt.Sprintf("%s%.2f", sign, us)
}

func percent(share float64) string {
	p := share * 100
	if p != 0 && math.Abs(p) < 1 {
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", p), "0"), ".")
	}
	return fmt.Sprintf("%.0f", p)
}
