package charts

import (
	"encoding/csv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// TestRunPageThreads: a run with the thread probe's readings gets the
// busiest-thread column in its window table and the readings in its CSV; a
// run without them gets neither.
func TestRunPageThreads(t *testing.T) {
	u := probedRunUI(t, fixture{ID: "run-t", Name: "node-api", Windows: 12, Window: 10 * time.Second}, 0, func(w *window.Window) {
		w.Probes.HottestThread, w.Probes.HottestThreadMain = "node", true
		w.Probes.HottestThreadCores, w.Probes.HottestThreadBusy = ptr(0.61), ptr(0.99)
	})
	body := u.mustGet("/runs/run-t", "text/html")
	checkCSPClean(t, "run", body)
	for _, want := range []string{">busiest thread</th>", `<td class="r">node 0.99</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(u.mustGet("/runs/run-t/windows.csv", "text/csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(rows[0], "hottest_thread_busy"); i < 0 || rows[1][i] != "0.99" {
		t.Errorf("CSV: header %v, first row %v; want hottest_thread_busy 0.99", rows[0], rows[1])
	}

	plain := newTestUI(t, Options{})
	if body := plain.mustGet("/runs/run-1", "text/html"); strings.Contains(body, "busiest thread") {
		t.Error("a run without thread readings shows the busiest-thread column")
	}
}
