// Command interop measures `longhaul import k6` on a large file: it writes
// k6 JSON output of N points (k6's documented line format: 3 points per
// request, 2,000 requests a second over four ops, a vus reading now and then),
// then imports it into a fresh SQLite store in a child process and reports
// the child's wall time, CPU time and peak RSS. Several sizes side by side
// show whether memory stays flat as the input grows.
//
//	go run ./bench/interop -points 100000,1000000 [-gzip]
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/longhaul-dev/longhaul/interop"
	"github.com/longhaul-dev/longhaul/store"
)

func main() {
	points := flag.String("points", "100000,1000000", "comma-separated sizes, in points")
	gz := flag.Bool("gzip", false, "write the files gzipped")
	child := flag.String("import", "", "(internal) import this file and exit")
	rounds := flag.Int("rounds", 2, "imports per size, interleaved")
	flag.Parse()
	if *child != "" {
		importOnce(*child)
		return
	}
	dir, err := os.MkdirTemp("", "longhaul-bench-interop-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var files []string
	for _, s := range strings.Split(*points, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			log.Fatal(err)
		}
		name := filepath.Join(dir, fmt.Sprintf("k6-%d.json", n))
		if *gz {
			name += ".gz"
		}
		size, err := writeFile(name, n, *gz)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("wrote %s: %d points, %.1f MB\n", filepath.Base(name), n, float64(size)/1e6)
		files = append(files, name)
	}
	exe, _ := os.Executable()
	fmt.Println("file\tround\twall_s\tcpu_s\tpeak_rss_MB\tresult")
	for r := 1; r <= *rounds; r++ {
		for _, f := range files {
			start := time.Now()
			cmd := exec.Command(exe, "-import", f)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			wall := time.Since(start)
			if err != nil {
				log.Fatalf("import %s: %v", f, err)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			fmt.Printf("%s\t%d\t%.2f\t%.2f\t%.1f\t%s", filepath.Base(f), r, wall.Seconds(), cpu.Seconds(), float64(ru.Maxrss)/1024, out)
		}
	}
}

// importOnce imports file into a fresh store and prints one line.
func importOnce(file string) {
	dir, err := os.MkdirTemp("", "longhaul-bench-store-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "longhaul.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	res, err := interop.ImportK6(ctx, st, file, interop.ImportOptions{})
	if err != nil {
		log.Fatal(err)
	}
	el := time.Since(start)
	fmt.Printf("%d windows, %d points in %.2f s (%.0f points/s)\n", res.Stats.Windows, res.Stats.Points, el.Seconds(), float64(res.Stats.Points)/el.Seconds())
}

// writeFile writes n points of k6 output to name.
func writeFile(name string, n int, gz bool) (int64, error) {
	f, err := os.Create(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(f)
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	t0 := time.Date(2026, 5, 9, 14, 0, 0, 0, time.UTC)
	ops := []string{"list", "get", "create", "update"}
	fmt.Fprintln(bw, `{"type":"Metric","data":{"type":"counter","contains":"default","tainted":null,"thresholds":[],"submetrics":null},"metric":"http_reqs"}`)
	fmt.Fprintln(bw, `{"type":"Metric","data":{"type":"trend","contains":"time","tainted":null,"thresholds":[],"submetrics":null},"metric":"http_req_duration"}`)
	fmt.Fprintln(bw, `{"type":"Metric","data":{"type":"rate","contains":"default","tainted":null,"thresholds":[],"submetrics":null},"metric":"http_req_failed"}`)
	for i := 0; i < n/3; i++ {
		at := t0.Add(time.Duration(i) * 500 * time.Microsecond).Format(time.RFC3339Nano)
		status, failed := "200", 0
		if i%100 == 0 {
			status, failed = "503", 1
		}
		tags := fmt.Sprintf(`{"expected_response":"true","group":"","method":"GET","name":%q,"proto":"HTTP/1.1","scenario":"default","status":%q,"url":"http://127.0.0.1:8080/items"}`, ops[i%4], status)
		fmt.Fprintf(bw, `{"type":"Point","data":{"time":%q,"value":1,"tags":%s},"metric":"http_reqs"}`+"\n", at, tags)
		fmt.Fprintf(bw, `{"type":"Point","data":{"time":%q,"value":%d.%03d,"tags":%s},"metric":"http_req_duration"}`+"\n", at, 1+i%40, i%1000, tags)
		fmt.Fprintf(bw, `{"type":"Point","data":{"time":%q,"value":%d,"tags":%s},"metric":"http_req_failed"}`+"\n", at, failed, tags)
		if i%2000 == 0 {
			fmt.Fprintf(bw, `{"type":"Point","data":{"time":%q,"value":16,"tags":null},"metric":"vus"}`+"\n", at)
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return 0, err
		}
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
