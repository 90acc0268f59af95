package charts

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// TestRunPageAllocations: a run with a Go target's allocation readings gets
// the allocations chart, their window-table columns, hover data and CSV
// columns; a run without them (run-1 of the shared store) gets none of it.
func TestRunPageAllocations(t *testing.T) {
	// A Go target's allocation readings, from the second window (the first
	// has no previous scrape).
	u := probedRunUI(t, fixture{ID: "run-a", Name: "go-api", Windows: 12, Window: 10 * time.Second}, 1, func(w *window.Window) {
		w.Probes.AllocBytesPerRequest, w.Probes.GCPer1kRequests, w.Probes.GCCPUShare = ptr(4096.0), ptr(12.5), ptr(0.05)
	})

	body := u.mustGet("/runs/run-a", "text/html")
	checkCSPClean(t, "run", body)
	for _, want := range []string{`id="chart-alloc"`, "Allocations per request", "allocated KiB/request",
		`<th class="r">alloc KiB/req</th><th class="r">GC/1k req</th>`, `<td class="r">12.5</td>`, `colspan="16"`} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	var p pointsJSON
	if err := json.Unmarshal([]byte(u.mustGet("/runs/run-a/points", "application/json")), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.AL) != 12 || p.AL[1] != 4 || p.GCR[1] != 12.5 {
		t.Errorf("hover data: al %v, gcr %v; want 12 points, 4 KiB and 12.5 from window 1", p.AL, p.GCR)
	}
	rows, err := csv.NewReader(strings.NewReader(u.mustGet("/runs/run-a/windows.csv", "text/csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0][len(csvHeader):], ","); got != "alloc_bytes_per_request,gc_per_1k_requests,gc_cpu_share" {
		t.Errorf("CSV columns after the fixed ones: %q", got)
	}
	if rows[1][len(csvHeader)] != "" || rows[2][len(csvHeader)] != "4096" {
		t.Errorf("CSV alloc cells: %q, %q; want empty then 4096", rows[1][len(csvHeader)], rows[2][len(csvHeader)])
	}

	plain := newTestUI(t, Options{})
	body = plain.mustGet("/runs/run-1", "text/html")
	if strings.Contains(body, "chart-alloc") || strings.Contains(body, "alloc KiB/req") {
		t.Error("a run without allocation readings shows their chart or columns")
	}
	if js := plain.mustGet("/runs/run-1/points", "application/json"); strings.Contains(js, `"al"`) {
		t.Error("hover data of a run without allocation readings has al")
	}
	if head := strings.SplitN(plain.mustGet("/runs/run-1/windows.csv", "text/csv"), "\n", 2)[0]; head != strings.Join(csvHeader, ",") {
		t.Errorf("CSV header of a run without allocation readings: %s", head)
	}
}
