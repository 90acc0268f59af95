package window

import "testing"

func TestCurve(t *testing.T) {
	h := NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		Record(h, i*1000) // 1 ms .. 1 s, uniform
	}
	c := Curve(h)
	if len(c) < 10 {
		t.Fatalf("only %d points", len(c))
	}
	last := c[len(c)-1]
	if last.Percentile != 100 || last.LatencyMs < 999 || last.LatencyMs > 1001 {
		t.Errorf("last point %+v, want the max at 100", last)
	}
	for i := 1; i < len(c); i++ {
		if c[i].Percentile <= c[i-1].Percentile || c[i].LatencyMs < c[i-1].LatencyMs {
			t.Fatalf("not monotone at %d: %+v then %+v", i, c[i-1], c[i])
		}
		// 1,000 requests resolve the 99.9th, not the 99.99th.
		if c[i].Percentile > 99.9 && c[i].Percentile < 100 {
			t.Errorf("point %+v beyond what 1,000 requests resolve", c[i])
		}
	}
	for _, p := range c {
		if p.Percentile == 50 && (p.LatencyMs < 499 || p.LatencyMs > 501) {
			t.Errorf("p50 %v, want 500 ms", p.LatencyMs)
		}
	}
	if Curve(NewHistogram()) != nil {
		t.Error("an empty histogram has a curve")
	}
}
