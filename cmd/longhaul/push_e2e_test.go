package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
)

// startVictoriaMetrics runs Debian's victoria-metrics on a free port of
// 127.0.0.1 with its data in a temporary directory and returns its base URL.
// Queries see samples at once (-search.latencyOffset=0s).
func startVictoriaMetrics(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("victoria-metrics")
	if err != nil {
		t.Skip("victoria-metrics is not installed (Debian package victoria-metrics)")
	}
	for attempt := 1; ; attempt++ {
		addr := "127.0.0.1:" + strconv.Itoa(freeport.ForTest(t))
		cmd := exec.Command(bin, "-storageDataPath="+t.TempDir(), "-httpListenAddr="+addr,
			"-search.latencyOffset=0s", "-retentionPeriod=1", "-loggerLevel=ERROR")
		out := &lockedbuf.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
		base := "http://" + addr
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			select {
			case <-done:
				if attempt < 3 {
					goto retry
				}
				t.Fatalf("victoria-metrics exited:\n%s", out.String())
			default:
			}
			if resp, err := http.Get(base + "/health"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return base
				}
			}
		}
		t.Fatalf("victoria-metrics not healthy after 30 s:\n%s", out.String())
	retry:
	}
}

// queryScalar runs an instant PromQL query whose result is one series and
// returns its value (false when the result is empty).
func queryScalar(t *testing.T, base, q string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query %s: status %s, %v", q, body.Status, err)
	}
	if len(body.Data.Result) == 0 {
		return 0, false
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %v", q, body.Data.Result[0].Value)
	}
	return v, true
}

// TestPushToVictoriaMetrics: a soak run with --push-url pushes its live
// metrics after every window; afterwards the run's request counter in
// VictoriaMetrics, summed over its op and class series, is the stored total.
func TestPushToVictoriaMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end soak with VictoriaMetrics (~20 s)")
	}
	vm := startVictoriaMetrics(t)
	data := t.TempDir()
	r := startSoakRun(t, localScenario(t, 3), "--data", data, "--format", "json", "--ui-addr", "off",
		"--push-url", vm+"/api/v1/import/prometheus")
	if code := r.wait(t); code != exitOK {
		t.Fatalf("longhaul run exit %d, want 0; stderr:\n%s", code, r.stderr.String())
	}
	st := storeOf(t, data)
	run := onlyRun(t, st)
	ws := runWindows(t, st, run.ID)
	var want int64
	for _, w := range ws {
		want += w.Requests
	}
	if want == 0 {
		t.Fatal("the run stored no requests")
	}
	q := fmt.Sprintf(`sum(longhaul_requests_total{run=%q})`, run.ID)
	var got float64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		v, ok := queryScalar(t, vm, q)
		got = v
		if ok && int64(v) == want || time.Now().After(deadline) {
			break
		}
	}
	if int64(got) != want {
		t.Errorf("%s = %v, want the stored total %d", q, got, want)
	}
	series := fmt.Sprintf(`count(longhaul_requests_total{run=%q,scenario="e2e",op="get",class="ok"})`, run.ID)
	if n, ok := queryScalar(t, vm, series); !ok || n != 1 {
		t.Errorf("%s = %v (%v), want one series", series, n, ok)
	}
	if _, ok := queryScalar(t, vm, fmt.Sprintf(`longhaul_window_requests_per_second{run=%q}`, run.ID)); !ok {
		t.Errorf("no longhaul_window_requests_per_second for the run")
	}
}
