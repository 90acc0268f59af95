package analysis

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestDebugBlame(t *testing.T) {
	m := demo.with("x", func(m *model) { m.noIndex = true })
	for _, seed := range []uint64{208, 488} {
		ws := m.generate(seed)
		var per, rows, lx, ly []float64
		for _, w := range ws[10:] {
			it := w.Probes.Database.Tables[0]
			p := float64(it.SeqTuplesRead+it.IndexTuplesFetched) / float64(w.Requests)
			per = append(per, p)
			rows = append(rows, float64(it.LiveRows))
			lx = append(lx, math.Log(float64(it.LiveRows)))
			ly = append(ly, math.Log(p))
			fmt.Printf("%d rows=%d per=%.0f rps=%.0f\n", w.Index, it.LiveRows, p, w.RPS)
		}
		l, _ := TheilSen(lx, ly)
		fmt.Println(seed, "rho", Spearman(per, rows), "el", l.Slope)
		res := Analyze(ws, Options{Warmup: 30 * time.Second})
		fmt.Println(describe(res))
	}
}
