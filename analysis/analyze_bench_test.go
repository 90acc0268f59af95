package analysis

import "testing"

// An 8-hour soak at 20 s windows (1,440 windows) with every probe on: the
// analyse step of a nightly run.
func BenchmarkAnalyze1440Windows(b *testing.B) {
	ws := longClean.with("8-hour soak with a leak and no index", func(m *model) {
		m.leakPerReq, m.noIndex, m.rowCostK = 64, true, 4e6
	}).generate(1)
	opts := DefaultOptions()
	b.ReportAllocs()
	for b.Loop() {
		Analyze(ws, opts)
	}
}

// A 90-second soak at 3 s windows, the accuracy bar's run.
func BenchmarkAnalyze30Windows(b *testing.B) {
	ws := demo.with("leak", func(m *model) { m.leakPerReq = 2048 }).generate(1)
	opts := DefaultOptions()
	b.ReportAllocs()
	for b.Loop() {
		Analyze(ws, opts)
	}
}

func BenchmarkGenerate30Windows(b *testing.B) {
	for b.Loop() {
		demo.generate(1)
	}
}
