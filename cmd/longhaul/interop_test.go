package main

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeK6 writes 30 s of k6 JSON output (k6's documented line format,
// written here): 20 requests a second over two ops, one in ten a 503, with a
// corrupt line in the middle; gzipped when the name ends in .gz.
func writeK6(t *testing.T, name string) string {
	t.Helper()
	var b bytes.Buffer
	t0 := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	b.WriteString(`{"type":"Metric","data":{"type":"counter","contains":"default","tainted":null,"thresholds":[],"submetrics":null},"metric":"http_reqs"}` + "\n")
	for i := range 600 {
		at := t0.Add(time.Duration(i) * 50 * time.Millisecond).Format(time.RFC3339Nano)
		op, status, failed := "list", "200", 0
		if i%2 == 1 {
			op = "get"
		}
		if i%10 == 0 {
			status, failed = "503", 1
		}
		tags := fmt.Sprintf(`{"name":%q,"method":"GET","url":"http://127.0.0.1:8080/items","status":%q}`, op, status)
		for _, m := range []struct {
			metric string
			value  float64
		}{{"http_reqs", 1}, {"http_req_duration", float64(2 + i%7)}, {"http_req_failed", float64(failed)}} {
			fmt.Fprintf(&b, `{"type":"Point","data":{"time":%q,"value":%v,"tags":%s},"metric":%q}`+"\n", at, m.value, tags, m.metric)
		}
		if i == 300 {
			b.WriteString("{\"type\":\"Point\",\"data\":{\"time\":\n")
		}
	}
	path := filepath.Join(t.TempDir(), name)
	data := b.Bytes()
	if strings.HasSuffix(name, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		data = z.Bytes()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportExport: import k6 output, see it in runs/report, export it in
// every format; bad input is exit 2 with one line.
func TestImportExport(t *testing.T) {
	data := t.TempDir()
	file := writeK6(t, "checkout.json.gz")
	r := runLonghaul(t, runOpts{}, "import", "k6", file, "--window", "5s", "--data", data)
	if r.code != exitOK {
		t.Fatalf("import exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"imported run ", "(checkout)", "6 windows of 5s, 1800 points, 600 requests", "1 bad lines left out:\n  line 905: not JSON", "not in the file: vus, dropped_iterations", "missing_evidence"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("import output lacks %q:\n%s", want, r.stdout)
		}
	}
	id := strings.Fields(strings.TrimPrefix(r.stdout, "imported run "))[0]

	rep := runLonghaul(t, runOpts{}, "report", id, "--data", data)
	if rep.code != exitOK || !strings.Contains(rep.stdout, "(imported)") || !strings.Contains(rep.stdout, "status:  completed: imported from k6 output checkout.json.gz: 1800 points; 1 bad lines") {
		t.Errorf("report exit %d:\n%s%s", rep.code, rep.stdout, rep.stderr)
	}

	c := runLonghaul(t, runOpts{}, "export", id, "--data", data)
	rows, err := csv.NewReader(strings.NewReader(c.stdout)).ReadAll()
	if c.code != exitOK || err != nil || len(rows) != 7 {
		t.Fatalf("export csv exit %d, %d rows (%v):\n%s%s", c.code, len(rows), err, c.stdout, c.stderr)
	}
	if rows[1][5] != "100" || rows[1][8] != "10" {
		t.Errorf("first window row %v: want 100 requests, 10 5xx", rows[1])
	}
	js := runLonghaul(t, runOpts{}, "export", id, "--format", "json", "--op", "get", "--data", data)
	if lines := strings.Split(strings.TrimSpace(js.stdout), "\n"); js.code != exitOK || len(lines) != 6 || !strings.Contains(lines[0], `"requests":50,`) {
		t.Errorf("export json --op get exit %d:\n%s%s", js.code, js.stdout, js.stderr)
	}
	bs := runLonghaul(t, runOpts{}, "export", id, "--format", "benchstat", "--data", data)
	if bs.code != exitOK || strings.Count(bs.stdout, "BenchmarkSoak/op=all ") != 6 {
		t.Errorf("export benchstat exit %d:\n%s%s", bs.code, bs.stdout, bs.stderr)
	}

	garbage := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(garbage, []byte("hello\nworld\n"), 0o644)
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"import", "k6", filepath.Join(data, "nope.json")}, "no such file"},
		{[]string{"import", "k6", garbage}, "no usable k6 points"},
		{[]string{"import", "k6", file, "--window", "0s"}, "--window"},
		{[]string{"export", "no-such-run"}, "no run or comparison no-such-run"},
		{[]string{"export", id, "--format", "xml"}, "--format"},
		{[]string{"export", id, "--op", "nope"}, "no such op (ops: get, list)"},
		{[]string{"export", id, "--side", "A"}, "--side is for a comparison"},
	} {
		r := runLonghaul(t, runOpts{}, append(tt.args, "--data", data)...)
		if r.code != exitBadInput || !strings.Contains(r.stderr, tt.msg) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tt.args, r.code, r.stderr, tt.msg)
		}
	}
	runs := runLonghaul(t, runOpts{}, "runs", "--data", data)
	if strings.Count(runs.stdout, "\n") != 2 || !strings.Contains(runs.stdout, " imported ") {
		t.Errorf("runs: want the one imported run (a failed import stores nothing):\n%s", runs.stdout)
	}
}
