package analysis

import "testing"

func TestProfileSentences(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{FunctionCost{Function: "main.spin", AUsPerRequest: 0, BUsPerRequest: 58.2, DeltaUsPerRequest: 58.2, AShare: 0, BShare: 0.61}.Sentence("B"),
			"B spends +58 µs/request more in main.spin (0 → 61 % of the target's CPU)"},
		{FunctionCost{Function: "encoding/json.Marshal", AUsPerRequest: 4, BUsPerRequest: 1.5, DeltaUsPerRequest: -2.5, AShare: 0.12, BShare: 0.004}.Sentence("B"),
			"B spends 2.5 µs/request less in encoding/json.Marshal (12 → 0.4 % of the target's CPU)"},
		{AllocationSite{Function: "main.(*leakedMemory).retain", GrowthBytes: 412 << 20, Share: 0.981}.Sentence(),
			"retained +412 MiB at main.(*leakedMemory).retain (98 % of the growth)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %q\nwant %q", tt.got, tt.want)
		}
	}
}
