package charts

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// logTailLines is how many of the target's last lines a run page shows.
const logTailLines = 20

// logView is one kept output of a run's process on its page: a link to the
// whole text and, for the target's latest incarnation, its last lines.
type logView struct {
	Source      string
	Incarnation int
	Size        string
	Truncated   bool
	URL         string
	Tail        []string
}

// keptLogs reads what st kept of run id's processes' output (store.Logs:
// at each environment's teardown). A store without logs, or one that fails
// to read them, gives none: the page does not depend on them.
func keptLogs(ctx context.Context, st Reader, id string) []store.TargetLog {
	lr, ok := st.(store.Logs)
	if !ok {
		return nil
	}
	ls, err := lr.Logs(ctx, id, true)
	if err != nil {
		return nil
	}
	return ls
}

// logViews lists the kept logs, the target's last lines shown.
func logViews(ls []store.TargetLog, base string) []logView {
	out := make([]logView, len(ls))
	tail := -1 // the target's latest incarnation
	for i, l := range ls {
		out[i] = logView{Source: l.Source, Incarnation: l.Incarnation, Size: fmtBytes(float64(l.Bytes)), Truncated: l.Truncated,
			URL: base + "/logs/" + url.PathEscape(l.Source) + "?incarnation=" + strconv.Itoa(l.Incarnation)}
		if l.Source == "target" && (tail < 0 || l.Incarnation > ls[tail].Incarnation) {
			tail = i
		}
	}
	if tail >= 0 {
		out[tail].Tail = lastLines(ls[tail].Data, logTailLines)
	}
	return out
}

// windowLogURL is the address of what the target printed during window
// index (`longhaul logs RUN --window N`).
func windowLogURL(base string, index int) string {
	return base + "/logs/target?window=" + strconv.Itoa(index)
}

// addWindowLines shows under each crash finding what the target printed
// during its window, when the kept output says.
func addWindowLines(fs []findingView, ls []store.TargetLog, base string) {
	for i := range fs {
		f := &fs[i]
		if f.Kind != analysis.KindCrash {
			continue
		}
		if lines, ok := report.WindowLines(ls, "target", f.Finding.Evidence.FirstWindow); ok {
			f.WindowLines, f.HasWindowLines = lastOf(lines, crashWindowLines), true
			f.WindowLinesURL = windowLogURL(base, f.Finding.Evidence.FirstWindow)
		}
	}
}

// linkWindowLines links each row of the window table whose window's
// lines were kept to them.
func linkWindowLines(t *tableView, ls []store.TargetLog, base string) {
	known := map[int]bool{}
	for _, l := range ls {
		if l.Source != "target" {
			continue
		}
		for _, w := range l.Windows {
			known[w.Index] = true
		}
	}
	for i := range t.Rows {
		r := &t.Rows[i]
		if n, err := strconv.Atoi(r.Windows); err == nil && known[n] {
			r.LogURL = windowLogURL(base, n)
		}
	}
}

// crashWindowLines is how many of the crash window's lines its finding
// shows (the link has them all).
const crashWindowLines = 50

func lastOf(lines []string, n int) []string {
	return lines[max(0, len(lines)-n):]
}

// lastLines returns the last n lines of gzipped text (nil when it cannot
// be read).
func lastLines(gz []byte, n int) []string {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil
	}
	var ring []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, sc.Text())
	}
	return ring
}

// runLog serves the whole kept output of one of a run's processes as text
// (?incarnation=N: of that incarnation only; ?window=N: what it printed
// during that window), as `longhaul logs` prints it.
func (s *Server) runLog(w http.ResponseWriter, r *http.Request) error {
	lr, ok := s.opts.Store.(store.Logs)
	if !ok {
		return store.ErrNotFound
	}
	inc, err := intParam(r, "incarnation")
	if err != nil {
		return err
	}
	win, err := intParam(r, "window")
	if err != nil {
		return err
	}
	source := r.PathValue("source")
	if source != "target" && source != "database" {
		return fmt.Errorf("%w: %q: a run keeps the output of its target and its database", errBadRequest, source)
	}
	var buf bytes.Buffer
	err = report.WriteLogs(r.Context(), lr, r.PathValue("id"), report.LogQuery{Source: source, Incarnation: inc, OneWindow: r.URL.Query().Has("window"), Window: win}, &buf)
	if errors.Is(err, report.ErrNoLogs) {
		return fmt.Errorf("%w: %v", store.ErrNotFound, err)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err = io.Copy(w, &buf)
	return err
}
